package checkpoint

import "fmt"

const stepColumns = `run_id, step_id, idx, agent, status, max_attempts, next_retry_at, delay_ms,
	session_id, fresh_session, handoff_json, help_rounds, advice, cost_usd, cost_known, turns,
	input_tokens, output_tokens, updated_at`

// stepsQuery lists a run's steps in workflow order (index steps_order).
const stepsQuery = `SELECT ` + stepColumns + ` FROM steps WHERE run_id = ? ORDER BY idx`

// The other step queries, named so the store prepares them once.
const (
	stepQuery       = `SELECT ` + stepColumns + ` FROM steps WHERE run_id = ? AND step_id = ?`
	stepStatusQuery = `SELECT status FROM steps WHERE run_id = ? AND step_id = ?`
	insertStepQuery = `INSERT INTO steps (` + stepColumns + `) VALUES (
		:run_id, :step_id, :idx, :agent, :status, :max_attempts, :next_retry_at, :delay_ms,
		:session_id, :fresh_session, :handoff_json, :help_rounds, :advice, :cost_usd, :cost_known, :turns,
		:input_tokens, :output_tokens, :updated_at)`
	updateStepQuery = `UPDATE steps SET idx = :idx, agent = :agent, status = :status,
		max_attempts = :max_attempts, next_retry_at = :next_retry_at, delay_ms = :delay_ms,
		session_id = :session_id, fresh_session = :fresh_session, handoff_json = :handoff_json,
		help_rounds = :help_rounds, advice = :advice, cost_usd = :cost_usd, cost_known = :cost_known,
		turns = :turns, input_tokens = :input_tokens, output_tokens = :output_tokens,
		updated_at = :updated_at
		WHERE run_id = :run_id AND step_id = :step_id`
)

func (t *Tx) insertStep(s Step) error {
	what := fmt.Sprintf("step %s/%s", s.RunID, s.ID)
	if err := t.mustWrite("create " + what); err != nil {
		return err
	}
	if !knownStatus(stepTransitions, s.Status) {
		return fmt.Errorf("create %s: %w: unknown status %q", what, ErrInvalidTransition, s.Status)
	}
	if _, err := t.namedExec(insertStepQuery, stepToRow(s)); err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	return nil
}

// Steps returns the run's steps in workflow order.
func (t *Tx) Steps(runID string) ([]Step, error) {
	return t.steps("steps of run "+runID, stepsQuery, runID)
}

// Step returns one step, or ErrNotFound.
func (t *Tx) Step(runID, stepID string) (*Step, error) {
	what := fmt.Sprintf("step %s/%s", runID, stepID)
	steps, err := t.steps(what, stepQuery, runID, stepID)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return &steps[0], nil
}

// UpdateStep replaces every field of the step (RunID, ID), after checking the
// status change with StepTransition.
func (t *Tx) UpdateStep(s Step) error {
	what := fmt.Sprintf("step %s/%s", s.RunID, s.ID)
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	var from string
	if err := t.get(&from, what, stepStatusQuery, s.RunID, s.ID); err != nil {
		return err
	}
	if err := StepTransition(from, s.Status); err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	return t.execOne(what, updateStepQuery, stepToRow(s))
}
