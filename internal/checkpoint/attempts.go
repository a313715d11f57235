package checkpoint

import (
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

const attemptColumns = `run_id, step_id, item_key, n, kind, status, class, error, details_json, prompt,
	started_at, finished_at, pid, exit_code, session_id, circuit_gen, delay_ms, next_retry_at,
	retry_after_ms, repairs_json, output_file, failed_handoff, cost_usd, turns, input_tokens,
	output_tokens, help_context, uncounted, warning, cached_tokens, agent, provenance, snapshot, snapshot_after`

// Queries on the resume path, named so a test can check their plans use an
// index rather than scanning the attempt history.
const (
	lastAttemptNumberQuery = `SELECT COALESCE(MAX(n), 0) FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ?`
	attemptStatusQuery     = `SELECT status FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ?`
	countCountedQuery      = `SELECT COUNT(*) FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ?
		AND kind <> 'help' AND uncounted = FALSE`
	lastAttemptQuery = `SELECT ` + attemptColumns + ` FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ?
		ORDER BY n DESC LIMIT 1`
	// The WHERE clause repeats the partial index attempts_running verbatim
	// so SQLite uses it: the run's attempts left running, without reading
	// its history.
	runningAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts WHERE run_id = ? AND status = 'running'
		ORDER BY step_id, item_key, n`
	countAttemptsQuery = `SELECT COUNT(*) FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ?`
	// runningItemsQuery reads the keys of a map step's items with an
	// attempt left running through the same partial index, attempts_running,
	// whatever the number of items and of attempts.
	runningItemsQuery = `SELECT DISTINCT item_key FROM attempts WHERE run_id = ? AND step_id = ? AND item_key <> ''
		AND status = 'running' ORDER BY item_key`
)

// The other attempt queries, named so the store prepares them once.
const (
	attemptQuery      = `SELECT ` + attemptColumns + ` FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ?`
	stepAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts WHERE run_id = ? AND step_id = ? AND item_key = ?
		ORDER BY n`
	insertAttemptQuery = `INSERT INTO attempts (` + attemptColumns + `) VALUES (
		:run_id, :step_id, :item_key, :n, :kind, :status, :class, :error, :details_json, :prompt,
		:started_at, :finished_at, :pid, :exit_code, :session_id, :circuit_gen, :delay_ms, :next_retry_at,
		:retry_after_ms, :repairs_json, :output_file, :failed_handoff, :cost_usd, :turns, :input_tokens,
		:output_tokens, :help_context, :uncounted, :warning, :cached_tokens, :agent, :provenance, :snapshot, :snapshot_after)`
	updateAttemptQuery = `UPDATE attempts SET kind = :kind, status = :status, class = :class,
		error = :error, details_json = :details_json, prompt = :prompt, started_at = :started_at,
		finished_at = :finished_at, pid = :pid, exit_code = :exit_code, session_id = :session_id,
		circuit_gen = :circuit_gen, delay_ms = :delay_ms, next_retry_at = :next_retry_at,
		retry_after_ms = :retry_after_ms, repairs_json = :repairs_json, output_file = :output_file,
		failed_handoff = :failed_handoff, cost_usd = :cost_usd, turns = :turns,
		input_tokens = :input_tokens, output_tokens = :output_tokens, help_context = :help_context,
		uncounted = :uncounted, warning = :warning, cached_tokens = :cached_tokens, agent = :agent,
		provenance = :provenance, snapshot = :snapshot, snapshot_after = :snapshot_after
		WHERE run_id = :run_id AND step_id = :step_id AND item_key = :item_key AND n = :n` + guardCondition
	// CROSS JOIN makes SQLite walk the steps in position order (index
	// steps_order) and each step's attempts by number (the primary key), so
	// the rows come out in the order asked for. Joined the other way round
	// it sorts the whole history, prompts included, in a temporary B-tree.
	allAttemptsQuery = `SELECT ` + allAttemptColumns + ` FROM steps s
		CROSS JOIN attempts a ON a.run_id = s.run_id AND a.step_id = s.step_id AND a.item_key = s.item_key
		WHERE s.run_id = ? ORDER BY s.idx, s.item_idx, a.n`
	// allAttemptsBriefQuery reads the same rows as allAttemptsQuery but
	// returns the two large columns, prompt and details_json, empty.
	allAttemptsBriefQuery = `SELECT ` + briefAttemptColumns + ` FROM steps s
		CROSS JOIN attempts a ON a.run_id = s.run_id AND a.step_id = s.step_id AND a.item_key = s.item_key
		WHERE s.run_id = ? ORDER BY s.idx, s.item_idx, a.n`
)

// The column lists of the whole-run queries, qualified for the join with
// steps. The brief list selects constants under the names of the columns it
// leaves out, so the rows scan into attemptRow unchanged.
const (
	allAttemptColumns = `a.run_id, a.step_id, a.item_key, a.n, a.kind, a.status, a.class, a.error, a.details_json,
	a.prompt, a.started_at, a.finished_at, a.pid, a.exit_code, a.session_id, a.circuit_gen, a.delay_ms,
	a.next_retry_at, a.retry_after_ms, a.repairs_json, a.output_file, a.failed_handoff, a.cost_usd,
	a.turns, a.input_tokens, a.output_tokens, a.help_context, a.uncounted, a.warning, a.cached_tokens, a.agent,
	a.provenance, a.snapshot, a.snapshot_after`
	briefAttemptColumns = `a.run_id, a.step_id, a.item_key, a.n, a.kind, a.status, a.class, a.error, NULL AS details_json,
	'' AS prompt, a.started_at, a.finished_at, a.pid, a.exit_code, a.session_id, a.circuit_gen, a.delay_ms,
	a.next_retry_at, a.retry_after_ms, a.repairs_json, a.output_file, a.failed_handoff, a.cost_usd,
	a.turns, a.input_tokens, a.output_tokens, a.help_context, a.uncounted, a.warning, a.cached_tokens, a.agent,
	a.provenance, a.snapshot, a.snapshot_after`
)

// InsertAttempt records a new attempt of a step. a.N must be one more than
// the step's last attempt number (1 for the first), so attempt numbers stay
// dense across every process that worked on the run; otherwise
// ErrAttemptNumber.
func (t *Tx) InsertAttempt(a Attempt) error {
	what := attemptName(a.Unit(), a.N)
	if err := t.mustWrite("insert " + what); err != nil {
		return err
	}
	if !knownStatus(attemptTransitions, a.status) {
		return fmt.Errorf("insert %s: %w: unknown status %q", what, ErrInvalidTransition, a.status)
	}
	if !attemptKinds[a.Kind] {
		return fmt.Errorf("insert %s: unknown kind %q", what, a.Kind)
	}
	last, err := t.lastAttemptNumber(a.Unit())
	if err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	if a.N != last+1 {
		return fmt.Errorf("insert %s: %w: the step's last attempt is %d", what, ErrAttemptNumber, last)
	}
	row, err := attemptToRow(a)
	if err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	if _, err := t.namedExec(insertAttemptQuery, row); err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	t.noteLastAttempt(a.Unit(), a.N)
	return nil
}

// UpdateAttempt replaces every field of the attempt (RunID, StepID, N),
// after checking the status change with AttemptTransition.
func (t *Tx) UpdateAttempt(a Attempt) error {
	what := attemptName(a.Unit(), a.N)
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	if !attemptKinds[a.Kind] {
		return fmt.Errorf("update %s: unknown kind %q", what, a.Kind)
	}
	row, err := attemptToRow(a)
	if err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	if g, ok := guardTo(attemptTransitions, a.status); ok {
		wrote, err := t.execGuarded(what, updateAttemptQuery, guardedAttemptRow{row, g})
		if wrote || err != nil {
			return err
		}
	}
	// Nothing was written: say why, from the row's status.
	var from string
	if err := t.get(&from, what, attemptStatusQuery, a.RunID, a.StepID, a.ItemKey, a.N); err != nil {
		return err
	}
	if err := AttemptTransition(AttemptStatus(from), a.status); err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	// Allowed, yet outside the guard (a table with more statuses than it
	// holds): written under a guard of the status just read.
	return t.execOnceMore(what, updateAttemptQuery, guardedAttemptRow{row, guardOf(from)}, from, string(a.status))
}

// guardedAttemptRow is an attempt's row with the statuses its update may
// find it in (updateAttemptQuery).
type guardedAttemptRow struct {
	attemptRow
	statusGuard
}

// Attempts returns a step's attempts in order.
func (t *Tx) Attempts(runID, stepID string) ([]Attempt, error) {
	return t.UnitAttempts(Unit{RunID: runID, StepID: stepID})
}

// UnitAttempts returns the attempts of a step or of an item, in order.
func (t *Tx) UnitAttempts(u Unit) ([]Attempt, error) {
	out, err := t.attempts("attempts of "+unitName(u), stepAttemptsQuery, u.RunID, u.StepID, u.Item)
	if err == nil {
		last := 0
		if len(out) > 0 {
			last = out[len(out)-1].N
		}
		t.noteLastAttempt(u, last)
	}
	return out, err
}

// noteLastAttempt records that unit u's last attempt in this transaction
// is number n, for InsertAttempt's check of the next number.
func (t *Tx) noteLastAttempt(u Unit, n int) {
	if t.lastAttempt == nil {
		t.lastAttempt = make(map[Unit]int, 1)
	}
	t.lastAttempt[u] = n
}

// lastAttemptNumber returns the number of unit u's last attempt (0 when it
// has none): what this transaction read of it (UnitAttempts,
// UnitLastAttempt) or inserted, else a read of the largest number. The
// transaction's reads hold to its commit (SERIALIZABLE on PostgreSQL, the
// write lock on SQLite), so a number it saw is the one a read now would
// return, unless it deleted attempts since (Prune forgets them): one round
// trip fewer on PostgreSQL for the insert that follows a read of the
// unit's attempts, as each attempt's does (attempt.nextN reads the last
// one).
func (t *Tx) lastAttemptNumber(u Unit) (int, error) {
	if n, ok := t.lastAttempt[u]; ok {
		return n, nil
	}
	var last int
	err := t.getRow(&last, lastAttemptNumberQuery, u.RunID, u.StepID, u.Item)
	return last, err
}

// Attempt returns one attempt, or ErrNotFound.
func (t *Tx) Attempt(runID, stepID string, n int) (*Attempt, error) {
	return t.UnitAttempt(Unit{RunID: runID, StepID: stepID}, n)
}

// UnitAttempt returns one attempt of a step or of an item, or ErrNotFound.
func (t *Tx) UnitAttempt(u Unit, n int) (*Attempt, error) {
	return t.oneAttempt(attemptName(u, n), attemptQuery, u.RunID, u.StepID, u.Item, n)
}

// LastAttempt returns the step's attempt with the highest number, or
// ErrNotFound when the step has none.
func (t *Tx) LastAttempt(runID, stepID string) (*Attempt, error) {
	return t.UnitLastAttempt(Unit{RunID: runID, StepID: stepID})
}

// UnitLastAttempt returns the attempt of a step or of an item with the
// highest number, or ErrNotFound when it has none.
func (t *Tx) UnitLastAttempt(u Unit) (*Attempt, error) {
	a, err := t.oneAttempt("last attempt of "+unitName(u), lastAttemptQuery, u.RunID, u.StepID, u.Item)
	switch {
	case err == nil:
		t.noteLastAttempt(u, a.N)
	case errors.Is(err, ErrNotFound):
		t.noteLastAttempt(u, 0)
	}
	return a, err
}

// RunningAttempts returns the run's attempts still marked running: after a
// crash, the ones resume must settle first (G5).
func (t *Tx) RunningAttempts(runID string) ([]Attempt, error) {
	return t.attempts(fmt.Sprintf("running attempts of run %s", runID), runningAttemptsQuery, runID)
}

// RunningItems returns the keys of the items of map step stepID of run
// runID that have an attempt recorded running, in key order: on a shared
// database, the items whose attempts a process that died left behind,
// found without reading every item of the step.
func (t *Tx) RunningItems(runID, stepID string) ([]string, error) {
	var keys []string
	if err := t.selectRows(&keys, runningItemsQuery, runID, stepID); err != nil {
		return nil, fmt.Errorf("read the items of step %s/%s with a running attempt: %w", runID, stepID, err)
	}
	return keys, nil
}

// AllAttempts returns every attempt of the run, ordered by step position and
// then attempt number, for inspect. It is the only query that reads a run's
// whole history.
func (t *Tx) AllAttempts(runID string) ([]Attempt, error) {
	return t.attempts(fmt.Sprintf("attempts of run %s", runID), allAttemptsQuery, runID)
}

// AllAttemptsBrief returns the same attempts as AllAttempts, in the same
// order, with every field but two: Prompt is "" and DetailsJSON is nil, as
// if the attempt had none. Those are the largest columns of an attempt, so
// a caller that shows neither (inspect without prompts, statistics) reads
// far less of the history with it.
func (t *Tx) AllAttemptsBrief(runID string) ([]Attempt, error) {
	return t.attempts(fmt.Sprintf("attempts of run %s", runID), allAttemptsBriefQuery, runID)
}

// CountCounted returns how many of the step's attempts count against its
// max_attempts: every attempt but help rounds and those marked Uncounted.
func (t *Tx) CountCounted(runID, stepID string) (int, error) {
	return t.UnitCountCounted(Unit{RunID: runID, StepID: stepID})
}

// UnitCountCounted is CountCounted for a step or an item.
func (t *Tx) UnitCountCounted(u Unit) (int, error) {
	var n int
	if err := t.getRow(&n, countCountedQuery, u.RunID, u.StepID, u.Item); err != nil {
		return 0, fmt.Errorf("count attempts of %s: %w", unitName(u), err)
	}
	return n, nil
}

// CountAttempts returns how many attempts the step has, counting only the
// given kinds when any are given.
func (t *Tx) CountAttempts(runID, stepID string, kinds ...string) (int, error) {
	return t.UnitCountAttempts(Unit{RunID: runID, StepID: stepID}, kinds...)
}

// UnitCountAttempts is CountAttempts for a step or an item.
func (t *Tx) UnitCountAttempts(u Unit, kinds ...string) (int, error) {
	query, args := countAttemptsQuery, []any{u.RunID, u.StepID, u.Item}
	if len(kinds) > 0 {
		q, kargs, err := sqlx.In(` AND kind IN (?)`, kinds)
		if err != nil {
			return 0, fmt.Errorf("count attempts of %s: %w", unitName(u), err)
		}
		query += q
		args = append(args, kargs...)
	}
	var n int
	if err := t.getRow(&n, query, args...); err != nil {
		return 0, fmt.Errorf("count attempts of %s: %w", unitName(u), err)
	}
	return n, nil
}

// attemptName names an attempt in errors.
func attemptName(u Unit, n int) string {
	return fmt.Sprintf("attempt %s/%d", u, n)
}

// runningOfAgentQuery counts the attempts still running whose step or
// item runs on an agent entry, in every run of the store's project (an
// agent entry is a project's): they are on the partial index of running
// attempts.
const runningOfAgentQuery = `SELECT COUNT(*) FROM attempts a
	JOIN steps s ON s.run_id = a.run_id AND s.step_id = a.step_id AND s.item_key = a.item_key
	JOIN runs r ON r.id = a.run_id
	WHERE a.status = 'running' AND a.kind <> 'help' AND s.agent = ? AND r.project = ?`

// RunningOfAgent counts the attempts of agent entry agentName running
// now, in every run and every process sharing the store: what its
// max_concurrent caps (SPEC §17). Read in the transaction that begins
// an attempt, so that two processes cannot both take the last place.
func (t *Tx) RunningOfAgent(agentName string) (int, error) {
	var n int
	if err := t.getRow(&n, runningOfAgentQuery, agentName, t.project); err != nil {
		return 0, fmt.Errorf("count the running attempts of agent %s: %w", agentName, err)
	}
	return n, nil
}
