package workflow

import (
	"strings"
	"testing"
)

// TestCheckSequential: a workflow of agent steps in file order (needs
// written or not) passes; each construct a sequential run loop cannot carry
// out is named at its line.
func TestCheckSequential(t *testing.T) {
	const tail = ": this version of cadence runs agent steps only, one after another in file order"
	tests := []struct {
		name, steps string
		want        []string
	}{
		{"agent steps in order", "  - {id: a, prompt: a}\n  - {id: b, prompt: b, needs: [a]}\n  - {id: c, prompt: c, needs: [a, b]}\n", nil},
		{"graph constructs", `  - {id: a, prompt: a, needs: [b]}
  - {id: b, prompt: b, needs: []}
  - {id: c, run: [make]}
  - {id: d, prompt: d, when: "true", allow_failure: true}
  - {id: e, approval: {prompt: ok?}}
  - {id: f, loop: {max_iterations: 1, until: "true", steps: [{id: g, prompt: g}]}}
`, []string{
			"wf.yaml:6:6: steps[0]: step a needs b, written after it" + tail,
			"wf.yaml:8:6: steps[2]: step c is a command step (run:)" + tail,
			"wf.yaml:9:6: steps[3]: step d has a condition (when)" + tail,
			"wf.yaml:9:6: steps[3]: step d may fail (allow_failure)" + tail,
			"wf.yaml:10:6: steps[4]: step e is an approval gate" + tail,
			"wf.yaml:11:6: steps[5]: step f is a loop" + tail,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nagents: {x: {preset: claude}}\ndefaults: {agent: x}\ninputs: {}\nsteps:\n" + tt.steps
			w, errs := build([]byte(src), "wf.yaml", "")
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			err := CheckSequential(w)
			if tt.want == nil {
				if err != nil {
					t.Errorf("CheckSequential = %v", err)
				}
				return
			}
			if err == nil || err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("CheckSequential:\n%v\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
	w, errs := build([]byte("version: 1\nagents: {x: {preset: claude}}\ninputs:\n  issue: {type: string}\nsteps: [{id: a, agent: x, prompt: a}]\n"), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := CheckSequential(w); err == nil || err.Error() != "wf.yaml:4:3: inputs.issue: input issue"+tail {
		t.Errorf("CheckSequential = %v", err)
	}
}
