package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/jmoiron/sqlx"
)

// postgresMigrationLock is the key of the advisory lock that makes
// processes migrating one PostgreSQL database take turns: the bytes of
// "cadence" read as a number.
const postgresMigrationLock int64 = 0x63616465_6e6365

// postgresNewerSchema names the database in a *NewerSchemaError.
const postgresNewerSchema = "the PostgreSQL state database"

// createSchemaVersion creates the table that records the migrations
// applied to a PostgreSQL database, one row each; the highest version is
// the schema version. It is PostgreSQL's PRAGMA user_version.
const createSchemaVersion = `CREATE TABLE IF NOT EXISTS schema_version (
	version    BIGINT NOT NULL PRIMARY KEY CHECK (version >= 1),
	name       TEXT   NOT NULL,
	applied_at TEXT   NOT NULL
)`

// migratePostgres brings a PostgreSQL database up to the newest migration
// in fsys. Each migration runs in its own transaction together with the
// schema_version row that records it, so a crash leaves either all of it
// or none. The transaction first takes the migration lock and reads the
// version again, so two processes opening the same new database cannot
// apply a migration twice.
func migratePostgres(ctx context.Context, db *sqlx.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	want := ms[len(ms)-1].version
	have, err := postgresSchemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if have > want {
		return &NewerSchemaError{Have: have, Want: want, what: postgresNewerSchema}
	}
	for _, m := range ms[have:] {
		if err := applyPostgresMigration(ctx, db, m, want); err != nil {
			return err
		}
	}
	return nil
}

func applyPostgresMigration(ctx context.Context, db *sqlx.DB, m migration, want int) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: begin: %w", m.name, err)
	}
	defer tx.Rollback()
	// Held until commit. READ COMMITTED: the statements after it see what
	// a process that held it before us committed.
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", postgresMigrationLock); err != nil {
		return fmt.Errorf("migration %s: take the migration lock: %w", m.name, classify(err))
	}
	if _, err := tx.ExecContext(ctx, createSchemaVersion); err != nil {
		return fmt.Errorf("migration %s: create schema_version: %w", m.name, err)
	}
	var have int
	if err := tx.GetContext(ctx, &have, "SELECT COALESCE(MAX(version), 0) FROM schema_version"); err != nil {
		return fmt.Errorf("migration %s: read schema version: %w", m.name, err)
	}
	if have > want {
		return &NewerSchemaError{Have: have, Want: want, what: postgresNewerSchema}
	}
	if have >= m.version {
		return nil // applied meanwhile by another process
	}
	// Without parameters, pgx sends the file as one simple query, so a
	// migration may hold several statements.
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
		m.version, m.name, formatTime(time.Now())); err != nil {
		return fmt.Errorf("migration %s: record version: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.name, err)
	}
	return nil
}

// checkReadablePostgres refuses a PostgreSQL database this binary cannot
// read: one from a newer cadence, or one cadence never initialised.
func checkReadablePostgres(ctx context.Context, db *sqlx.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	have, err := postgresSchemaVersion(ctx, db)
	if err != nil {
		return err
	}
	minReadable := readableFrom(ms, minReadablePostgresSchema)
	return olderWithoutRuns(ctx, db, readable(have, ms[len(ms)-1].version, minReadable, postgresNewerSchema), have, minReadable)
}

// postgresSchemaVersion returns the highest migration recorded in
// schema_version, or 0 when the table does not exist yet.
func postgresSchemaVersion(ctx context.Context, db sqlx.QueryerContext) (int, error) {
	var exists bool
	if err := sqlx.GetContext(ctx, db, &exists, "SELECT to_regclass('schema_version') IS NOT NULL"); err != nil {
		return 0, fmt.Errorf("read schema version: %w", classify(err))
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := sqlx.GetContext(ctx, db, &v, "SELECT COALESCE(MAX(version), 0) FROM schema_version"); err != nil {
		return 0, fmt.Errorf("read schema version: %w", classify(err))
	}
	return v, nil
}
