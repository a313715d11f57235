package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/retrystate"
)

// TestGateDeadlineIsDecidedOnce: a gate's timeout is decided once. An
// answer given at or after the deadline is refused (it would otherwise
// pass the gate on the next resume); the resume past the deadline times
// the gate out, and an answer to the timed-out gate is refused too, even
// one whose clock reads before the deadline. An answer given in time
// stands, however late the resume that reads it.
func TestGateDeadlineIsDecidedOnce(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{".cadence/workflow.yaml": `version: 1
agents: {a: {preset: exec, command: [sh, -c, "echo '{}'"]}}
defaults: {agent: a}
steps:
  - {id: gate, approval: {prompt: 'ship?', timeout: 1h}}
  - {id: ship, run: [touch, shipped]}
`}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	start := func(t *testing.T) string {
		t.Helper()
		dir := writeProject(t, files)
		res, err := Run(ctx, Options{Dir: dir, SelfExe: selfExe(t), Clock: retrystate.NewFakeClock(t0)})
		if err != nil || res.Status != StatusAwaitingApproval {
			t.Fatalf("run = %+v, %v; want it waiting for approval", res, err)
		}
		return dir
	}
	answer := func(dir string, at time.Time) error {
		_, err := AnswerGate(ctx, Answer{Dir: dir, Step: "gate", Decision: checkpoint.Approved, By: "ana", At: at})
		return err
	}
	resume := func(t *testing.T, dir string, at time.Time) *Result {
		t.Helper()
		res, err := Resume(ctx, Options{Dir: dir, SelfExe: selfExe(t), Clock: retrystate.NewFakeClock(at)})
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		return res
	}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want a usage error saying %q", err, want)
		}
	}
	shipped := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "shipped"))
		return err == nil
	}

	t.Run("an answer after the deadline", func(t *testing.T) {
		dir := start(t)
		refused(t, answer(dir, t0.Add(time.Hour)), "gate gate of run")
		refused(t, answer(dir, t0.Add(2*time.Hour)), "timed out at 2026-11-27T11:00:00Z")
		res := resume(t, dir, t0.Add(2*time.Hour))
		if res.Status != StatusFailed || res.Step != "gate" || shipped(dir) {
			t.Fatalf("resume past the deadline = %+v (shipped: %v), want the gate failed", res, shipped(dir))
		}
		// Timed out: no answer is taken any more, whatever its clock says.
		refused(t, answer(dir, t0.Add(3*time.Hour)), "timed out at 2026-11-27T11:00:00Z")
		refused(t, answer(dir, t0.Add(30*time.Minute)), "timed out at 2026-11-27T11:00:00Z")
		_, err := AnswerGate(ctx, Answer{Dir: dir, Step: "nope", Decision: checkpoint.Approved, By: "ana", At: t0.Add(3 * time.Hour)})
		refused(t, err, "step nope of run "+res.RunID+" is not waiting for approval; no gate waits for approval")
		if _, err := Resume(ctx, Options{Dir: dir, SelfExe: selfExe(t), Clock: retrystate.NewFakeClock(t0.Add(3 * time.Hour))}); err == nil || shipped(dir) {
			t.Fatalf("a second resume: err = %v (shipped: %v), want the failed run refused", err, shipped(dir))
		}
	})
	t.Run("an answer in time read after the deadline", func(t *testing.T) {
		dir := start(t)
		if err := answer(dir, t0.Add(30*time.Minute)); err != nil {
			t.Fatalf("an answer in time: %v", err)
		}
		if res := resume(t, dir, t0.Add(2*time.Hour)); res.Status != StatusSucceeded || !shipped(dir) {
			t.Fatalf("resume = %+v (shipped: %v), want the run succeeded", res, shipped(dir))
		}
	})
}
