package checkpoint

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// projectDB creates a database of the engine holding one committed run,
// "before", and returns its address and the .cadence directory a cadence
// process working on it locks: for SQLite, DIR/.cadence holding state.db.
func projectDB(t *testing.T, e testEngine) (target, cadenceDir string) {
	t.Helper()
	cadenceDir = filepath.Join(t.TempDir(), ".cadence")
	target = filepath.Join(cadenceDir, "state.db")
	if e.name != sqliteEngine.name {
		target = e.target(t)
	}
	s, err := Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	seedRun(t, s, "before", t0, "plan")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return target, cadenceDir
}

// A process that wants to write what another process's open write
// transaction holds waits for the busy timeout, then fails with ErrBusy;
// once the holder commits, its writes go through. On SQLite the holder
// has the database's write lock; on PostgreSQL, the row it inserted.
func TestWriterWaitsForBusyTimeoutThenFails(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target, cadenceDir := projectDB(t, e)
		holder := startHelper(t, "write", target, helperLockEnv+"="+cadenceDir)

		const timeout = 300 * time.Millisecond
		s, err := open(ctx, target, options{busyTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		err = s.Update(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("uncommitted", t0), nil) })
		waited := time.Since(start)
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("Update while another process writes: %v, want ErrBusy", err)
		}
		cause := map[string]string{"sqlite": "SQLITE_BUSY", "postgres": "55P03"}[e.name]
		if !strings.Contains(err.Error(), cause) || !strings.Contains(err.Error(), s.Path()) {
			t.Errorf("error %q should say %s and name %s", err, cause, s.Path())
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
	})
}

// inspect never takes the lock and reads while a run goes on (G7, WAL): a
// read-only store opened while another process holds the project lock and an
// open write transaction sees the last committed state.
func TestReaderDuringWrite(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target, cadenceDir := projectDB(t, e)
		holder := startHelper(t, "write", target, helperLockEnv+"="+cadenceDir)

		_, err := AcquireLock(cadenceDir)
		var locked *LockedError
		if !errors.As(err, &locked) || locked.PID != holder.cmd.Process.Pid {
			t.Fatalf("AcquireLock while the helper holds it: %v, want LockedError with pid %d", err, holder.cmd.Process.Pid)
		}

		ro, err := openReadOnly(ctx, target, options{busyTimeout: 200 * time.Millisecond})
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
	})
}

// A View reads one snapshot: a run another store commits while the View
// goes on is not in it, and is in the next View.
func TestViewReadsOneSnapshot(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		target := e.target(t)
		reader, writer := openStore(t, target), openStore(t, target)
		seedRun(t, writer, "first", t0)
		view(t, reader, func(tx *Tx) error {
			before, err := tx.Runs()
			if err != nil {
				return err
			}
			seedRun(t, writer, "second", t0.Add(time.Second))
			after, err := tx.Runs()
			if err != nil {
				return err
			}
			if len(before) != 1 || len(after) != 1 {
				t.Errorf("one View read %d runs, then %d; want 1 and 1", len(before), len(after))
			}
			return nil
		})
		view(t, reader, func(tx *Tx) error {
			runs, err := tx.Runs()
			if err == nil && len(runs) != 2 {
				t.Errorf("the next View reads %d runs, want 2", len(runs))
			}
			return err
		})
	})
}

// Two stores on one database (two processes' worth of connections) add
// attempts to one unit at once, each numbering its attempt after the last
// one it reads: every write lands, and the numbers come out dense, 1 to
// the total, none twice. On SQLite the write lock orders them; on
// PostgreSQL a writer whose read went stale is run again.
func TestTwoStoresNumberAttemptsDensely(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		stores := []*Store{openStore(t, target), openStore(t, target)}
		seedRun(t, stores[0], "r", t0, "plan")
		const writersPerStore, each = 2, 15
		var wg sync.WaitGroup
		errs := make(chan error, len(stores)*writersPerStore)
		for _, s := range stores {
			for range writersPerStore {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						if err := s.Update(ctx, func(tx *Tx) error {
							last, err := tx.LastAttempt("r", "plan")
							n := 1
							if err == nil {
								n = last.N + 1
							} else if !errors.Is(err, ErrNotFound) {
								return err
							}
							return tx.InsertAttempt(sampleAttempt("r", "plan", n))
						}); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		view(t, stores[1], func(tx *Tx) error {
			all, err := tx.Attempts("r", "plan")
			if err != nil {
				return err
			}
			total := len(stores) * writersPerStore * each
			if len(all) != total {
				t.Errorf("%d attempts, want %d", len(all), total)
			}
			for i, a := range all {
				if a.N != i+1 {
					t.Errorf("attempt at position %d has number %d", i+1, a.N)
					break
				}
			}
			return nil
		})
	})
}
