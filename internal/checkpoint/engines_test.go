package checkpoint

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/cadence-dev/cadence/internal/pgtest"
	"github.com/cadence-dev/cadence/migrations"
)

// pg is the PostgreSQL cluster of this test binary, started by the first
// test that needs it and stopped by TestMain.
var pg pgtest.Shared

// testEngine is a database engine the store's tests run against. The tests
// of behaviour that does not depend on the engine run once per engine
// (forEachEngine); the tests of SQLite itself (pragmas, WAL, query plans,
// the hot journal, damaged files) stay SQLite-only and say so.
type testEngine struct {
	name string
	// target returns the address of a new, empty database: a file path
	// for SQLite, a URL for PostgreSQL.
	target func(t *testing.T) string
	// driver opens target with the plain driver, bypassing the store.
	driver string
	// migrations are the engine's embedded migration files; migrate and
	// version apply them and read the schema version.
	migrations fs.FS
	migrate    func(ctx context.Context, db *sqlx.DB, fsys fs.FS) error
	version    func(t *testing.T, db *sqlx.DB) int
	setVersion func(t *testing.T, db *sqlx.DB, v int)
	// tables counts the tables of the database that cadence did not make
	// for its own bookkeeping.
	tables func(t *testing.T, db *sqlx.DB) int
}

var (
	sqliteEngine = testEngine{
		name:       "sqlite",
		target:     func(t *testing.T) string { return filepath.Join(t.TempDir(), "state.db") },
		driver:     "sqlite",
		migrations: migrations.FS,
		migrate:    migrate,
		version: func(t *testing.T, db *sqlx.DB) int {
			return getInt(t, db, "PRAGMA user_version")
		},
		setVersion: func(t *testing.T, db *sqlx.DB, v int) {
			mustExec(t, db, "PRAGMA user_version = "+strconv.Itoa(v))
		},
		tables: func(t *testing.T, db *sqlx.DB) int {
			return getInt(t, db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
		},
	}
	postgresEngine = testEngine{
		name:       "postgres",
		target:     func(t *testing.T) string { return pg.NewDatabase(t) },
		driver:     "pgx",
		migrations: migrations.Postgres,
		migrate:    migratePostgres,
		version: func(t *testing.T, db *sqlx.DB) int {
			v, err := postgresSchemaVersion(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			return v
		},
		setVersion: func(t *testing.T, db *sqlx.DB, v int) {
			mustExec(t, db, "INSERT INTO schema_version (version, name, applied_at) VALUES ("+strconv.Itoa(v)+", 'future', '')")
		},
		tables: func(t *testing.T, db *sqlx.DB) int {
			return getInt(t, db, `SELECT count(*) FROM information_schema.tables
				WHERE table_schema = current_schema() AND table_name <> 'schema_version'`)
		},
	}
	testEngines = []testEngine{sqliteEngine, postgresEngine}
)

// forEachEngine runs fn as a subtest per engine.
func forEachEngine(t *testing.T, fn func(t *testing.T, e testEngine)) {
	t.Helper()
	for _, e := range testEngines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

// newStore opens a store on a new, empty database of the engine.
func (e testEngine) newStore(t *testing.T) *Store {
	t.Helper()
	return openStore(t, e.target(t))
}

// openStore opens the store at target and closes it when the test ends.
func openStore(t *testing.T, target string) *Store {
	t.Helper()
	s, err := Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// raw opens target with the plain driver, to look at or tamper with the
// database the way another program could.
func (e testEngine) raw(t *testing.T, target string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open(e.driver, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func getInt(t *testing.T, db *sqlx.DB, query string) int {
	t.Helper()
	var n int
	if err := db.Get(&n, query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func mustExec(t *testing.T, db *sqlx.DB, query string) {
	t.Helper()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// openPostgresSchema returns the connection pool of a store opened on a
// fresh PostgreSQL database: the schema of every PostgreSQL migration.
func openPostgresSchema(t *testing.T) *sqlx.DB {
	t.Helper()
	return postgresEngine.newStore(t).db
}
