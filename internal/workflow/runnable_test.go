package workflow

import (
	"strings"
	"testing"
)

// TestCheckRunnable: a graph of agent and command steps with needs, when
// and allow_failure runs; a loop and an approval gate are named at their
// lines.
func TestCheckRunnable(t *testing.T) {
	const tail = ": this version of cadence does not run loops and approval gates yet"
	tests := []struct {
		name, steps string
		want        []string
	}{
		{"a graph", `  - {id: a, prompt: a, needs: [b]}
  - {id: b, prompt: b, needs: []}
  - {id: c, run: [make]}
  - {id: d, prompt: d, when: "true", allow_failure: true}
`, nil},
		{"loops and gates", `  - {id: a, prompt: a}
  - {id: e, approval: {prompt: ok?}}
  - {id: f, loop: {max_iterations: 1, until: "true", steps: [{id: g, prompt: g}]}}
`, []string{
			"wf.yaml:7:6: steps[1]: step e is an approval gate" + tail,
			"wf.yaml:8:6: steps[2]: step f is a loop" + tail,
		}},
		{"a fallback runs", `  - {id: a, prompt: a, fallback_after: 10m}
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nagents: {x: {preset: claude}}\ndefaults: {agent: x}\ninputs: {}\nsteps:\n" + tt.steps
			w, errs := build([]byte(src), "wf.yaml", "")
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			err := CheckRunnable(w)
			if tt.want == nil {
				if err != nil {
					t.Errorf("CheckRunnable = %v", err)
				}
				return
			}
			if err == nil || err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("CheckRunnable:\n%v\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}
