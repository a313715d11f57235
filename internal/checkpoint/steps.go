package checkpoint

import "fmt"

const stepColumns = `run_id, step_id, item_key, idx, item_idx, item_json, agent, status, max_attempts, next_retry_at, delay_ms,
	session_id, fresh_session, handoff_json, help_rounds, advice, cost_usd, cost_known, turns,
	input_tokens, output_tokens, updated_at, base_commit, decision_json, cached_tokens`

// stepsQuery lists a run's steps in workflow order (index steps_order).
const stepsQuery = `SELECT ` + stepColumns + ` FROM steps WHERE run_id = ? AND item_key = '' ORDER BY idx`

// itemsQuery lists the items of a map step in their frozen order (index
// items_order).
const itemsQuery = `SELECT ` + stepColumns + ` FROM steps WHERE run_id = ? AND step_id = ? AND item_key <> ''
	ORDER BY item_idx`

// The other step queries, named so the store prepares them once.
const (
	stepQuery       = `SELECT ` + stepColumns + ` FROM steps WHERE run_id = ? AND step_id = ? AND item_key = ?`
	stepStatusQuery = `SELECT status FROM steps WHERE run_id = ? AND step_id = ? AND item_key = ?`
	insertStepQuery = `INSERT INTO steps (` + stepColumns + `) VALUES (
		:run_id, :step_id, :item_key, :idx, :item_idx, :item_json, :agent, :status, :max_attempts, :next_retry_at, :delay_ms,
		:session_id, :fresh_session, :handoff_json, :help_rounds, :advice, :cost_usd, :cost_known, :turns,
		:input_tokens, :output_tokens, :updated_at, :base_commit, :decision_json, :cached_tokens)`
	updateStepQuery = `UPDATE steps SET idx = :idx, item_idx = :item_idx, item_json = :item_json, agent = :agent, status = :status,
		max_attempts = :max_attempts, next_retry_at = :next_retry_at, delay_ms = :delay_ms,
		session_id = :session_id, fresh_session = :fresh_session, handoff_json = :handoff_json,
		help_rounds = :help_rounds, advice = :advice, cost_usd = :cost_usd, cost_known = :cost_known,
		turns = :turns, input_tokens = :input_tokens, output_tokens = :output_tokens,
		updated_at = :updated_at, base_commit = :base_commit, decision_json = :decision_json, cached_tokens = :cached_tokens
		WHERE run_id = :run_id AND step_id = :step_id AND item_key = :item_key` + guardCondition
)

// guardedStepRow is a step's row with the statuses its update may find it
// in (updateStepQuery).
type guardedStepRow struct {
	stepRow
	statusGuard
}

func (t *Tx) insertStep(s Step) error {
	what := unitName(s.Unit())
	if err := t.mustWrite("create " + what); err != nil {
		return err
	}
	if !knownStatus(stepTransitions, s.status) {
		return fmt.Errorf("create %s: %w: unknown status %q", what, ErrInvalidTransition, s.status)
	}
	if _, err := t.namedExec(insertStepQuery, stepToRow(s)); err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	t.insertedSteps++
	return nil
}

// Steps returns the run's steps in workflow order.
func (t *Tx) Steps(runID string) ([]Step, error) {
	return t.steps("steps of run "+runID, stepsQuery, runID)
}

// Step returns one step, or ErrNotFound.
func (t *Tx) Step(runID, stepID string) (*Step, error) {
	return t.Unit(Unit{RunID: runID, StepID: stepID})
}

// Unit returns the state of a step or of an item of a map step, or
// ErrNotFound.
func (t *Tx) Unit(u Unit) (*Step, error) {
	what := unitName(u)
	steps, err := t.steps(what, stepQuery, u.RunID, u.StepID, u.Item)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return &steps[0], nil
}

// Items returns the items of a map step in their frozen order; none before
// the step started.
func (t *Tx) Items(runID, stepID string) ([]Step, error) {
	return t.steps(fmt.Sprintf("items of step %s/%s", runID, stepID), itemsQuery, runID, stepID)
}

// InsertItems freezes the items of a map step: one row each, pending, in
// the order given. Called once, when the step starts.
func (t *Tx) InsertItems(items []Step) error {
	for _, it := range items {
		if it.ItemKey == "" {
			return fmt.Errorf("create items of step %s/%s: an item with an empty key", it.RunID, it.ID)
		}
		if err := t.insertStep(it); err != nil {
			return err
		}
	}
	return nil
}

// UpdateStep replaces every field of the step or item (RunID, ID, ItemKey),
// after checking the status change with StepTransition.
func (t *Tx) UpdateStep(s Step) error {
	what := unitName(s.Unit())
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	if g, ok := guardTo(stepTransitions, s.status); ok {
		wrote, err := t.execGuarded(what, updateStepQuery, guardedStepRow{stepToRow(s), g})
		if wrote || err != nil {
			return err
		}
	}
	// Nothing was written: say why, from the row's status.
	var from string
	if err := t.get(&from, what, stepStatusQuery, s.RunID, s.ID, s.ItemKey); err != nil {
		return err
	}
	if err := StepTransition(StepStatus(from), s.status); err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	// Allowed, yet outside the guard (a table with more statuses than it
	// holds): written under a guard of the status just read.
	return t.execOnceMore(what, updateStepQuery, guardedStepRow{stepToRow(s), guardOf(from)}, from, string(s.status))
}

// unitName names a unit in errors: "step RUN/STEP" or "item RUN/STEP/KEY".
func unitName(u Unit) string {
	if u.Item == "" {
		return "step " + u.String()
	}
	return "item " + u.String()
}
