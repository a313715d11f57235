package workflow

import (
	"strings"
	"testing"
)

// TestCheckRunnable: a graph of agent and command steps with needs, when
// and allow_failure runs, and so do loops and approval gates; the
// section 17 keys not acted on yet are named.
func TestCheckRunnable(t *testing.T) {
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
`, nil},
		{"notify targets run", `  - {id: a, prompt: a}
notify:
  - {webhook: "https://hooks.example.com/x", on: [run_failed]}
  - {command: [./page-me.sh], on: [auth_needed, long_wait], notify_after: 1m}
`, nil},
		{"section 17 keys not acted on", `  - {id: a, prompt: a, fallback_after: 10m}
`, []string{
			"wf.yaml:1:1: steps[a].fallback_after: this version of cadence does not act on it yet (fallbacks and notifications come with SPEC section 17)",
		}},
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
