package checkpoint

import (
	"database/sql"
	"fmt"
)

// dest returns pointers to the row's fields in the order of attemptColumns,
// for sql.Rows.Scan. Scanning by position instead of by column name (as
// sqlx's StructScan does) matters when inspect reads a run's whole history.
func (r *attemptRow) dest() []any {
	return []any{
		&r.RunID, &r.StepID, &r.ItemKey, &r.N, &r.Kind, &r.Status, &r.Class, &r.Error, &r.DetailsJSON, &r.Prompt,
		&r.StartedAt, &r.FinishedAt, &r.PID, &r.ExitCode, &r.SessionID, &r.CircuitGen, &r.DelayMS, &r.NextRetryAt,
		&r.RetryAfterMS, &r.RepairsJSON, &r.OutputFile, &r.FailedHandoff, &r.CostUSD, &r.Turns, &r.InputTokens,
		&r.OutputTokens, &r.HelpContext, &r.Uncounted, &r.Warning, &r.CachedTokens, &r.Agent, &r.Provenance, &r.Snapshot, &r.SnapshotAfter,
	}
}

// dest returns pointers to the row's fields in the order of stepColumns,
// for sql.Rows.Scan; the run loop reads a step in nearly every transaction.
func (r *stepRow) dest() []any {
	return []any{
		&r.RunID, &r.ID, &r.ItemKey, &r.Idx, &r.ItemIdx, &r.ItemJSON, &r.Agent, &r.Status, &r.MaxAttempts, &r.NextRetryAt, &r.DelayMS,
		&r.SessionID, &r.FreshSession, &r.HandoffJSON, &r.HelpRounds, &r.Advice, &r.CostUSD, &r.CostKnown, &r.Turns,
		&r.InputTokens, &r.OutputTokens, &r.UpdatedAt, &r.BaseCommit, &r.DecisionJSON, &r.CachedTokens,
	}
}

// queryRows runs query, through its prepared statement when the store has
// one.
func (t *Tx) queryRows(query string, args ...any) (*sql.Rows, error) {
	if t.stmts != nil {
		if st, ok := t.stmts.positional[query]; ok {
			rows, err := t.tx.StmtxContext(t.ctx, st).QueryContext(t.ctx, args...)
			return rows, t.note(err)
		}
	}
	rows, err := t.tx.QueryContext(t.ctx, t.engine.query(query), args...)
	return rows, t.note(err)
}

// attempts reads the attempts a query selects; its columns must be
// attemptColumns, in order.
func (t *Tx) attempts(what, query string, args ...any) (out []Attempt, err error) {
	rows, err := t.queryRows(query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer func() {
		if cerr := rows.Close(); cerr != nil && err == nil {
			out, err = nil, fmt.Errorf("read %s: %w", what, cerr)
		}
	}()
	// A whole run's history is read in chunks and copied once into a slice
	// of the exact length: growing one slice by doubling would copy every
	// attempt read so far each time. The first chunk is small: most
	// reads are of one unit's attempts, one or two, several per attempt.
	var (
		chunks [][]Attempt
		chunk  = make([]Attempt, 0, 2)
		total  int
		r      attemptRow
	)
	dest := r.dest()
	for rows.Next() {
		r = attemptRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		a, err := r.attempt()
		if err != nil {
			return nil, err
		}
		if len(chunk) == cap(chunk) {
			chunks = append(chunks, chunk)
			chunk = make([]Attempt, 0, min(2*cap(chunk), 1024))
		}
		chunk = append(chunk, a)
		total++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, t.note(err))
	}
	if len(chunks) == 0 {
		return chunk, nil
	}
	out = make([]Attempt, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, chunk...), nil
}

// oneAttempt reads the single attempt a query selects, or ErrNotFound.
func (t *Tx) oneAttempt(what, query string, args ...any) (*Attempt, error) {
	as, err := t.attempts(what, query, args...)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return &as[0], nil
}

// steps reads the steps a query selects; its columns must be stepColumns,
// in order.
func (t *Tx) steps(what, query string, args ...any) (out []Step, err error) {
	rows, err := t.queryRows(query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer func() {
		if cerr := rows.Close(); cerr != nil && err == nil {
			out, err = nil, fmt.Errorf("read %s: %w", what, cerr)
		}
	}()
	out = []Step{}
	var r stepRow
	dest := r.dest()
	for rows.Next() {
		r = stepRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		out = append(out, r.step())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, t.note(err))
	}
	return out, nil
}
