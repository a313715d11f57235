package checkpoint

import (
	"fmt"
	"time"
)

// DeadMergeConflict is the class of an item whose agent succeeded but
// whose branch could not be merged back (workspace: worktree, merge: true).
// Such an item stays succeeded: its work is on its branch.
const DeadMergeConflict = "merge_conflict"

const deadLetterColumns = `run_id, step_id, item_key, class, error, signature, attempts, first_at, last_at, dead_at`

const (
	insertDeadLetterQuery = `INSERT INTO dead_letters (` + deadLetterColumns + `) VALUES (
		:run_id, :step_id, :item_key, :class, :error, :signature, :attempts, :first_at, :last_at, :dead_at)`
	deadLettersQuery = `SELECT ` + deadLetterColumns + ` FROM dead_letters WHERE run_id = ?
		ORDER BY step_id, item_key`
	deleteDeadLetterQuery = `DELETE FROM dead_letters WHERE run_id = ? AND step_id = ? AND item_key = ?`
)

type deadLetterRow struct {
	RunID     string `db:"run_id"`
	StepID    string `db:"step_id"`
	ItemKey   string `db:"item_key"`
	Class     string `db:"class"`
	Error     string `db:"error"`
	Signature string `db:"signature"`
	Attempts  int64  `db:"attempts"`
	FirstAt   dbTime `db:"first_at"`
	LastAt    dbTime `db:"last_at"`
	DeadAt    dbTime `db:"dead_at"`
}

// AddDeadLetter puts a failed item into the dead-letter queue. The item
// must exist and be failed (or succeeded, for DeadMergeConflict), and must
// not be in the queue already.
func (t *Tx) AddDeadLetter(d DeadLetter) error {
	u := Unit{RunID: d.RunID, StepID: d.StepID, Item: d.ItemKey}
	what := "dead letter of " + unitName(u)
	if err := t.mustWrite("add " + what); err != nil {
		return err
	}
	if d.ItemKey == "" {
		return fmt.Errorf("add %s: only an item of a map step can be dead-lettered", what)
	}
	var status StepStatus
	if err := t.get(&status, unitName(u), stepStatusQuery, d.RunID, d.StepID, d.ItemKey); err != nil {
		return fmt.Errorf("add %s: %w", what, err)
	}
	if status != StepFailed && !(status == StepSucceeded && d.Class == DeadMergeConflict) {
		return fmt.Errorf("add %s: %w: the item is %s, not failed", what, ErrInvalidTransition, status)
	}
	row := deadLetterRow{RunID: d.RunID, StepID: d.StepID, ItemKey: d.ItemKey, Class: d.Class, Error: cleanText(d.Error),
		Signature: d.Signature, Attempts: int64(d.Attempts), FirstAt: dbTime(d.FirstAt), LastAt: dbTime(d.LastAt),
		DeadAt: dbTime(d.DeadAt)}
	if _, err := t.namedExec(insertDeadLetterQuery, row); err != nil {
		return fmt.Errorf("add %s: %w", what, err)
	}
	return nil
}

// DeadLetters returns the dead-letter queue of a run, by step and key.
func (t *Tx) DeadLetters(runID string) ([]DeadLetter, error) {
	var rows []deadLetterRow
	if err := t.selectRows(&rows, deadLettersQuery, runID); err != nil {
		return nil, fmt.Errorf("read the dead-letter queue of run %s: %w", runID, err)
	}
	out := make([]DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = DeadLetter{RunID: r.RunID, StepID: r.StepID, ItemKey: r.ItemKey, Class: r.Class, Error: r.Error,
			Signature: r.Signature, Attempts: int(r.Attempts), FirstAt: time.Time(r.FirstAt),
			LastAt: time.Time(r.LastAt), DeadAt: time.Time(r.DeadAt)}
	}
	return out, nil
}

const deadCountQuery = `SELECT COUNT(*) FROM dead_letters WHERE run_id = ? AND step_id = ?`

// DeadCount counts the dead items of step stepID of run runID.
func (t *Tx) DeadCount(runID, stepID string) (int, error) {
	var n int
	if err := t.getRow(&n, deadCountQuery, runID, stepID); err != nil {
		return 0, fmt.Errorf("count the dead items of step %s/%s: %w", runID, stepID, err)
	}
	return n, nil
}

// TooManyDeadError is a claim refused because more of the map step's
// items are dead than it allows (Store.ClaimItemUnlessDead).
type TooManyDeadError struct{ Dead int }

func (e *TooManyDeadError) Error() string {
	return fmt.Sprintf("%d items are dead, more than the step allows", e.Dead)
}

// RemoveDeadLetter takes an item out of the dead-letter queue (it is being
// retried); ErrNotFound when it is not in the queue.
func (t *Tx) RemoveDeadLetter(u Unit) error {
	what := "dead letter of " + unitName(u)
	if err := t.mustWrite("remove " + what); err != nil {
		return err
	}
	res, err := t.exec(deleteDeadLetterQuery, u.RunID, u.StepID, u.Item)
	if err != nil {
		return fmt.Errorf("remove %s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("remove %s: %w", what, err)
	} else if n == 0 {
		return fmt.Errorf("remove %s: %w", what, ErrNotFound)
	}
	return nil
}
