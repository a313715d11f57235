package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockCheckSeesItsFileGone checks that a held lock notices its file
// deleted or replaced, and that a store it guards then commits nothing.
func TestLockCheckSeesItsFileGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(path string) error
	}{
		{"deleted", os.Remove},
		{"replaced", func(path string) error {
			if err := os.WriteFile(path+".new", nil, 0o644); err != nil {
				return err
			}
			return os.Rename(path+".new", path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".cadence")
			l, err := AcquireLock(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if err := l.Check(); err != nil {
				t.Fatalf("Check of a held lock: %v", err)
			}
			s, err := Open(context.Background(), filepath.Join(dir, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Guard(l.Check)
			update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", t0), nil) })
			path := filepath.Join(dir, LockFileName)
			if err := tc.do(path); err != nil {
				t.Fatal(err)
			}
			if err := l.Check(); !errors.Is(err, ErrLockGone) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Check: %v, want ErrLockGone naming %s", err, path)
			}
			err = s.Update(context.Background(), func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), nil) })
			if !errors.Is(err, ErrLockGone) {
				t.Fatalf("Update: %v, want ErrLockGone", err)
			}
			view(t, s, func(tx *Tx) error {
				if _, err := tx.Run("r2"); !errors.Is(err, ErrNotFound) {
					t.Errorf("run r2 was committed after the lock file was gone: %v", err)
				}
				return nil
			})
		})
	}
}

// TestStoreRefusesCommitsToAReplacedFile checks that a write to a SQLite
// state file deleted or replaced since it was opened fails with
// ErrStateReplaced, naming the file, and that reads still work.
func TestStoreRefusesCommitsToAReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", t0), nil) })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), nil) })
	if !errors.Is(err, ErrStateReplaced) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Update after the file was deleted: %v, want ErrStateReplaced naming %s", err, path)
	}
	view(t, s, func(tx *Tx) error {
		_, err := tx.Run("r1")
		return err
	})
}

// TestReadOnlyOpenOfAnOlderSchema checks that OpenReadOnly never
// migrates: a database of an older schema with a run is refused with an
// error that says what to run, and keeps its schema; one with no run yet
// (being created by another process) is ErrNoDatabase, nothing to read.
func TestReadOnlyOpenOfAnOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA user_version = 8"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, path); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("read-only open of an older schema without runs: %v, want ErrNoDatabase", err)
	}
	update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", t0), nil) })
	_, err = OpenReadOnly(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "schema 8") || !strings.Contains(err.Error(), "cadence resume") {
		t.Fatalf("read-only open of an older schema with a run: %v, want a refusal naming schema 8 and what to run", err)
	}
	var v int
	if err := s.db.Get(&v, "PRAGMA user_version"); err != nil || v != 8 {
		t.Fatalf("schema version %d (%v) after read-only opens, want 8", v, err)
	}
	s.Close()
}

// BenchmarkCommitChecks measures what every write commit adds to check
// that the state file and the lock file are still the ones opened: two
// stat(2) calls.
func BenchmarkCommitChecks(b *testing.B) {
	dir := filepath.Join(b.TempDir(), ".cadence")
	l, err := AcquireLock(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release()
	s, err := Open(context.Background(), filepath.Join(dir, "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Guard(l.Check)
	for b.Loop() {
		if err := s.checkFiles(); err != nil {
			b.Fatal(err)
		}
	}
}
