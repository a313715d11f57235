package checkpoint

import (
	"fmt"
	"time"
)

// pruneTables are the tables that hold a run's rows, each a child of the
// ones after it (foreign keys), so that deleting in this order never
// breaks one. Circuits belong to agent entries, not to runs, and stay.
var pruneTables = []string{
	"attempt_documents", "checks", "session_messages", "approvals", "dead_letters",
	"deliveries", "leases", "events", "attempts", "steps",
}

// Pruned counts the rows DeleteRun removed, by table.
type Pruned map[string]int64

// Finished reports whether a run's status is final: nothing will ever
// resume it, so its rows and files may be removed.
func Finished(status RunStatus) bool {
	switch status {
	case RunSucceeded, RunFailed, RunAbandoned, RunCancelled:
		return true
	}
	return false
}

// FinishedRunsBefore returns the finished runs (Finished) that ended
// before t, oldest first; a run that ended without a finish time counts
// from its last update.
func (t *Tx) FinishedRunsBefore(before time.Time) ([]Run, error) {
	runs, err := t.Runs()
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, r := range runs {
		end := r.UpdatedAt
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		if Finished(r.status) && end.Before(before) {
			out = append(out, r)
		}
	}
	return out, nil
}

// DeleteRun removes every row of run runID, which must be finished, in
// this transaction: the run is gone at once or not at all, so a crash
// in the middle of a prune never leaves a run half there for inspect to
// trip on. The files the run wrote under .cadence/ are the caller's to
// remove, after the commit (a crash in between leaves only files that
// belong to no run).
func (t *Tx) DeleteRun(runID string) (Pruned, error) {
	what := "run " + runID
	if err := t.mustWrite("delete " + what); err != nil {
		return nil, err
	}
	r, err := t.Run(runID)
	if err != nil {
		return nil, err
	}
	if !Finished(r.status) {
		return nil, fmt.Errorf("delete %s: it is %s, not finished", what, r.status)
	}
	out := Pruned{}
	t.lastAttempt = nil // the attempts read so far may be deleted below
	for _, table := range append(pruneTables, "runs") {
		col := "run_id"
		if table == "runs" {
			col = "id"
		}
		res, err := t.exec(`DELETE FROM `+table+` WHERE `+col+` = ?`, runID)
		if err != nil {
			return nil, fmt.Errorf("delete %s from %s: %w", what, table, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("delete %s from %s: %w", what, table, err)
		}
		out[table] = n
	}
	return out, nil
}
