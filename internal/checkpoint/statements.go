package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// statements holds the queries of the run loop's hot path, each compiled
// once when the store opens: SQLite parses and plans a statement only the
// first time, and a named query's ":name" parameters are translated to "?"
// once instead of on every call. A transaction binds a statement to itself
// with sqlx.Tx.StmtxContext, which reuses the statement already prepared on
// the store's single connection.
//
// The maps are written only while the store opens and read afterwards, so
// they need no lock.
type statements struct {
	positional map[string]*sqlx.Stmt      // by query text, "?" parameters
	named      map[string]*sqlx.NamedStmt // by query text, ":name" parameters
}

// readQueries are prepared on every store; writeQueries only on a writable
// one. Queries missing from both still work, parsed on each call.
var (
	readQueries = []string{
		latestRunQuery, latestUnfinishedRunQuery, runQuery, runStatusQuery, runCostQuery,
		stepsQuery, itemsQuery, stepQuery, stepStatusQuery,
		lastAttemptNumberQuery, attemptStatusQuery, countCountedQuery, countAttemptsQuery,
		lastAttemptQuery, runningAttemptsQuery, attemptQuery, stepAttemptsQuery,
		allAttemptsQuery, allAttemptsBriefQuery,
		circuitQuery, circuitsQuery,
		lastCheckSeqQuery, checkStatusQuery, attemptChecksQuery, runChecksQuery,
		fenceQuery, leaseQuery,
	}
	writeNamedQueries = []string{
		insertAttemptQuery, updateAttemptQuery, updateStepQuery, putCircuitQuery, updateRunQuery,
		insertCheckQuery, updateCheckQuery, insertStepQuery, putLeaseQuery,
	}
)

// prepareStatements compiles the store's statements on db. A query that does
// not prepare (a read-only store opened on an older schema that lacks a
// column) is left out and fails, as before, when it is used; a cancelled
// context or a closed database is an error.
func prepareStatements(ctx context.Context, db *sqlx.DB, readOnly bool) (*statements, error) {
	st := &statements{
		positional: make(map[string]*sqlx.Stmt, len(readQueries)),
		named:      make(map[string]*sqlx.NamedStmt, len(writeNamedQueries)),
	}
	for _, q := range readQueries {
		s, err := db.PreparexContext(ctx, q)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, errors.Join(fmt.Errorf("prepare statements: %w", ctxErr), st.close())
			}
			continue
		}
		st.positional[q] = s
	}
	if readOnly {
		return st, nil
	}
	for _, q := range writeNamedQueries {
		s, err := db.PrepareNamedContext(ctx, q)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, errors.Join(fmt.Errorf("prepare statements: %w", ctxErr), st.close())
			}
			continue
		}
		st.named[q] = s
	}
	return st, nil
}

// close releases every prepared statement.
func (st *statements) close() error {
	if st == nil {
		return nil
	}
	var errs []error
	for q, s := range st.positional {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
		delete(st.positional, q)
	}
	for q, s := range st.named {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
		delete(st.named, q)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close prepared statements: %w", err)
	}
	return nil
}
