package checkpoint

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/cadence-dev/cadence/internal/pgtest"
)

// pg is the PostgreSQL cluster of this test binary, started by the first
// test that needs it and stopped by TestMain.
var pg pgtest.Shared

// openPostgresSchema returns the connection pool of a store opened on a
// fresh PostgreSQL database: the schema of every PostgreSQL migration.
func openPostgresSchema(t *testing.T) *sqlx.DB {
	t.Helper()
	s, err := Open(context.Background(), pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.db
}
