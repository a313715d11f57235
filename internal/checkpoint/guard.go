package checkpoint

import (
	"fmt"
	"slices"
)

// A status change is written by one guarded statement, "UPDATE … WHERE
// key AND status IN (the statuses the transition tables allow the change
// from)", instead of a read of the status, a check of the transition,
// then the write: on PostgreSQL one round trip instead of two for every
// UpdateStep and UpdateAttempt. When the guard matches no row (no such
// row, or a change the tables forbid), nothing was written, and the
// status is read to say which, with the same error as the check before
// the write gave. The statement reads the row it writes, so at
// SERIALIZABLE a concurrent change of its status still fails the
// transaction, as the separate read made it.

// guardSize is how many statuses a guard names: the most statuses of one
// type, so that any set of them fits.
const guardSize = 6

// statusGuard is the set of statuses a guarded update may find its row
// in, as the statement's named parameters; unused places repeat a status
// of the set.
type statusGuard struct {
	From1 string `db:"from_1"`
	From2 string `db:"from_2"`
	From3 string `db:"from_3"`
	From4 string `db:"from_4"`
	From5 string `db:"from_5"`
	From6 string `db:"from_6"`
}

// guardCondition is the statement's condition on the status column.
const guardCondition = ` AND status IN (:from_1, :from_2, :from_3, :from_4, :from_5, :from_6)`

// guardTo returns the guard of a change to status to: every status of
// table that may move to it. ok is false when there is none or when to is
// not a status of table (the change then cannot be written, and the caller
// reports why).
func guardTo[S ~string](table map[S][]S, to S) (g statusGuard, ok bool) {
	if _, known := table[to]; !known {
		return g, false
	}
	var from []string
	for s, next := range table {
		if slices.Contains(next, to) {
			from = append(from, string(s))
		}
	}
	if len(from) == 0 || len(from) > guardSize {
		return g, false
	}
	slices.Sort(from)
	for len(from) < guardSize {
		from = append(from, from[0])
	}
	return statusGuard{from[0], from[1], from[2], from[3], from[4], from[5]}, true
}

// guardOf is the guard of the one status from.
func guardOf(from string) statusGuard {
	return statusGuard{from, from, from, from, from, from}
}

// execOnceMore runs guarded update query with arg, whose guard is the
// status from the transaction just read, after the first guard wrote
// nothing: it must write the row now, since the transaction's read of it
// holds.
func (t *Tx) execOnceMore(what, query string, arg any, from, to string) error {
	wrote, err := t.execGuarded(what, query, arg)
	if err == nil && !wrote {
		err = fmt.Errorf("update %s: the change from %s to %s is allowed but wrote no row", what, from, to)
	}
	return err
}

// execGuarded runs guarded update query with arg and reports whether it
// wrote a row; more than one row is an error (the guard's key names one).
func (t *Tx) execGuarded(what, query string, arg any) (bool, error) {
	res, err := t.namedExec(query, arg)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("write %s: %w", what, err)
	}
	if n > 1 {
		return false, fmt.Errorf("write %s: %d rows changed, want one", what, n)
	}
	return n == 1, nil
}
