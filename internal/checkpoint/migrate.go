package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

// minReadableSchema and minReadablePostgresSchema are the oldest schemas
// OpenReadOnly can read without migrating, on SQLite and on PostgreSQL.
// Raise one when a migration changes what the read queries need: the
// attempts' snapshot columns (SQLite 0019, PostgreSQL 0013) are read by
// every query of attempts.
const (
	minReadableSchema         = 19
	minReadablePostgresSchema = 13
)

// projectsMigration names the migration that gave runs and breakers their
// project (…_projects.sql): every read query names the project, so a
// read-only store needs at least that schema. It is found by name, not
// by number, so that renumbering the files keeps it right.
const projectsMigration = "_projects.sql"

// readableFrom returns the oldest schema a read-only store can read:
// floor, or the version of projectsMigration when that is later.
func readableFrom(ms []migration, floor int) int {
	for _, m := range ms {
		if strings.HasSuffix(m.name, projectsMigration) && m.version > floor {
			return m.version
		}
	}
	return floor
}

// migration is one numbered SQL file of the migrations directory.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// loadMigrations reads the NNNN_name.sql files of fsys in version order.
// Versions must run 1, 2, 3… without gaps or duplicates, so the schema
// version (PRAGMA user_version) always names exactly the files applied.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %q: name must be NNNN_name.sql (lower case)", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("migration %q: %w", e.Name(), err)
		}
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %04d (versions must be 1, 2, 3… without gaps or duplicates)", m.name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations found")
	}
	return ms, nil
}

// migrate brings the database up to the newest migration in fsys. Each
// migration runs in its own BEGIN IMMEDIATE transaction together with the
// user_version bump that records it, so a crash leaves either all of it or
// none. The version is re-read inside the transaction, so two processes
// opening the same new database cannot apply a migration twice.
func migrate(ctx context.Context, db *sqlx.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	want := ms[len(ms)-1].version
	have, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if have > want {
		return &NewerSchemaError{Have: have, Want: want}
	}
	for _, m := range ms[have:] {
		if err := applyMigration(ctx, db, m, want); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sqlx.DB, m migration, want int) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: begin: %w", m.name, err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.GetContext(ctx, &have, "PRAGMA user_version"); err != nil {
		return fmt.Errorf("migration %s: read schema version: %w", m.name, err)
	}
	if have > want {
		return &NewerSchemaError{Have: have, Want: want}
	}
	if have >= m.version {
		return nil // applied meanwhile by another process
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if strings.Contains(m.sql, "writable_schema") {
		// A definition edited in place: every connection must read it
		// again, which a new schema_version makes them do.
		var v int
		if err := tx.GetContext(ctx, &v, "PRAGMA schema_version"); err != nil {
			return fmt.Errorf("migration %s: read schema_version: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA schema_version = "+strconv.Itoa(v+1)); err != nil {
			return fmt.Errorf("migration %s: bump schema_version: %w", m.name, err)
		}
		var ok string
		if err := tx.GetContext(ctx, &ok, "PRAGMA quick_check"); err != nil || ok != "ok" {
			return fmt.Errorf("migration %s: the edited schema does not check: %v %s", m.name, err, ok)
		}
	}
	// PRAGMA takes no bound parameters; the version is an integer we parsed.
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.version)); err != nil {
		return fmt.Errorf("migration %s: record version: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.name, err)
	}
	return nil
}

// checkReadable refuses a database this binary cannot read: one from a newer
// cadence, or one cadence never initialised.
func checkReadable(ctx context.Context, db *sqlx.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	have, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	minReadable := readableFrom(ms, minReadableSchema)
	return olderWithoutRuns(ctx, db, readable(have, ms[len(ms)-1].version, minReadable, ""), have, minReadable)
}

// olderWithoutRuns turns the refusal of a schema too old to read into
// ErrNoDatabase when the database holds no run: there is nothing to read,
// and a database that the first cadence process is creating, whose
// migrations a reader sees half-applied, is one of these.
func olderWithoutRuns(ctx context.Context, db *sqlx.DB, err error, have, minReadable int) error {
	if err == nil || have == 0 || have >= minReadable {
		return err
	}
	var runs int
	if qerr := db.GetContext(ctx, &runs, "SELECT COUNT(*) FROM (SELECT 1 FROM runs LIMIT 1) r"); qerr == nil && runs == 0 {
		return fmt.Errorf("%w (its schema is still being created)", ErrNoDatabase)
	}
	return err
}

// readable refuses schema version have when this binary, which knows up to
// want, cannot read it without migrating. what names the database in a
// *NewerSchemaError.
func readable(have, want, minReadable int, what string) error {
	switch {
	case have > want:
		return &NewerSchemaError{Have: have, Want: want, what: what}
	case have == 0 && what == "":
		return fmt.Errorf("%w (the file has no cadence schema)", ErrNoDatabase)
	case have == 0:
		return fmt.Errorf("%w (the database has no cadence schema)", ErrNoDatabase)
	case have < minReadable:
		return fmt.Errorf("the state has schema %d, older than this cadence's %d, and a command that only reads it does not upgrade it: "+
			"run `cadence resume` once, as a user who can write the state, to upgrade it (it upgrades even when there is nothing to resume)", have, want)
	}
	return nil
}

func schemaVersion(ctx context.Context, db *sqlx.DB) (int, error) {
	var v int
	if err := db.GetContext(ctx, &v, "PRAGMA user_version"); err != nil {
		return 0, fmt.Errorf("read schema version: %w", classify(err))
	}
	return v, nil
}
