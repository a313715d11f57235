package orchestrator

import (
	"errors"
	"fmt"
	"time"

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
	rows, err := tx.Steps(run.ID)
	if err != nil {
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
