package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWorkerCommandReadsOutputs: a command step run by a `cadence worker`
// in another checkout, as on another machine, finds in CADENCE_OUTPUTS_DIR
// the committed output of the step it needs, as one run by the run's own
// process does (SPEC 13, 16.2). As in TestWorkerRunsAStepOfTheGraph, a
// and b wait for each other to have started and the run's process runs
// one step at a time, so one of them runs in the worker's checkout.
func TestWorkerCommandReadsOutputs(t *testing.T) {
	shared := t.TempDir()
	wf := `version: 1
max_parallel_steps: 1
agents:
  gen: {preset: exec, command: [sh, gen.sh]}
defaults: {agent: gen, retry: {max_attempts: 1}}
steps:
  - {id: gen, prompt: gen}
  - {id: a, needs: [gen], run: [sh, wait.sh, ` + shared + `/a, ` + shared + `/b]}
  - {id: b, needs: [gen], run: [sh, wait.sh, ` + shared + `/b, ` + shared + `/a]}
`
	wait := `# wait.sh ME OTHER: say where ME runs and what it read, then wait up to 60 s for OTHER to have started.
echo "$CADENCE_PROJECT_DIR" > "$1.ran"
cat "$CADENCE_OUTPUTS_DIR/gen.json" > "$1.gen"
touch "$1.started"
i=0
while [ ! -e "$2.started" ]; do
  i=$((i+1))
  [ "$i" -gt 600 ] && { echo "$2 never started" >&2; exit 1; }
  sleep 0.1
done
`
	gen := "cat > /dev/null\necho '{\"n\": 7}'\n"
	s := &sharedRun{t: t, ttl: leaseTTL, state: pg.NewDatabase(t)}
	for range 2 {
		p := newProject(t, wf, map[string]string{"wait.sh": wait, "gen.sh": gen, ".cadence/project": sharedProjectID})
		p.state = s.state
		s.checkouts = append(s.checkouts, p)
	}
	worker := s.worker(1)
	run := s.start(0, "run")
	run.wait(t).exits(t, 0)
	_ = worker.cmd.Process.Signal(syscall.SIGTERM)
	worker.wait(t).exits(t, 3)

	ran := map[string]string{}
	for _, id := range []string{"a", "b"} {
		b, err := os.ReadFile(filepath.Join(shared, id+".ran"))
		if err != nil {
			t.Fatalf("step %s: %v", id, err)
		}
		ran[id] = strings.TrimSpace(string(b))
		got, err := os.ReadFile(filepath.Join(shared, id+".gen"))
		if err != nil {
			t.Fatalf("step %s: %v", id, err)
		}
		if string(got) != "{\"n\":7}\n" {
			t.Errorf("step %s, run in %s, read %q from CADENCE_OUTPUTS_DIR/gen.json, want gen's output {\"n\":7}", id, ran[id], got)
		}
	}
	if ran["a"] == ran["b"] {
		t.Fatalf("a and b both ran in %s: the worker ran no command step", ran["a"])
	}
}
