package workflow

import (
	"fmt"
	"strings"
	"testing"
)

// TestSilentSkips: the gates, the loops holding a gate and the steps
// after a gate that a false when before them would skip, though they have
// no when of their own, are listed with the steps whose skip reaches
// them; a when of their own (or a gate's own when) settles it.
func TestSilentSkips(t *testing.T) {
	head := "version: 1\nagents: {x: {preset: claude}}\ndefaults: {agent: x}\nsteps:\n"
	tests := []struct {
		name, steps string
		want        []string // "STEP because B1,B2 after G1" (after only for steps after a gate)
	}{
		{"a gate after a when", `
  - {id: notes, prompt: n, when: 'true'}
  - {id: gate, needs: [notes], approval: {prompt: ok?}}
  - {id: ship, needs: [gate], run: ["true"]}
`, []string{"gate because notes", "ship because notes after gate"}},
		{"through a step without a when", `
  - {id: notes, prompt: n, when: 'true'}
  - {id: mid, needs: [notes], prompt: m}
  - {id: gate, needs: [mid], approval: {prompt: ok?}}
`, []string{"gate because notes"}},
		{"a gate with a when of its own", `
  - {id: notes, prompt: n, when: 'true'}
  - {id: gate, needs: [notes], when: 'true', approval: {prompt: ok?}}
  - {id: ship, needs: [gate], run: ["true"]}
`, nil},
		{"a step after a gate that needs a when", `
  - {id: gate, needs: [], approval: {prompt: ok?}}
  - {id: notes, needs: [], prompt: n, when: 'true'}
  - {id: ship, needs: [gate, notes], run: ["true"]}
`, []string{"ship because notes after gate"}},
		{"no gate", `
  - {id: notes, prompt: n, when: 'true'}
  - {id: ship, needs: [notes], run: ["true"]}
`, nil},
		{"a loop holding a gate, and a gate inside a loop", `
  - {id: notes, prompt: n, when: 'true'}
  - id: rounds
    needs: [notes]
    loop:
      max_iterations: 2
      until: 'true'
      steps:
        - {id: code, prompt: c, when: 'true'}
        - {id: review, needs: [code], approval: {prompt: ok?}}
`, []string{"rounds because notes", "review because code"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, errs := build([]byte(head+strings.TrimPrefix(tt.steps, "\n")), "wf.yaml", "")
			if len(errs) > 0 {
				t.Fatalf("load: %v", errs)
			}
			var got []string
			for _, sk := range w.SilentSkips() {
				s := fmt.Sprintf("%s because %s", sk.Step.ID, strings.Join(sk.Because, ","))
				if len(sk.Gates) > 0 {
					s += " after " + strings.Join(sk.Gates, ",")
				}
				if sk.Line == 0 || sk.Key == "" {
					t.Errorf("%s: no position (line %d, key %q)", sk.Step.ID, sk.Line, sk.Key)
				}
				got = append(got, s)
			}
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("SilentSkips = %q, want %q", got, tt.want)
			}
		})
	}
}
