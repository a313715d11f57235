package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// applyChangedWorkflow makes a changed workflow accepted by `resume
// --allow-changed` take effect on the run's step rows, in the transaction
// that reopens the run: steps the new workflow added are inserted, steps
// it moved take their new positions, steps it removed are dropped, and a
// changed agent or max_attempts is applied to every step and item that
// has not succeeded. What the rest of the workflow says (prompts, agents'
// arguments, backoff, timeouts) is read from the workflow at each attempt
// and needs nothing here.
//
// A removed step that already ran (a renamed one, say) is refused with a
// UsageError naming it: its attempts are history, never erased. The error
// rolls the whole transaction back, so nothing changes.
func (p *project) applyChangedWorkflow(tx *checkpoint.Tx, run *checkpoint.Run, now time.Time) error {
	old, err := workflow.Decode(run.WorkflowYAML)
	if err != nil {
		old = nil // a stored workflow that no longer decodes: settings cannot be compared
	}
	all, err := tx.Steps(run.ID)
	if err != nil {
		return err
	}
	// The rows of loop iterations (LOOP/N, LOOP/N/STEP) follow the
	// top-level steps: they move past every position the top level may
	// take, keeping their order, and keep or drop as their steps do.
	var rows, inner []checkpoint.Step
	for _, r := range all {
		if !address.Of(r.ID).Parent().IsZero() {
			inner = append(inner, r)
		} else {
			rows = append(rows, r)
		}
	}
	if err := (changedLoops{now: p.wf, old: old}).apply(tx, run.ID, inner); err != nil {
		return err
	}
	have := make(map[string]bool, len(rows))
	for _, r := range rows {
		have[r.ID] = true
		if p.wf.Step(r.ID) != nil {
			continue
		}
		if err := tx.DropStep(run.ID, r.ID); err != nil {
			if errors.Is(err, checkpoint.ErrStepHasHistory) {
				return usagef("step %s is not in the changed workflow (removed or renamed), but run %s already ran it: "+
					"its attempts cannot be dropped; put the step back, or start a new run with `cadence run --new`", r.ID, run.ID)
			}
			return err
		}
	}
	// Positions are unique in a run: move every kept step past the end
	// first, then to its place.
	for i, r := range rows {
		if p.wf.Step(r.ID) != nil {
			if err := tx.MoveStep(run.ID, r.ID, len(rows)+len(p.wf.Steps)+i); err != nil {
				return err
			}
		}
	}
	for _, s := range p.wf.Steps {
		if !have[s.ID] {
			if err := tx.InsertStep(newStepRow(run.ID, s, now)); err != nil {
				return err
			}
			continue
		}
		if err := tx.MoveStep(run.ID, s.ID, s.Index); err != nil {
			return err
		}
		delta := 0
		if old != nil {
			if was := old.Step(s.ID); was != nil {
				delta = s.Retry.MaxAttempts - was.Retry.MaxAttempts
			}
		}
		if err := tx.ChangeStepSettings(run.ID, s.ID, s.Agent, delta); err != nil {
			return fmt.Errorf("apply the changed workflow to step %s: %w", s.ID, err)
		}
	}
	return nil
}

// changedLoops is a changed workflow (now) and the one a run started
// with (old; nil when it no longer decodes), as seen by the rows of loop
// iterations.
type changedLoops struct{ now, old *workflow.Workflow }

// apply does for the rows of loop iterations what applyChangedWorkflow
// does for the top level, moving them past every position the top level
// takes while it moves: an iteration of a loop the changed workflow keeps
// stays; an inner step it removed is dropped, or refused when it ran; a
// changed agent or max_attempts applies to the inner steps not yet
// succeeded.
func (c changedLoops) apply(tx *checkpoint.Tx, runID string, inner []checkpoint.Step) error {
	if len(inner) == 0 {
		return nil
	}
	next, err := tx.NextIdx(runID)
	if err != nil {
		return err
	}
	base := 2*next + len(c.now.Steps) + 1
	for i, r := range inner {
		loop := address.Of(r.ID).Top()
		ws, _ := c.now.AtPath(r.ID)
		iteration := ws == nil && c.now.Step(loop) != nil && c.now.Step(loop).Loop != nil && address.Of(r.ID).IsIteration() && address.Of(r.ID).Number() > 0
		if ws == nil && !iteration {
			if err := tx.DropStep(runID, r.ID); err != nil {
				if errors.Is(err, checkpoint.ErrStepHasHistory) {
					return usagef("step %s is not in the changed workflow (its loop or the step was removed or renamed), but run %s already ran it: "+
						"its attempts cannot be dropped; put it back, or start a new run with `cadence run --new`", r.ID, runID)
				}
				return err
			}
			continue
		}
		if err := tx.MoveStep(runID, r.ID, base+i); err != nil {
			return err
		}
		if ws == nil {
			continue
		}
		delta := 0
		if c.old != nil {
			if was := c.old.Find(ws.ID); was != nil {
				delta = ws.Retry.MaxAttempts - was.Retry.MaxAttempts
			}
		}
		if err := tx.ChangeStepSettings(runID, r.ID, ws.Agent, delta); err != nil {
			return fmt.Errorf("apply the changed workflow to step %s: %w", r.ID, err)
		}
	}
	return nil
}
