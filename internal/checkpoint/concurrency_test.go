package checkpoint

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// projectDB creates DIR/.cadence/state.db holding one committed run,
// "before", and returns its path.
func projectDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".cadence", "state.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	seedRun(t, s, "before", t0, "plan")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A second process that wants to write while another holds a write
// transaction waits for the busy timeout, then fails with ErrBusy; once the
// holder commits, the write goes through.
func TestWriterWaitsForBusyTimeoutThenFails(t *testing.T) {
	ctx := context.Background()
	path := projectDB(t)
	holder := startHelper(t, "write", path)

	const timeout = 300 * time.Millisecond
	s, err := open(ctx, path, options{busyTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err = s.Update(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("second", t0), nil) })
	waited := time.Since(start)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Update while another process writes: %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), "SQLITE_BUSY") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q should say SQLITE_BUSY and name %s", err, path)
	}
	t.Logf("busy error: %v", err)
	if waited < timeout {
		t.Errorf("gave up after %v, before the %v busy timeout", waited, timeout)
	}

	holder.finish(t) // commits its run
	update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("second", t0), nil) })
	view(t, s, func(tx *Tx) error {
		for _, id := range []string{"before", "uncommitted", "second"} {
			if _, err := tx.Run(id); err != nil {
				t.Errorf("run %s: %v", id, err)
			}
		}
		return nil
	})
}

// inspect never takes the lock and reads while a run goes on (G7, WAL): a
// read-only store opened while another process holds the project lock and an
// open write transaction sees the last committed state.
func TestReaderDuringWrite(t *testing.T) {
	ctx := context.Background()
	path := projectDB(t)
	holder := startHelper(t, "write", path)

	_, err := AcquireLock(filepath.Dir(path))
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != holder.cmd.Process.Pid {
		t.Fatalf("AcquireLock while the helper holds it: %v, want LockedError with pid %d", err, holder.cmd.Process.Pid)
	}

	ro, err := openReadOnly(ctx, path, options{busyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	view(t, ro, func(tx *Tx) error {
		runs, err := tx.Runs()
		if err != nil {
			return err
		}
		if len(runs) != 1 || runs[0].ID != "before" {
			t.Errorf("reader sees %+v, want only the committed run \"before\"", runs)
		}
		steps, err := tx.Steps("before")
		if len(steps) != 1 {
			t.Errorf("reader sees %d steps of run before, want 1", len(steps))
		}
		return err
	})

	holder.finish(t)
	view(t, ro, func(tx *Tx) error {
		_, err := tx.Run("uncommitted")
		return err // committed now, so visible to a new snapshot
	})
}
