package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// settle resolves every attempt that a previous process left running (G5).
// Its agent is killed if it somehow survived (G6). Then, if the attempt's
// handoff is present and valid, the attempt is adopted: the step succeeds
// with no new execution. Otherwise it becomes interrupted and counts as an
// attempt; a half-open circuit trial it held counts as failed. It
// reports how many attempts it settled: none means it changed no row.
//
// On a shared database every attempt is left alone but those of a loop's
// inner steps: a step or an item may be running in another process, and
// one whose holder is gone is settled by whichever process claims it next
// (settleUnit); a loop's inner steps are worked only by the process that
// holds the run, which this one now is. (The agent of such an attempt is
// killed only when it is found on this machine running for that very
// attempt: its idempotency key is checked.)
func (p *project) settle(ctx context.Context, run *checkpoint.Run) (int, error) {
	var running []checkpoint.Attempt
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		running, err = tx.RunningAttempts(run.ID)
		return err
	}); err != nil {
		return 0, err
	}
	settled := 0
	for i := range running {
		if p.shared() && !strings.Contains(running[i].StepID, "/") {
			// Its step or item may be running in another process; whoever
			// claims it next settles it (settleUnit).
			continue
		}
		if err := p.settleAttempt(ctx, run, &running[i], true); err != nil {
			return settled, err
		}
		settled++
	}
	return settled, nil
}

// settleAttempt settles one attempt left running; kill says its agent, if
// it survived, runs on this machine and is to be killed first.
func (p *project) settleAttempt(ctx context.Context, run *checkpoint.Run, a *checkpoint.Attempt, kill bool) error {
	ws, iteration := p.wf.AtPath(a.StepID)
	if ws == nil {
		return fmt.Errorf("attempt %d of %s: the workflow has no step %s", a.N, attempt.UnitLabel(a.Unit()), a.StepID)
	}
	it, err := p.frozenItem(ctx, a.Unit())
	if err != nil {
		return err
	}
	in := &attempt.Instance{Run: run, Step: ws, Item: it, Iteration: iteration}
	if iteration > 0 {
		in.Path = a.StepID
	}
	return p.attempts.Settle(ctx, in, a, kill)
}
