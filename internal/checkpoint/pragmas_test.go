package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

type pragmas struct {
	JournalMode string
	Synchronous int // 2 is FULL
	BusyTimeout int // milliseconds
	ForeignKeys int
}

func readPragmas(t *testing.T, q sqlx.QueryerContext) pragmas {
	t.Helper()
	ctx := context.Background()
	var p pragmas
	for _, r := range []struct {
		name string
		dst  any
	}{
		{"journal_mode", &p.JournalMode},
		{"synchronous", &p.Synchronous},
		{"busy_timeout", &p.BusyTimeout},
		{"foreign_keys", &p.ForeignKeys},
	} {
		if err := sqlx.GetContext(ctx, q, r.dst, "PRAGMA "+r.name); err != nil {
			t.Fatalf("PRAGMA %s: %v", r.name, err)
		}
	}
	p.JournalMode = strings.ToLower(p.JournalMode)
	return p
}

// The tests in this file are about SQLite itself (pragmas, WAL, the file
// path, synchronous=NORMAL), so they run on SQLite only; postgres_test.go
// has PostgreSQL's counterparts where there are any.

// Pragmas such as synchronous and foreign_keys are per connection: set once
// with Exec they would hold on one pooled connection only. The DSN must give
// them to every connection the pool opens.
func TestPragmasOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	want := pragmas{JournalMode: "wal", Synchronous: 2, BusyTimeout: 10000, ForeignKeys: 1}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := readPragmas(t, s.db); got != want {
		t.Errorf("store connection: %+v, want %+v", got, want)
	}
	if got := s.db.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("store pool allows %d connections, want 1 writer", got)
	}

	// Hold several connections of one pool open at once, so each is a
	// distinct connection, and check every one.
	dsn, err := writerDSN(path, defaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	pool, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const n = 4
	conns := make([]*sqlx.Conn, n)
	for i := range conns {
		if conns[i], err = pool.Connx(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	if got := pool.Stats().OpenConnections; got != n {
		t.Fatalf("%d connections open, want %d distinct ones", got, n)
	}
	for i, c := range conns {
		if got := readPragmas(t, c); got != want {
			t.Errorf("connection %d: %+v, want %+v", i, got, want)
		}
	}
}

func TestBusyTimeoutOption(t *testing.T) {
	s, err := open(context.Background(), filepath.Join(t.TempDir(), "state.db"), options{busyTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := readPragmas(t, s.db).BusyTimeout; got != 250 {
		t.Fatalf("busy_timeout %d ms, want 250", got)
	}
}

func TestOpenEscapesPath(t *testing.T) {
	// '?' and '#' would end the file name in a URI; '%' starts an escape.
	path := filepath.Join(t.TempDir(), "odd ?name#50%.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var file string
	if err := s.db.Get(&file, "SELECT file FROM pragma_database_list WHERE name = 'main'"); err != nil {
		t.Fatal(err)
	}
	if file != path {
		t.Fatalf("database opened at %q, want %q", file, path)
	}
}

// UpdateRelaxed commits at synchronous=NORMAL and hands the connection back
// at FULL; what it committed survives the process being killed right after.
func TestUpdateRelaxed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRelaxed(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", t0), nil) }); err != nil {
		t.Fatal(err)
	}
	if got := readPragmas(t, s.db); got.Synchronous != 2 {
		t.Errorf("after UpdateRelaxed the connection is at synchronous %d, want 2 (FULL)", got.Synchronous)
	}
	// A failing function rolls back, and the connection is restored too.
	if err := s.UpdateRelaxed(ctx, func(tx *Tx) error {
		if err := tx.CreateRun(sampleRun("r2", t0), nil); err != nil {
			return err
		}
		return fmt.Errorf("boom")
	}); err == nil {
		t.Fatal("UpdateRelaxed returned no error from a failing function")
	}
	if got := readPragmas(t, s.db); got.Synchronous != 2 {
		t.Errorf("after a failed UpdateRelaxed: synchronous %d, want 2", got.Synchronous)
	}
	view(t, s, func(tx *Tx) error {
		if _, err := tx.Run("r2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the failed relaxed transaction left run r2: %v", err)
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A process that commits relaxed and is then killed keeps its commit.
	path2 := filepath.Join(t.TempDir(), "state.db")
	h := startHelper(t, "relaxed", path2)
	_ = h.cmd.Wait()
	s2, err := Open(ctx, path2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	view(t, s2, func(tx *Tx) error {
		if _, err := tx.Run("relaxed"); err != nil {
			t.Errorf("the relaxed commit of a killed process is lost: %v", err)
		}
		return nil
	})
}

// UpdateSyncedByStart commits an attempt's row at synchronous=NORMAL on
// SQLite (the pid's commit, UpdateBeforeStart at FULL, syncs it before the
// process runs); under the unsynced-starts fault both commit at NORMAL.
// The connection goes back to the pool at FULL.
func TestUpdateSyncedByStart(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		fault         string
		synced, start int // synchronous inside UpdateSyncedByStart, inside UpdateBeforeStart
	}{
		{fault: "", synced: 1, start: 2},
		{fault: "unsynced-starts", synced: 1, start: 1},
	} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		if tt.fault != "" {
			f, err := ParseFault(tt.fault)
			if err != nil {
				t.Fatal(err)
			}
			s.InjectFault(f)
		}
		setting := func(update func(context.Context, func(*Tx) error) error, id string) int {
			var v int
			if err := update(ctx, func(tx *Tx) error {
				if err := tx.CreateRun(sampleRun(id, t0), nil); err != nil {
					return err
				}
				return tx.tx.GetContext(ctx, &v, "PRAGMA synchronous")
			}); err != nil {
				t.Fatal(err)
			}
			return v
		}
		if got := setting(s.UpdateSyncedByStart, "r1"); got != tt.synced {
			t.Errorf("fault %q: inside UpdateSyncedByStart synchronous is %d, want %d", tt.fault, got, tt.synced)
		}
		if got := setting(s.UpdateBeforeStart, "r2"); got != tt.start {
			t.Errorf("fault %q: inside UpdateBeforeStart synchronous is %d, want %d", tt.fault, got, tt.start)
		}
		if got := readPragmas(t, s.db); got.Synchronous != 2 {
			t.Errorf("fault %q: afterwards the connection is at synchronous %d, want 2 (FULL)", tt.fault, got.Synchronous)
		}
		view(t, s, func(tx *Tx) error {
			runs, err := tx.Runs()
			if err == nil && len(runs) != 2 {
				t.Errorf("fault %q: %d runs committed, want 2", tt.fault, len(runs))
			}
			return err
		})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
