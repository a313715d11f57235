package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultSyncBound is how long a commit of UpdateSyncedByNext may stay in
// the operating system's cache, on SQLite, when no commit that waits for
// the disk comes after it: a run that goes idle (a backoff, a gate, a long
// agent beside) has it on disk that much later at most.
const DefaultSyncBound = 20 * time.Millisecond

// syncDebt follows the commits of UpdateSyncedByNext that may not be on
// disk yet. Every commit that waits for the disk pays those before it (the
// WAL is one file, written in order, and its fsync covers every frame
// written before); a timer pays the rest once the oldest of them is bound
// old. In a chain the next start pays first, and the timer finds nothing
// to do.
type syncDebt struct {
	bound time.Duration
	pay   func() error // makes every commit so far durable

	mu     sync.Mutex
	made   uint64    // commits owed, counted from 1
	synced uint64    // the last of them known durable
	since  time.Time // when the oldest commit not known durable was made
	armed  bool      // the timer will look
	closed bool
	timer  *time.Timer
}

// owe notes a commit just made without waiting for the disk, and makes
// sure the timer looks within the bound.
func (d *syncDebt) owe() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.synced == d.made {
		d.since = time.Now()
	}
	d.made++
	d.arm(d.bound)
}

// arm makes the timer look after wait, unless it will already.
func (d *syncDebt) arm(wait time.Duration) {
	if d.armed || d.closed {
		return
	}
	d.armed = true
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.due)
		return
	}
	d.timer.Reset(wait)
}

// seen is the count of commits owed before a commit that waits for the
// disk begins: once it has committed, paid(seen) records them durable.
func (d *syncDebt) seen() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.made
}

// paid records that every commit up to n is on disk. Of those after n,
// the oldest is taken to be as old as the oldest before: the timer may
// look sooner than it must, never later.
func (d *syncDebt) paid(n uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.synced = max(d.synced, n)
}

// owing reports whether a commit may not be on disk yet.
func (d *syncDebt) owing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.synced < d.made
}

// due is the timer's: it pays what is owed once the oldest of it is bound
// old, and looks again later when it is younger.
func (d *syncDebt) due() {
	d.mu.Lock()
	d.armed = false
	if d.closed || d.synced >= d.made {
		d.mu.Unlock()
		return
	}
	if wait := d.bound - time.Since(d.since); wait > 0 {
		d.arm(wait)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	if err := d.settle(); err != nil {
		// The commit is in the operating system's cache: it survives
		// cadence, and the next commit that waits for the disk syncs it.
		slog.Warn("state database not synced", "err", err)
	}
}

// settle pays what is owed now.
func (d *syncDebt) settle() error {
	n := d.seen()
	if !d.owing() {
		return nil
	}
	if err := d.pay(); err != nil {
		return err
	}
	d.paid(n)
	return nil
}

// close stops the timer and pays what is owed.
func (d *syncDebt) close() error {
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
	return d.settle()
}

// UpdateSyncedByNext is Update for a commit that nothing outside the
// database acts on before cadence's next commit that waits for the disk:
// an attempt's outcome, which the next attempt's start (its pid's commit,
// UpdateBeforeStart), a run's end and a notification's delivery (Update)
// all follow. On SQLite it commits at synchronous=NORMAL, like
// UpdateRelaxed, so it costs no fsync of its own; the next commit's fsync
// of the WAL makes it durable with that commit, and when none comes
// within the store's sync bound (DefaultSyncBound) the WAL is synced
// then. A power cut in between may lose it, but then the state is one a
// cut just before it leaves (SQLite recovers a prefix of the WAL's
// commits), and nothing that depends on it has happened: the attempt is
// settled after the cut from what landed on disk, as it would have been.
//
// On PostgreSQL it is Update. The server is a failure domain of its own:
// it may crash and come back while cadence goes on, and a commit made
// with synchronous_commit off and lost that way would leave cadence
// starting the next step of a success the database no longer holds.
func (s *Store) UpdateSyncedByNext(ctx context.Context, fn func(tx *Tx) error) error {
	if s.engine == enginePostgres || s.readOnly {
		return s.Update(ctx, fn)
	}
	if err := s.UpdateRelaxed(ctx, fn); err != nil {
		return err
	}
	s.debt.owe()
	return nil
}

// syncWAL makes every commit so far durable: an fsync of the SQLite
// file's write-ahead log, as a commit at synchronous=FULL ends with. A log
// that is gone was checkpointed into the database, and synced, when the
// last connection closed.
func (s *Store) syncWAL() error {
	f, err := os.Open(walPath(s.abs))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	return nil
}

// walPath is the write-ahead log of the SQLite file at path: SQLite keeps
// it beside the file a symbolic link names, not beside the link.
func walPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + "-wal"
}
