package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startCadence starts cadence with args in the project and returns a
// function that waits for it to end.
func (p *project) startCadence(t *testing.T, args ...string) (pid int, wait func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := p.command(ctx, nil, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var (
		done bool
		res  result
	)
	wait = func() result {
		t.Helper()
		if !done {
			err := cmd.Wait()
			cancel()
			res, done = p.finish(cmd, err, out.String(), errb.String()), true
		}
		return res
	}
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			wait()
		}
	})
	return cmd.Process.Pid, wait
}

// backoffPending reports whether step's first attempt has failed and its
// retry waits: the state a second process must not run into.
func (p *project) backoffPending(stepID string) bool {
	if len(p.executions(stepID)) != 1 {
		return false
	}
	r := p.cadence(nil, "inspect", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"next_retry_at"`) {
		return false
	}
	s := step(p.inspect(), stepID)
	return len(s.Attempts) == 1 && s.Attempts[0].Status == "failed" && s.NextRetryAt != nil
}

// TestG7DeletedLockFileKeepsOneProcess is issue 19's scenario: attempt 1
// failed, a backoff pending, the lock file deleted and `cadence resume`
// started. The run is held in the state as well (its holder row, checked
// live by pid and start time), so the second process exits 4 naming the
// first; the first, finding its lock file gone, stops with exit 3 before
// it runs anything more; a later resume ends the run with exact counts.
func TestG7DeletedLockFileKeepsOneProcess(t *testing.T) {
	// A 3 s backoff (2 s in the issue) leaves the second process time to
	// start under the race detector before the first commits again.
	p := newProject(t, simWorkflow(`{max_attempts: 5, backoff: fixed, initial: 3s, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
  - {id: two, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
  two: [{answer: '{"ok": true}'}]
`})
	pid, waitFirst := p.startCadence(t, "run")
	waitFor(t, "attempt 1 to fail and its backoff to be committed", func() bool { return p.backoffPending("one") })
	if err := os.Remove(filepath.Join(p.dir, ".cadence", "lock")); err != nil {
		t.Fatal(err)
	}
	second := p.cadence(nil, "resume")
	second.exits(t, 4)
	if want := "pid " + itoa(pid); !strings.Contains(second.stderr, want) {
		t.Errorf("the second process does not name the holder (%s):\n%s", want, second.stderr)
	}
	first := waitFirst()
	first.exits(t, 3)
	if !strings.Contains(first.stderr, filepath.Join(".cadence", "lock")) || !strings.Contains(first.stderr, "lock file was deleted or replaced") {
		t.Errorf("the first process does not say its lock file is gone:\n%s", first.stderr)
	}
	if n := len(p.executions("one")); n != 1 {
		t.Fatalf("step one executed %d times while the lock file was gone, want 1", n)
	}
	p.cadence(nil, "resume").exits(t, 0)
	if n, m := len(p.executions("one")), len(p.executions("two")); n != 2 || m != 1 {
		t.Fatalf("executions: one %d, two %d; want 2 and 1", n, m)
	}
	rep := p.inspect()
	if rep.Run.Status != "succeeded" {
		t.Fatalf("run %s, want succeeded", rep.Run.Status)
	}
	one := step(rep, "one")
	if one.AttemptsUsed != 2 || len(one.Attempts) != 2 || one.Attempts[0].Status != "failed" || one.Attempts[1].Status != "succeeded" {
		t.Fatalf("step one: %d used, attempts %+v; want failed then succeeded", one.AttemptsUsed, one.Attempts)
	}
}

// TestStateFileGoneStopsTheRun deletes (or replaces) state.db while a
// step waits out its backoff or runs its agent: cadence must stop with
// exit 3 and a message naming the file, and run no later step, instead of
// committing to a file nobody will read and reporting success.
func TestStateFileGoneStopsTheRun(t *testing.T) {
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	replace := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".new", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	// The backoff and the agent take a minute: cadence must stop at once,
	// not at its next commit.
	for _, tc := range []struct {
		name     string
		scenario string
		when     func(p *project) bool
		do       func(t *testing.T, path string)
	}{
		{"deleted in backoff", "[{answer: '{\"ok\": \"no\"}'}, {answer: '{\"ok\": true}'}]",
			func(p *project) bool { return p.backoffPending("one") }, remove},
		{"deleted while running", "[{sleep: 60s, answer: '{\"ok\": true}'}]",
			func(p *project) bool { return len(p.executions("one")) == 1 }, remove},
		{"replaced while running", "[{sleep: 60s, answer: '{\"ok\": true}'}]",
			func(p *project) bool { return len(p.executions("one")) == 1 }, replace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 60s, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
  - {id: two, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: " + tc.scenario + "\n  two: [{answer: '{\"ok\": true}'}]\n"})
			_, wait := p.startCadence(t, "run")
			waitFor(t, "the moment to take the state file away", func() bool { return tc.when(p) })
			tc.do(t, filepath.Join(p.dir, ".cadence", "state.db"))
			gone := time.Now()
			r := wait()
			r.exits(t, 3)
			if took := time.Since(gone); took > 15*time.Second {
				t.Errorf("cadence stopped %s after the state file was gone, not at once", took.Round(time.Millisecond))
			}
			if !strings.Contains(r.stderr, filepath.Join(".cadence", "state.db")) || !strings.Contains(r.stderr, "deleted or replaced") {
				t.Errorf("stderr does not name the state file:\n%s", r.stderr)
			}
			if n := len(p.executions("two")); n != 0 {
				t.Fatalf("step two executed %d times after the state file was gone", n)
			}
			if n := len(p.executions("one")); n != 1 {
				t.Fatalf("step one executed %d times, want 1", n)
			}
		})
	}
}
