package checkpoint

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/cadence-dev/cadence/internal/pgtest"
	"github.com/cadence-dev/cadence/migrations"
)

// pg is the PostgreSQL cluster of this test binary, started by the first
// test that needs it and stopped by TestMain.
var pg pgtest.Shared

// openPostgresSchema returns a connection to a fresh PostgreSQL database
// holding the schema of every PostgreSQL migration.
func openPostgresSchema(t *testing.T) *sqlx.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlx.Open("pgx", pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms, err := loadMigrations(migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := fs.Stat(migrations.Postgres, "0001_init.sql"); err != nil {
		t.Fatal(err)
	}
	return db
}
