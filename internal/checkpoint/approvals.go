package checkpoint

import (
	"fmt"
	"time"
)

// Approval decisions (SPEC §16.6).
const (
	Approved = "approved"
	Rejected = "rejected"
)

// Approval is an approval gate reached by a run: its rendered prompt, when
// it was reached, and, once a person answered, the decision.
type Approval struct {
	Unit        Unit
	Prompt      string
	RequestedAt time.Time
	TimeoutAt   *time.Time // nil: the gate waits as long as it takes
	Decision    string     // "", Approved or Rejected
	Comment     string
	By          string
	DecidedAt   *time.Time
}

// Decided reports whether a person answered the gate.
func (a *Approval) Decided() bool { return a.Decision != "" }

const approvalColumns = `run_id, step_id, item_key, prompt, requested_at, timeout_at, decision, comment, decided_by, decided_at`

const (
	insertApprovalQuery = `INSERT INTO approvals (` + approvalColumns + `) VALUES (
		:run_id, :step_id, :item_key, :prompt, :requested_at, :timeout_at, :decision, :comment, :decided_by, :decided_at)`
	approvalQuery       = `SELECT ` + approvalColumns + ` FROM approvals WHERE run_id = ? AND step_id = ? AND item_key = ?`
	runApprovalsQuery   = `SELECT ` + approvalColumns + ` FROM approvals WHERE run_id = ? ORDER BY requested_at, step_id, item_key`
	decideApprovalQuery = `UPDATE approvals SET decision = :decision, comment = :comment, decided_by = :decided_by,
		decided_at = :decided_at WHERE run_id = :run_id AND step_id = :step_id AND item_key = :item_key AND decision IS NULL`
)

type approvalRow struct {
	RunID       string   `db:"run_id"`
	StepID      string   `db:"step_id"`
	ItemKey     string   `db:"item_key"`
	Prompt      string   `db:"prompt"`
	RequestedAt dbTime   `db:"requested_at"`
	TimeoutAt   nullTime `db:"timeout_at"`
	Decision    *string  `db:"decision"`
	Comment     string   `db:"comment"`
	DecidedBy   string   `db:"decided_by"`
	DecidedAt   nullTime `db:"decided_at"`
}

func approvalToRow(a Approval) approvalRow {
	r := approvalRow{RunID: a.Unit.RunID, StepID: a.Unit.StepID, ItemKey: a.Unit.Item, Prompt: cleanText(a.Prompt),
		RequestedAt: dbTime(a.RequestedAt), TimeoutAt: toNullTime(a.TimeoutAt), Comment: cleanText(a.Comment),
		DecidedBy: cleanText(a.By), DecidedAt: toNullTime(a.DecidedAt)}
	if a.Decision != "" {
		d := a.Decision
		r.Decision = &d
	}
	return r
}

func (r approvalRow) approval() Approval {
	a := Approval{Unit: Unit{RunID: r.RunID, StepID: r.StepID, Item: r.ItemKey}, Prompt: r.Prompt,
		RequestedAt: time.Time(r.RequestedAt), TimeoutAt: r.TimeoutAt.t, Comment: r.Comment, By: r.DecidedBy,
		DecidedAt: r.DecidedAt.t}
	if r.Decision != nil {
		a.Decision = *r.Decision
	}
	return a
}

// GateWaiting commits a gate reached: the step waits (for a person, not a
// deadline) and its approval row holds the prompt it shows. Both are
// written in the caller's transaction, before the prompt is shown.
func (t *Tx) GateWaiting(s *Step, a Approval, now time.Time) error {
	what := "approval of " + unitName(a.Unit)
	if err := t.mustWrite("request " + what); err != nil {
		return err
	}
	a.Decision, a.Comment, a.By, a.DecidedAt = "", "", "", nil
	if _, err := t.namedExec(insertApprovalQuery, approvalToRow(a)); err != nil {
		return fmt.Errorf("request %s: %w", what, err)
	}
	return t.StepWaiting(s, nil, nil, now)
}

// Approval returns the approval row of a gate, or ErrNotFound when the gate
// was never reached.
func (t *Tx) Approval(u Unit) (*Approval, error) {
	var rows []approvalRow
	if err := t.selectRows(&rows, approvalQuery, u.RunID, u.StepID, u.Item); err != nil {
		return nil, fmt.Errorf("read the approval of %s: %w", unitName(u), err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("approval of %s: %w", unitName(u), ErrNotFound)
	}
	a := rows[0].approval()
	return &a, nil
}

// Approvals returns every gate a run reached, in the order they were.
func (t *Tx) Approvals(runID string) ([]Approval, error) {
	var rows []approvalRow
	if err := t.selectRows(&rows, runApprovalsQuery, runID); err != nil {
		return nil, fmt.Errorf("read the approvals of run %s: %w", runID, err)
	}
	out := make([]Approval, len(rows))
	for i, r := range rows {
		out[i] = r.approval()
	}
	return out, nil
}

// ErrAlreadyDecided is returned by DecideApproval for a gate a person
// already answered: the first decision stands.
var ErrAlreadyDecided = fmt.Errorf("already decided")

// ErrPastDeadline is returned by DecideApproval for an answer given at or
// after the gate's deadline: the gate timed out, whatever came later.
var ErrPastDeadline = fmt.Errorf("past the gate's deadline")

// DecideApproval records a person's answer to a waiting gate, once. It
// needs no hold on the run: it writes only the approval row, which the
// run's process reads. A gate never reached is ErrNotFound; one already
// answered is ErrAlreadyDecided, and keeps its first decision; an answer
// at or after the gate's timeout_at is ErrPastDeadline.
func (t *Tx) DecideApproval(a Approval) error {
	what := "approval of " + unitName(a.Unit)
	if err := t.mustWrite("decide " + what); err != nil {
		return err
	}
	if a.Decision != Approved && a.Decision != Rejected {
		return fmt.Errorf("decide %s: unknown decision %q", what, a.Decision)
	}
	cur, err := t.Approval(a.Unit)
	if err != nil {
		return err
	}
	if cur.Decided() {
		return fmt.Errorf("decide %s: %w", what, ErrAlreadyDecided)
	}
	if cur.TimeoutAt != nil && (a.DecidedAt == nil || !a.DecidedAt.Before(*cur.TimeoutAt)) {
		return fmt.Errorf("decide %s: %w", what, ErrPastDeadline)
	}
	return t.execOne(what, decideApprovalQuery, approvalToRow(a))
}

const deleteApprovalQuery = `DELETE FROM approvals WHERE run_id = ? AND step_id = ? AND item_key = ?`

// AskAgain forgets the answer to a gate that failed (rejected, or timed
// out) as its step is reopened (`resume --retry-failed`): the gate asks
// again when it is reached. The caller records what the answer was in
// the run's audit log.
func (t *Tx) AskAgain(u Unit) error {
	what := "approval of " + unitName(u)
	if err := t.mustWrite("reopen " + what); err != nil {
		return err
	}
	if _, err := t.exec(deleteApprovalQuery, u.RunID, u.StepID, u.Item); err != nil {
		return fmt.Errorf("reopen %s: %w", what, err)
	}
	return nil
}
