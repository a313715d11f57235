package history

import (
	"strings"
	"testing"
)

// TestNestLoops: rows in the order the state lists them (by position) are
// nested under their loops at any depth, iterations in number order; a row
// whose parent is missing stays at the top level rather than vanish.
func TestNestLoops(t *testing.T) {
	// show renders steps as "id[iteration:step,step|…]".
	var show func([]StepReport) string
	show = func(steps []StepReport) string {
		var parts []string
		for _, s := range steps {
			p := s.ID
			if len(s.Iterations) > 0 {
				var its []string
				for _, it := range s.Iterations {
					its = append(its, strings.TrimPrefix(it.ID, s.ID+"/")+":"+show(it.Steps))
				}
				p += "[" + strings.Join(its, "|") + "]"
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, ",")
	}
	for _, tc := range []struct {
		name string
		rows []string
		want string
	}{
		{"no loop", []string{"a", "b"}, "a,b"},
		{"one loop", []string{"plan", "implement", "ship", "implement/1", "implement/1/code", "implement/2", "implement/2/code"},
			"plan,implement[1:implement/1/code|2:implement/2/code],ship"},
		{"nested loops", []string{"outer", "outer/1", "outer/1/inner", "outer/1/inner/1", "outer/1/inner/1/code",
			"outer/1/inner/2", "outer/1/inner/2/code", "outer/2", "outer/2/inner", "outer/2/inner/1", "outer/2/inner/1/code"},
			"outer[1:outer/1/inner[1:outer/1/inner/1/code|2:outer/1/inner/2/code]|2:outer/2/inner[1:outer/2/inner/1/code]]"},
		{"iterations past 9 in number order", []string{"l", "l/10", "l/10/s", "l/9", "l/9/s"}, "l[9:l/9/s|10:l/10/s]"},
		{"an orphan stays visible", []string{"a", "gone/1/code"}, "a,gone/1/code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flat := make([]StepReport, len(tc.rows))
			for i, id := range tc.rows {
				flat[i] = StepReport{ID: id}
			}
			if got := show(nestLoops(flat)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
