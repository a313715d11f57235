package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when a requested run, step, attempt or circuit
	// does not exist.
	ErrNotFound = errors.New("not found")

	// ErrNoDatabase is returned by OpenReadOnly when there is no state
	// database yet (nothing has run in the project).
	ErrNoDatabase = errors.New("no cadence state database")

	// ErrNotSQLite is returned when the state file exists but is not a
	// SQLite database (or is damaged beyond opening).
	ErrNotSQLite = errors.New("not a SQLite database")
	// ErrCorrupt is returned when SQLite finds the database damaged
	// (SQLITE_CORRUPT): a truncated or overwritten file.
	ErrCorrupt = errors.New("the state database is damaged")

	// ErrBusy is returned when the database stayed busy too long for a
	// write: on SQLite, another connection held the write lock past the
	// busy timeout; on PostgreSQL, a row lock was held past lock_timeout,
	// or the transaction kept conflicting with concurrent ones.
	ErrBusy = errors.New("the state database is busy")

	// ErrReadOnly is returned by a write attempted inside View or on a store
	// opened with OpenReadOnly.
	ErrReadOnly = errors.New("write in a read-only transaction")

	// ErrStateReplaced is returned by a write to a SQLite state file that
	// was deleted, or replaced by another file, since the store opened it:
	// the commit would go to a file nobody will ever read again, so it is
	// refused, and the process must stop.
	ErrStateReplaced = errors.New("the state database was deleted or replaced while cadence ran")

	// ErrLockGone is returned by Lock.Check, and by every write of a store
	// the lock guards (Store.Guard), once the lock file was deleted or
	// replaced: another process may now take the lock on the new file, so
	// the holder must stop.
	ErrLockGone = errors.New("the project lock file was deleted or replaced while cadence held it")

	// ErrAttemptNumber is returned by InsertAttempt when the attempt's number
	// is not one more than the step's last attempt.
	ErrAttemptNumber = errors.New("attempt number out of sequence")
)

// NewerSchemaError reports a database written by a newer cadence, whose
// schema this binary does not know. Refusing it protects the newer data.
// The versions are those of the database's engine: SQLite and PostgreSQL
// number their migrations apart.
type NewerSchemaError struct {
	Have int    // schema version found in the database
	Want int    // highest schema version this binary knows
	what string // the database, "" for state.db
}

func (e *NewerSchemaError) Error() string {
	what := e.what
	if what == "" {
		what = "state.db"
	}
	return fmt.Sprintf("%s was written by a newer cadence (schema %d, this binary knows %d); upgrade cadence", what, e.Have, e.Want)
}
