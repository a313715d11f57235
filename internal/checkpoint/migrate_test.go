package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"

	"github.com/cadence-dev/cadence/migrations"
)

// rawDB opens path with the plain driver, bypassing the store, to look at or
// tamper with the database the way another program could.
func rawDB(t *testing.T, path string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lastVersion is the newest schema version of a set of migrations.
func lastVersion(t *testing.T, fsys fs.FS) int {
	t.Helper()
	ms, err := loadMigrations(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return ms[len(ms)-1].version
}

func TestOpenAppliesMigrationsOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		want := lastVersion(t, e.migrations)

		for i := range 3 { // the first open migrates, the later ones must not
			s, err := Open(ctx, target)
			if err != nil {
				t.Fatalf("open #%d: %v", i+1, err)
			}
			version, tables := e.version(t, s.db), e.tables(t, s.db)
			// runs, steps, attempts, circuits, events, session_messages,
			// checks, dead_letters, leases, attempt_documents, approvals,
			// deliveries.
			if version != want || tables != 12 {
				t.Fatalf("open #%d: schema version %d with %d tables, want %d with 12", i+1, version, tables, want)
			}
			if i == 0 {
				seedRun(t, s, "r1", t0, "plan")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		s, err := OpenReadOnly(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		view(t, s, func(tx *Tx) error {
			runs, err := tx.Runs()
			if len(runs) != 1 || runs[0].ID != "r1" {
				t.Errorf("after reopening: runs %+v, want just r1", runs)
			}
			return err
		})
	})
}

// Processes that open one new database at once apply each migration once:
// every open succeeds and the schema is the same as after one.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		const n = 4
		errs := make(chan error, n)
		stores := make(chan *Store, n)
		for range n {
			go func() {
				s, err := Open(ctx, target)
				if err == nil {
					stores <- s
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		close(stores)
		for s := range stores {
			if got, want := e.version(t, s.db), lastVersion(t, e.migrations); got != want {
				t.Errorf("schema version %d, want %d", got, want)
			}
			s.Close()
		}
	})
}

func TestMigrateAppliesOnlyNewFiles(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		db := e.raw(t, e.target(t))
		v1 := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")}}
		v2 := fstest.MapFS{
			"0001_a.sql": v1["0001_a.sql"],
			"0002_b.sql": {Data: []byte("CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1);")},
		}
		for _, step := range []struct {
			fsys        fstest.MapFS
			wantVersion int
		}{{v1, 1}, {v1, 1}, {v2, 2}, {v2, 2}} {
			if err := e.migrate(ctx, db, step.fsys); err != nil {
				t.Fatal(err)
			}
			if version := e.version(t, db); version != step.wantVersion {
				t.Fatalf("version %d, want %d", version, step.wantVersion)
			}
			// 0002 inserts one row; applying it twice would insert two.
			if step.wantVersion == 2 {
				if rows := getInt(t, db, "SELECT count(*) FROM a"); rows != 1 {
					t.Fatalf("table a has %d rows, want 1: a migration ran twice", rows)
				}
			}
		}
	})
}

func TestMigrateFailureLeavesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		db := e.raw(t, e.target(t))
		bad := fstest.MapFS{"0001_bad.sql": {Data: []byte("CREATE TABLE a (x INTEGER); CREATE TABLE oops (;")}}
		if err := e.migrate(ctx, db, bad); err == nil || !strings.Contains(err.Error(), "0001_bad.sql") {
			t.Fatalf("migrate: %v, want an error naming 0001_bad.sql", err)
		}
		version, tables := e.version(t, db), e.tables(t, db)
		if version != 0 || tables != 0 {
			t.Fatalf("after a failed migration: version %d, %d tables; want 0 and 0", version, tables)
		}
	})
}

func TestLoadMigrationsRejectsBadSets(t *testing.T) {
	sql := &fstest.MapFile{Data: []byte("SELECT 1;")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"empty", fstest.MapFS{}, "no migrations"},
		{"bad name", fstest.MapFS{"init.sql": sql}, `"init.sql"`},
		{"gap", fstest.MapFS{"0001_a.sql": sql, "0003_c.sql": sql}, "0003_c.sql: expected version 0002"},
		{"duplicate", fstest.MapFS{"0001_a.sql": sql, "0001_b.sql": sql}, "expected version 0002"},
		{"not from one", fstest.MapFS{"0002_a.sql": sql}, "expected version 0001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadMigrations(tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("loadMigrations: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		s, err := Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		want := lastVersion(t, e.migrations)
		e.setVersion(t, s.db, 99)
		s.Close()

		for name, open := range map[string]func(context.Context, string) (*Store, error){
			"Open": Open, "OpenReadOnly": OpenReadOnly,
		} {
			t.Run(name, func(t *testing.T) {
				s, err := open(ctx, target)
				if err == nil {
					s.Close()
					t.Fatal("opened a database from a newer cadence")
				}
				var newer *NewerSchemaError
				if !errors.As(err, &newer) || newer.Have != 99 || newer.Want != want {
					t.Fatalf("error %v, want NewerSchemaError{99, %d}", err, want)
				}
				wantMsg := map[string]string{
					"sqlite":   "state.db was written by a newer cadence (schema 99, this binary knows %d); upgrade cadence",
					"postgres": "the PostgreSQL state database was written by a newer cadence (schema 99, this binary knows %d); upgrade cadence",
				}[e.name]
				if wantMsg = fmt.Sprintf(wantMsg, want); err.Error() != wantMsg {
					t.Fatalf("message %q, want %q", err.Error(), wantMsg)
				}
			})
		}
		// Refusing must not have touched the version.
		if v := e.version(t, e.raw(t, target)); v != 99 {
			t.Fatalf("schema version %d after refusal, want 99", v)
		}
	})
}

// SQLite only: a file that is not a database.
func TestGarbageFileIsRefused(t *testing.T) {
	ctx := context.Background()
	fixture, err := os.ReadFile(filepath.Join("testdata", "not_a_database.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(context.Context, string) (*Store, error){
		"Open": Open, "OpenReadOnly": OpenReadOnly,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := open(ctx, path)
			if err == nil {
				s.Close()
				t.Fatal("opened a text file as a database")
			}
			if !errors.Is(err, ErrNotSQLite) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q, want ErrNotSQLite naming %s", err, path)
			}
		})
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(fixture) {
		t.Fatalf("the refused file was modified (%v)", err)
	}
}

func TestOpenReadOnlyWithoutDatabase(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		missing := filepath.Join(dir, "state.db")
		if _, err := OpenReadOnly(ctx, missing); !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("missing file: %v, want ErrNoDatabase", err)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("OpenReadOnly created %s", missing)
		}

		empty := filepath.Join(dir, "empty.db")
		if err := os.WriteFile(empty, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenReadOnly(ctx, empty); !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("empty file: %v, want ErrNoDatabase", err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		missing := pg.Cluster(t).URL("no_such_database")
		if _, err := OpenReadOnly(ctx, missing); !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("missing database: %v, want ErrNoDatabase", err)
		}
		empty := postgresEngine.target(t)
		if _, err := OpenReadOnly(ctx, empty); !errors.Is(err, ErrNoDatabase) {
			t.Fatalf("database without cadence's tables: %v, want ErrNoDatabase", err)
		}
		if n := postgresEngine.tables(t, postgresEngine.raw(t, empty)); n != 0 {
			t.Fatalf("OpenReadOnly created %d tables", n)
		}
	})
}

func TestReadOnlyStoreRefusesWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		s, err := Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		ro, err := OpenReadOnly(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		err = ro.Update(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("r", t0), nil) })
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Update on a read-only store: %v, want ErrReadOnly", err)
		}
		// Even a write that slips past the store is refused by the database.
		if _, err := ro.db.Exec("DELETE FROM runs"); err == nil {
			t.Fatal("a read-only connection accepted a write")
		}
	})
}

// A state.db written before map steps (schema 5) keeps every row through
// 0006, which rebuilds the tables that hold the step key: the steps,
// attempts and session messages read back as a step's own (item key "").
// SQLite only: PostgreSQL's schema starts with map items.
func TestMigrateToMapItemsKeepsHistory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := rawDB(t, path)
	if _, err := db.Exec("PRAGMA foreign_keys = ON"); err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_session_messages.sql", "0003_uncounted_attempts.sql",
		"0004_running_attempts.sql", "0005_checks.sql"} {
		b, err := migrations.FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = &fstest.MapFile{Data: b}
	}
	if err := migrate(ctx, db, before); err != nil {
		t.Fatal(err)
	}
	ts := "2026-11-01T10:00:00.000000000Z"
	for _, q := range []string{
		`INSERT INTO runs VALUES ('r', 'running', 'wf', 'sha', 'yaml', NULL, '` + ts + `', NULL, '` + ts + `')`,
		`INSERT INTO steps (run_id, step_id, idx, agent, status, max_attempts, session_id, updated_at)
			VALUES ('r', 'plan', 0, 'a', 'succeeded', 3, 'S1', '` + ts + `'),
			       ('r', 'fix', 1, 'a', 'running', 2, 'S2', '` + ts + `')`,
		`INSERT INTO attempts (run_id, step_id, n, kind, status, class, started_at, finished_at, uncounted)
			VALUES ('r', 'plan', 1, 'initial', 'failed', 'schema', '` + ts + `', '` + ts + `', 0),
			       ('r', 'plan', 2, 'followup', 'succeeded', '', '` + ts + `', '` + ts + `', 0),
			       ('r', 'fix', 1, 'initial', 'running', '', '` + ts + `', NULL, 0)`,
		`INSERT INTO session_messages VALUES ('S1', 1, 'r', 'plan', 1, 'user', 'hello', '` + ts + `')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.View(ctx, func(tx *Tx) error {
		steps, err := tx.Steps("r")
		if err != nil {
			return err
		}
		if len(steps) != 2 || steps[0].ID != "plan" || steps[1].ID != "fix" || steps[1].SessionID != "S2" || steps[0].ItemKey != "" {
			t.Errorf("steps after the migration: %+v", steps)
		}
		all, err := tx.AllAttempts("r")
		if err != nil {
			return err
		}
		var got []string
		for _, a := range all {
			got = append(got, a.StepID+"/"+string(a.Status())+"/"+a.Class)
		}
		if want := "plan/failed/schema plan/succeeded/ fix/running/"; strings.Join(got, " ") != want {
			t.Errorf("attempts after the migration: %q, want %q", strings.Join(got, " "), want)
		}
		running, err := tx.RunningAttempts("r")
		if err != nil {
			return err
		}
		if len(running) != 1 || running[0].StepID != "fix" {
			t.Errorf("running attempts: %+v", running)
		}
		msgs, err := tx.Messages("S1")
		if err != nil {
			return err
		}
		if len(msgs) != 1 || msgs[0].Content != "hello" || msgs[0].StepID != "plan" {
			t.Errorf("messages: %+v", msgs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var violations int
	if err := s.db.Get(&violations, "SELECT count(*) FROM pragma_foreign_key_check"); err != nil {
		t.Fatal(err)
	}
	if violations != 0 {
		t.Errorf("%d foreign key violations after the migration", violations)
	}
}
