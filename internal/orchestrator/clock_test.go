package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/retrystate"
)

// TestG10ClockMovedBackwardsNeverShortensAWait runs a step whose first
// answer fails, so the retry waits a 10 s backoff on a fake clock. The wall
// clock then jumps back an hour: letting the full 10 s pass must not end
// the wait (the deadline is absolute), and the stored deadline must not
// move. Only reaching the deadline on the wall clock starts the retry.
func TestG10ClockMovedBackwardsNeverShortensAWait(t *testing.T) {
	dir := writeProject(t, map[string]string{
		".cadence/workflow.yaml": `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 3, backoff: fixed, initial: 10s, jitter: none}
agents:
  sim: {preset: sim, scenario: scenario.yaml, args: [--ledger, ledger.jsonl]}
steps:
  - {id: one, prompt: go, handoff: {schema: s.json}}
`,
		"scenario.yaml": "steps:\n  one:\n    - answer: '{\"ok\": \"no\"}'\n    - answer: '{\"ok\": true}'\n",
		"s.json":        `{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`,
	})
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := retrystate.NewFakeClock(t0)
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), Options{Dir: dir, SelfExe: selfExe(t), Clock: clock,
			Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0")})
		done <- outcome{res, err}
	}()

	executions := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "ledger.jsonl"))
		return strings.Count(string(b), "\n")
	}
	waitBlocked := func() {
		t.Helper()
		select {
		case <-clock.Pending(1):
		case o := <-done:
			t.Fatalf("the run ended instead of waiting: %+v %v", o.res, o.err)
		case <-time.After(30 * time.Second):
			t.Fatal("the run never started waiting")
		}
	}

	waitBlocked()
	deadline := storedDeadline(t, dir)
	if want := t0.Add(10 * time.Second); !deadline.Equal(want) {
		t.Fatalf("stored next_retry_at %s, want %s", deadline, want)
	}

	clock.SetWall(t0.Add(-time.Hour)) // the wall clock jumps back an hour
	clock.Advance(10 * time.Second)   // the full backoff passes in monotonic time
	waitBlocked()                     // ...and the run is waiting again
	if n := executions(); n != 1 {
		t.Fatalf("%d executions after the clock moved back, want 1: the wait was shortened", n)
	}
	if got := storedDeadline(t, dir); !got.Equal(deadline) {
		t.Fatalf("the stored deadline moved from %s to %s", deadline, got)
	}

	clock.SetWall(deadline) // wall time reaches the deadline
	clock.Advance(time.Second)
	select {
	case o := <-done:
		if o.err != nil || o.res.Status != StatusSucceeded {
			t.Fatalf("run ended with %+v, %v; want success", o.res, o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retry never ran after the deadline")
	}
	if n := executions(); n != 2 {
		t.Fatalf("%d executions, want 2", n)
	}
}

// storedDeadline reads the step's committed next_retry_at.
func storedDeadline(t *testing.T, dir string) time.Time {
	t.Helper()
	rep, err := history.Inspect(context.Background(), dir, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	at := rep.Steps[0].NextRetryAt
	if at == nil {
		t.Fatal("no next_retry_at stored")
	}
	return *at
}
