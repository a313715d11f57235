package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Tx is one transaction on the store, handed to the function given to
// Store.Update (reads and writes) or Store.View (reads only). It is valid
// only until that function returns and must not be used concurrently.
type Tx struct {
	ctx      context.Context
	tx       *sqlx.Tx
	stmts    *statements
	engine   engine
	writable bool
	project  string // the store's project (Store.SetProject)
	// On PostgreSQL a statement that fails aborts the whole transaction
	// (on SQLite only the statement is undone). aborted keeps the first
	// such error, so that a function that went on as if nothing happened
	// is told why its transaction cannot commit; conflict records that it
	// was a serialization failure or a deadlock, even if fn went on to
	// return some other error: the whole function is then run again.
	aborted  error
	conflict bool
	// insertedSteps counts the rows of steps the transaction inserted (a
	// run's steps, a map's items), for the store's work after its commit
	// (analyzeStepsIfStale).
	insertedSteps int
	// checked is the last lease CheckLease found held, until a lease is
	// written (putLease): ReleaseLease does not read it again.
	checked *checkedLease
	// lastAttempt is, per unit, the number of its last attempt as this
	// transaction read or wrote it (lastAttemptNumber).
	lastAttempt map[Unit]int
}

// mustWrite refuses a write inside View.
func (t *Tx) mustWrite(op string) error {
	if !t.writable {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return nil
}

// note records, on PostgreSQL, that a statement failed with err, and
// returns err unchanged.
func (t *Tx) note(err error) error {
	if err == nil || t.engine != enginePostgres || pgCode(err) == "" {
		return err
	}
	if t.aborted == nil {
		t.aborted = err
	}
	if isConflict(err) {
		t.conflict = true
	}
	return err
}

// queryer returns what runs query in this transaction, and the text to
// give it: the statement the store prepared for it, bound to the
// transaction, or the transaction itself with the query's text for this
// engine, parsed on every call.
func (t *Tx) queryer(query string) (sqlx.QueryerContext, string) {
	if t.stmts != nil {
		if st, ok := t.stmts.positional[query]; ok {
			return preparedQueryer{t.tx.StmtxContext(t.ctx, st)}, query
		}
	}
	return t.tx, t.engine.query(query)
}

// getRow reads one row of query into dst.
func (t *Tx) getRow(dst any, query string, args ...any) error {
	q, text := t.queryer(query)
	return t.note(sqlx.GetContext(t.ctx, q, dst, text, args...))
}

// selectRows reads every row of query into dst, a pointer to a slice.
func (t *Tx) selectRows(dst any, query string, args ...any) error {
	q, text := t.queryer(query)
	return t.note(sqlx.SelectContext(t.ctx, q, dst, text, args...))
}

// exec runs a write with "?" parameters.
func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(t.ctx, t.engine.query(query), args...)
	return res, t.note(err)
}

// namedExec runs a write with ":name" parameters taken from arg.
func (t *Tx) namedExec(query string, arg any) (sql.Result, error) {
	if t.stmts != nil {
		if st, ok := t.stmts.named[query]; ok {
			res, err := t.tx.NamedStmtContext(t.ctx, st).ExecContext(t.ctx, arg)
			return res, t.note(err)
		}
	}
	res, err := t.tx.NamedExecContext(t.ctx, query, arg)
	return res, t.note(err)
}

// get reads one row into dst, mapping "no rows" to ErrNotFound.
func (t *Tx) get(dst any, what, query string, args ...any) error {
	if err := t.getRow(dst, query, args...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// execOne runs a named write that must touch exactly one row; touching none
// is ErrNotFound.
func (t *Tx) execOne(what, query string, arg any) error {
	res, err := t.namedExec(query, arg)
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("write %s: %w", what, ErrNotFound)
	}
	return nil
}

// preparedQueryer runs a prepared statement through the sqlx.QueryerContext
// interface, so sqlx.GetContext and sqlx.SelectContext can scan its rows.
// The query text it is given is the statement's own and is ignored.
type preparedQueryer struct{ st *sqlx.Stmt }

func (p preparedQueryer) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return p.st.QueryContext(ctx, args...)
}

func (p preparedQueryer) QueryxContext(ctx context.Context, _ string, args ...any) (*sqlx.Rows, error) {
	return p.st.QueryxContext(ctx, args...)
}

func (p preparedQueryer) QueryRowxContext(ctx context.Context, _ string, args ...any) *sqlx.Row {
	return p.st.QueryRowxContext(ctx, args...)
}
