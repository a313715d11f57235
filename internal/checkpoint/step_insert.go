package checkpoint

import (
	"errors"
	"fmt"
)

// InsertStep adds one step to an existing run: a step that a changed
// workflow added, accepted by `resume --allow-changed`.
func (t *Tx) InsertStep(s Step) error { return t.insertStep(s) }

// MoveStep sets the position of a step, and of its map items, in the run:
// the position of the step in a changed workflow accepted by `resume
// --allow-changed`. Positions are unique in a run, so a caller that moves
// several steps first moves them out of the way (to positions past every
// step's).
func (t *Tx) MoveStep(runID, stepID string, idx int) error {
	what := unitName(Unit{RunID: runID, StepID: stepID})
	if err := t.mustWrite("move " + what); err != nil {
		return err
	}
	res, err := t.exec(`UPDATE steps SET idx = ? WHERE run_id = ? AND step_id = ?`, idx, runID, stepID)
	if err != nil {
		return fmt.Errorf("move %s to position %d: %w", what, idx, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("move %s to position %d: %w", what, idx, err)
	} else if n == 0 {
		return fmt.Errorf("move %s: %w", what, ErrNotFound)
	}
	return nil
}

// ErrStepHasHistory is returned by DropStep for a step that has attempts
// or items: its history is never erased.
var ErrStepHasHistory = errors.New("the step already ran")

// DropStep removes a step that never ran from a run: a step that a changed
// workflow removed, accepted by `resume --allow-changed`. A step with an
// attempt or a map item is refused with ErrStepHasHistory.
func (t *Tx) DropStep(runID, stepID string) error {
	u := Unit{RunID: runID, StepID: stepID}
	what := unitName(u)
	if err := t.mustWrite("drop " + what); err != nil {
		return err
	}
	attempts, err := t.UnitCountAttempts(u)
	if err != nil {
		return err
	}
	items, err := t.Items(runID, stepID)
	if err != nil {
		return err
	}
	if attempts > 0 || len(items) > 0 {
		return fmt.Errorf("drop %s: %w (%d attempts, %d items)", what, ErrStepHasHistory, attempts, len(items))
	}
	if _, err := t.exec(`DELETE FROM steps WHERE run_id = ? AND step_id = ? AND item_key = ''`, runID, stepID); err != nil {
		return fmt.Errorf("drop %s: %w", what, err)
	}
	return nil
}

// ChangeStepSettings applies a changed workflow's agent and max_attempts to
// a step and its map items that have not succeeded: the agent is replaced,
// and max_attempts moves by delta (the new setting minus the old), so that
// attempts a `--retry-failed` or `dlq retry` added stay added.
func (t *Tx) ChangeStepSettings(runID, stepID, agent string, delta int) error {
	what := unitName(Unit{RunID: runID, StepID: stepID})
	if err := t.mustWrite("change " + what); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE steps SET agent = ?, max_attempts = max_attempts + ?
		WHERE run_id = ? AND step_id = ? AND status <> ?`, agent, delta, runID, stepID, StepSucceeded); err != nil {
		return fmt.Errorf("change the settings of %s: %w", what, err)
	}
	return nil
}

// nextIdxQuery is the first position past every unit of a run.
const nextIdxQuery = `SELECT COALESCE(MAX(idx), -1) + 1 FROM steps WHERE run_id = ?`

// NextIdx returns the first position past every step of a run: where the
// rows of a loop's next iteration go, after every row the run has.
func (t *Tx) NextIdx(runID string) (int, error) {
	var n int64
	if err := t.getRow(&n, nextIdxQuery, runID); err != nil {
		return 0, fmt.Errorf("read the last position of run %s: %w", runID, err)
	}
	return int(n), nil
}
