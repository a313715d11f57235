package orchestrator

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/history"
)

// TestGraphScheduler runs small graphs of command steps for real and
// checks how each step ended and how the run did: the default order, a
// skip and its propagation, a when of its own deciding despite a skipped
// need, allow_failure, fail-fast (no new step starts after a failure), and
// a when that cannot be evaluated.
func TestGraphScheduler(t *testing.T) {
	for _, tt := range []struct {
		name   string
		steps  string
		status Status
		want   map[string]string // step → status; "" means no row change from pending
		class  map[string]string // step → class of its last attempt
	}{
		{
			name:   "a chain runs in file order",
			steps:  "  - {id: a, run: [\"true\"]}\n  - {id: b, run: [\"true\"]}\n  - {id: c, run: [\"true\"]}\n",
			status: StatusSucceeded,
			want:   map[string]string{"a": "succeeded", "b": "succeeded", "c": "succeeded"},
		},
		{
			name: "a false when skips the step and those that need it",
			steps: `  - {id: a, run: ["true"]}
  - {id: b, needs: [a], when: 'steps.a.status == "failed"', run: ["true"]}
  - {id: c, needs: [b], run: ["true"]}
  - {id: d, needs: [c], when: 'steps.c.status == "skipped"', run: ["true"]}
`,
			status: StatusSucceeded,
			want:   map[string]string{"a": "succeeded", "b": "skipped", "c": "skipped", "d": "succeeded"},
		},
		{
			name: "allow_failure lets the run go on and its dependents read the status",
			steps: `  - {id: a, run: ["false"], allow_failure: true}
  - {id: b, needs: [a], when: 'steps.a.status == "failed"', run: ["true"]}
`,
			status: StatusSucceeded,
			want:   map[string]string{"a": "failed", "b": "succeeded"},
			class:  map[string]string{"a": "exit_nonzero"},
		},
		{
			name: "a failure starts no new step and fails the run",
			steps: `  - {id: a, run: ["false"]}
  - {id: b, needs: [], run: ["true"]}
  - {id: c, needs: [a, b], run: ["true"]}
`,
			status: StatusFailed,
			want:   map[string]string{"a": "failed", "b": "succeeded", "c": "pending"},
		},
		{
			name: "a when reading a field the output lacks fails with class expression",
			steps: `  - {id: a, run: ["true"]}
  - {id: b, needs: [a], when: 'steps.a.output.missing == 1', run: ["true"]}
`,
			status: StatusFailed,
			want:   map[string]string{"a": "succeeded", "b": "failed"},
			class:  map[string]string{"b": "expression"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeProject(t, map[string]string{".cadence/workflow.yaml": "version: 1\ndefaults: {retry: {max_attempts: 1}}\nsteps:\n" + tt.steps})
			res, err := Run(context.Background(), Options{Dir: dir, SelfExe: selfExe(t), Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status {
				t.Fatalf("run ended %v (%s), want %v", res.Status, res.Message, tt.status)
			}
			rep, err := history.Inspect(context.Background(), dir, "", "", false)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range rep.Steps {
				got = append(got, s.ID+"="+string(s.Status))
				if want := tt.want[s.ID]; string(s.Status) != want {
					t.Errorf("step %s %s, want %s", s.ID, s.Status, want)
				}
				if want, ok := tt.class[s.ID]; ok && (len(s.Attempts) == 0 || s.Attempts[len(s.Attempts)-1].Class != want) {
					t.Errorf("step %s: attempts %+v, want the last of class %s", s.ID, s.Attempts, want)
				}
			}
			t.Log(strings.Join(got, " "))
		})
	}
}
