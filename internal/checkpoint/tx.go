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
	writable bool
}

// mustWrite refuses a write inside View.
func (t *Tx) mustWrite(op string) error {
	if !t.writable {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return nil
}

// get reads one row into dst, mapping "no rows" to ErrNotFound.
func (t *Tx) get(dst any, what, query string, args ...any) error {
	if err := t.tx.GetContext(t.ctx, dst, query, args...); err != nil {
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
	res, err := t.tx.NamedExecContext(t.ctx, query, arg)
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
