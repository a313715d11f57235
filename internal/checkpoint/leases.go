package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Leases let several cadence processes, on several machines, share one
// run through a PostgreSQL database (SPEC section 13). A lease is a
// time-limited hold on a run (the project lock G7 across machines) or on
// one map item (the process that runs it). Its holder renews it before it
// expires; a holder that dies or stalls lets it expire, and the next
// process takes it. Each new holder raises the lease's epoch, and every
// commit made under a lease checks the epoch in the same transaction
// (fencing, see WithLease), so a process that lost its lease, however
// late it notices, commits nothing more.
//
// Expiry is judged by the database's clock (Tx.Now), never by the clocks
// of the machines, which need not agree.

// Lease is a hold on a run (StepID and ItemKey "") or on one map item.
type Lease struct {
	RunID   string
	StepID  string
	ItemKey string
	// Owner names the holding process uniquely; Host and PID say where it
	// runs, for messages and to tell a holder on this machine that died.
	Owner     string
	Host      string
	PID       int
	Epoch     int64
	ExpiresAt time.Time
}

// HeldAt reports whether the lease has a holder at now (by the
// database's clock, Tx.Now): one that has neither released it nor let it
// expire.
func (l Lease) HeldAt(now time.Time) bool { return l.Owner != "" && l.ExpiresAt.After(now) }

// Unit returns the run's unit for a run lease, or the item's.
func (l Lease) Unit() Unit { return Unit{RunID: l.RunID, StepID: l.StepID, Item: l.ItemKey} }

func (l Lease) what() string {
	if l.StepID == "" {
		return "the lease of run " + l.RunID
	}
	return "the lease of " + unitName(l.Unit())
}

// ErrLeaseLost is returned by a write made under a lease that expired or
// that another process took since: the write is refused.
var ErrLeaseLost = errors.New("lease lost: it expired or another process took it")

// LeaseHeldError is returned by AcquireLease when a live process holds the
// lease.
type LeaseHeldError struct{ Holder Lease }

func (e *LeaseHeldError) Error() string {
	h := e.Holder
	subject := "run " + h.RunID
	if h.StepID != "" {
		subject = unitName(h.Unit())
	}
	return fmt.Sprintf("%s is held by another cadence process (pid %d on host %s) until %s",
		subject, h.PID, h.Host, h.ExpiresAt.UTC().Format(time.RFC3339))
}

type leaseRow struct {
	RunID     string   `db:"run_id"`
	StepID    string   `db:"step_id"`
	ItemKey   string   `db:"item_key"`
	Owner     string   `db:"owner"`
	Host      string   `db:"host"`
	PID       int64    `db:"pid"`
	Epoch     int64    `db:"epoch"`
	ExpiresAt nullTime `db:"expires_at"`
}

func (r leaseRow) lease() Lease {
	l := Lease{RunID: r.RunID, StepID: r.StepID, ItemKey: r.ItemKey, Owner: r.Owner, Host: r.Host, PID: int(r.PID), Epoch: r.Epoch}
	if r.ExpiresAt.t != nil {
		l.ExpiresAt = *r.ExpiresAt.t
	}
	return l
}

func leaseToRow(l Lease) leaseRow {
	exp := l.ExpiresAt
	return leaseRow{RunID: l.RunID, StepID: l.StepID, ItemKey: l.ItemKey, Owner: l.Owner, Host: l.Host,
		PID: int64(l.PID), Epoch: l.Epoch, ExpiresAt: toNullTime(&exp)}
}

const (
	leaseColumns  = `run_id, step_id, item_key, owner, host, pid, epoch, expires_at`
	leaseQuery    = `SELECT ` + leaseColumns + ` FROM leases WHERE run_id = ? AND step_id = ? AND item_key = ?`
	putLeaseQuery = `INSERT INTO leases (` + leaseColumns + `) VALUES
		(:run_id, :step_id, :item_key, :owner, :host, :pid, :epoch, :expires_at)
		ON CONFLICT (run_id, step_id, item_key) DO UPDATE SET owner = excluded.owner, host = excluded.host,
		pid = excluded.pid, epoch = excluded.epoch, expires_at = excluded.expires_at`
	// claimableItemQuery finds the first item of a map step that is
	// neither finished, nor waiting out a backoff, nor held by a live
	// lease. On PostgreSQL the row is locked and rows other claimers
	// locked are skipped (see postgresQueries), so processes claiming at
	// once take different items instead of queueing on one.
	claimableItemQuery = `SELECT s.item_key FROM steps s
		WHERE s.run_id = ? AND s.step_id = ? AND s.item_key <> '' AND s.status IN ('pending', 'running', 'waiting')
		AND (s.next_retry_at IS NULL OR s.next_retry_at <= ?)
		AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.run_id = s.run_id AND l.step_id = s.step_id
			AND l.item_key = s.item_key AND l.owner <> '' AND l.expires_at > ?)
		ORDER BY s.item_idx LIMIT 1`
	// openItemsQuery counts what claimableItemQuery chooses from, over
	// the same index.
	openItemsQuery = `SELECT COUNT(*) FROM steps s
		WHERE s.run_id = ? AND s.step_id = ? AND s.item_key <> '' AND s.status IN ('pending', 'running', 'waiting')`
	postgresNowQuery = `SELECT clock_timestamp()`
	// fenceQuery is what CheckLease reads (Tx.fence); on PostgreSQL it
	// reads the clock too (postgresQueries).
	fenceQuery = `SELECT owner, host, pid, epoch, expires_at FROM leases WHERE run_id = ? AND step_id = ? AND item_key = ?`
)

// Now returns the time by the database's clock, by which leases expire:
// on PostgreSQL the server's, shared by every machine; on SQLite, whose
// database only one machine uses, this machine's.
func (t *Tx) Now() (time.Time, error) {
	if t.engine != enginePostgres {
		return time.Now().UTC(), nil
	}
	var now time.Time
	if err := t.getRow(&now, postgresNowQuery); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return now.UTC(), nil
}

// LeaseOf returns the lease named by runID, stepID and itemKey (stepID and
// itemKey "" for the run's), or ErrNotFound if none was ever taken.
func (t *Tx) LeaseOf(runID, stepID, itemKey string) (*Lease, error) {
	var r leaseRow
	what := (Lease{RunID: runID, StepID: stepID, ItemKey: itemKey}).what()
	if err := t.get(&r, what, leaseQuery, runID, stepID, itemKey); err != nil {
		return nil, err
	}
	l := r.lease()
	return &l, nil
}

// OpenItems counts the items of map step stepID of run runID that have not
// ended (pending, running or waiting), without reading them.
func (t *Tx) OpenItems(runID, stepID string) (int, error) {
	var n int
	if err := t.getRow(&n, openItemsQuery, runID, stepID); err != nil {
		return 0, fmt.Errorf("count the open items of step %s/%s: %w", runID, stepID, err)
	}
	return n, nil
}

// LiveLease returns the lease named by runID, stepID and itemKey if a
// holder has it now, or nil.
func (t *Tx) LiveLease(runID, stepID, itemKey string) (*Lease, error) {
	l, err := t.LeaseOf(runID, stepID, itemKey)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now, err := t.Now()
	if err != nil || !l.HeldAt(now) {
		return nil, err
	}
	return l, nil
}

// AcquireLease takes the lease named by l's RunID, StepID and ItemKey for
// l.Owner (with l.Host and l.PID) until ttl from now, with the next epoch,
// and returns it with the previous holder (zero if there was none). A
// lease that a live process holds is a *LeaseHeldError, unless gone says
// that holder is known to be dead (a process on this machine whose pid no
// longer runs); one that expired or was released is taken.
func (t *Tx) AcquireLease(l Lease, ttl time.Duration, gone func(holder Lease) bool) (got, prev Lease, err error) {
	what := l.what()
	if err := t.mustWrite("take " + what); err != nil {
		return Lease{}, Lease{}, err
	}
	cur, now, err := t.leaseAndClock(l)
	switch {
	case err != nil:
		return Lease{}, Lease{}, fmt.Errorf("take %s: %w", what, err)
	case cur != nil:
		prev = *cur
		if cur.HeldAt(now) && cur.Owner != l.Owner && (gone == nil || !gone(*cur)) {
			return Lease{}, Lease{}, &LeaseHeldError{Holder: *cur}
		}
		l.Epoch = cur.Epoch
	}
	l.Epoch++
	l.ExpiresAt = now.Add(ttl)
	if _, err := t.putLease(l); err != nil {
		return Lease{}, Lease{}, fmt.Errorf("take %s: %w", what, err)
	}
	return l, prev, nil
}

// leaseClockQuery reads, on PostgreSQL, the row of a lease (all NULL when
// none was ever taken) and the database's clock in one statement, for
// AcquireLease: one round trip instead of two.
const leaseClockQuery = `SELECT clock_timestamp() AS now, l.epoch IS NOT NULL AS found,
	COALESCE(l.owner, '') AS owner, COALESCE(l.host, '') AS host, COALESCE(l.pid, 0) AS pid,
	COALESCE(l.epoch, 0) AS epoch, l.expires_at
	FROM (SELECT 1) AS one LEFT JOIN leases l ON l.run_id = ? AND l.step_id = ? AND l.item_key = ?`

// leaseAndClock returns the lease named by l's RunID, StepID and ItemKey
// (nil if none was ever taken) and the database's clock (Now).
func (t *Tx) leaseAndClock(l Lease) (*Lease, time.Time, error) {
	if t.engine != enginePostgres {
		now, err := t.Now()
		if err != nil {
			return nil, now, err
		}
		cur, err := t.LeaseOf(l.RunID, l.StepID, l.ItemKey)
		if errors.Is(err, ErrNotFound) {
			return nil, now, nil
		}
		return cur, now, err
	}
	var r struct {
		Now   time.Time `db:"now"`
		Found bool      `db:"found"`
		leaseRow
	}
	if err := t.getRow(&r, leaseClockQuery, l.RunID, l.StepID, l.ItemKey); err != nil {
		return nil, time.Time{}, fmt.Errorf("read %s and the database's clock: %w", l.what(), err)
	}
	if !r.Found {
		return nil, r.Now.UTC(), nil
	}
	r.RunID, r.StepID, r.ItemKey = l.RunID, l.StepID, l.ItemKey
	cur := r.lease()
	return &cur, r.Now.UTC(), nil
}

// CheckLease returns ErrLeaseLost unless l is still held: same owner and
// epoch, not expired by the database's clock. On SQLite, whose writers
// one machine serialises, a lease that expired but that no other process
// took since (same owner and epoch) is still held: its holder was only
// stopped for a while (a machine asleep), and whoever takes it raises the
// epoch, which fences the holder as soon as it writes.
func (t *Tx) CheckLease(l Lease) error {
	cur, now, err := t.fence(l)
	if err != nil {
		return err
	}
	switch {
	case cur == nil:
		return fmt.Errorf("%s (epoch %d): %w", l.what(), l.Epoch, ErrLeaseLost)
	case cur.Owner != l.Owner || cur.Epoch != l.Epoch:
		return fmt.Errorf("%s (epoch %d): %w: pid %d on host %s holds it at epoch %d", l.what(), l.Epoch, ErrLeaseLost, cur.PID, cur.Host, cur.Epoch)
	case t.engine == enginePostgres && (cur.ExpiresAt.t == nil || !cur.ExpiresAt.t.After(now)):
		var at time.Time
		if cur.ExpiresAt.t != nil {
			at = *cur.ExpiresAt.t
		}
		return fmt.Errorf("%s (epoch %d): %w: it expired at %s", l.what(), l.Epoch, ErrLeaseLost, at.Format(time.RFC3339Nano))
	}
	t.checked = &checkedLease{lease: l, at: now}
	return nil
}

// checkedLease is a lease a transaction found held (CheckLease), with the
// database's clock read by the same statement (zero on SQLite).
type checkedLease struct {
	lease Lease
	at    time.Time
}

// sameHolding reports whether a and b are the same holding of one lease:
// the same lease, owner and epoch.
func sameHolding(a, b Lease) bool {
	return a.RunID == b.RunID && a.StepID == b.StepID && a.ItemKey == b.ItemKey && a.Owner == b.Owner && a.Epoch == b.Epoch
}

// heldSince returns the database's clock at which this transaction found
// l held: from the check it already made, when it made one of l and has
// written no lease since, else from a check made now. On PostgreSQL the
// first check holds to the commit: the transaction read the lease's row
// at SERIALIZABLE, so a holder that took it since makes the commit fail;
// on SQLite no other writer runs. ErrLeaseLost when l is not held.
func (t *Tx) heldSince(l Lease) (time.Time, error) {
	if c := t.checked; c == nil || !sameHolding(c.lease, l) {
		if err := t.CheckLease(l); err != nil {
			return time.Time{}, err
		}
	}
	if t.engine != enginePostgres {
		return t.Now()
	}
	return t.checked.at, nil
}

// putLease writes l's row, and forgets the check this transaction made of
// a lease: the row it read is no longer the one it would read.
func (t *Tx) putLease(l Lease) (sql.Result, error) {
	t.checked = nil
	return t.namedExec(putLeaseQuery, leaseToRow(l))
}

// fence reads what CheckLease compares, in one statement: the lease's row
// (nil if none was ever taken) and, on PostgreSQL, the database's clock
// read by the same statement (fenceQuery), so that the check every write
// made under a lease pays is one round trip, not two. The clock is read
// after the row, never before it, so a lease is found expired no later
// than a separate read of the clock first would find it. On SQLite the
// statement is prepared once (readQueries), and now is the zero time:
// expiry is not checked there.
func (t *Tx) fence(l Lease) (cur *leaseRow, now time.Time, err error) {
	rows, err := t.queryRows(fenceQuery, l.RunID, l.StepID, l.ItemKey)
	if err != nil {
		return nil, now, fmt.Errorf("read %s: %w", l.what(), err)
	}
	defer func() {
		if cerr := rows.Close(); cerr != nil && err == nil {
			cur, err = nil, fmt.Errorf("read %s: %w", l.what(), t.note(cerr))
		}
	}()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, now, fmt.Errorf("read %s: %w", l.what(), t.note(err))
		}
		return nil, now, nil
	}
	var r leaseRow
	if t.engine == enginePostgres {
		err = rows.Scan(&r.Owner, &r.Host, &r.PID, &r.Epoch, &r.ExpiresAt, &now)
		now = now.UTC()
	} else {
		err = rows.Scan(&r.Owner, &r.Host, &r.PID, &r.Epoch, &r.ExpiresAt)
	}
	if err != nil {
		return nil, now, fmt.Errorf("read %s: %w", l.what(), t.note(err))
	}
	return &r, now, nil
}

// RenewLease extends a lease that is still held to ttl from now; a lease
// already lost is ErrLeaseLost and stays lost.
func (t *Tx) RenewLease(l Lease, ttl time.Duration) (Lease, error) {
	if err := t.mustWrite("renew " + l.what()); err != nil {
		return Lease{}, err
	}
	if err := t.CheckLease(l); err != nil {
		return Lease{}, err
	}
	now, err := t.Now()
	if err != nil {
		return Lease{}, err
	}
	l.ExpiresAt = now.Add(ttl)
	if _, err := t.putLease(l); err != nil {
		return Lease{}, fmt.Errorf("renew %s: %w", l.what(), err)
	}
	return l, nil
}

// ReleaseLease gives up a lease that is still held, so that another
// process may take it at once; its epoch stays. Releasing a lease already
// lost is ErrLeaseLost and changes nothing.
func (t *Tx) ReleaseLease(l Lease) error {
	if err := t.mustWrite("release " + l.what()); err != nil {
		return err
	}
	now, err := t.heldSince(l)
	if err != nil {
		return err
	}
	l.Owner, l.ExpiresAt = "", now
	if _, err := t.putLease(l); err != nil {
		return fmt.Errorf("release %s: %w", l.what(), err)
	}
	return nil
}

// ClaimItem takes, in its own transaction, the lease of the first item of
// map step stepID of run runID that no live lease holds and that is
// neither finished nor waiting out a backoff, for l.Owner until ttl from
// now. It returns the lease and the previous holder's (zero if none): an
// item whose holder's lease expired may still have an attempt running,
// for the caller to settle. ErrNotFound means there is no such item now.
//
// On PostgreSQL the claim runs at READ COMMITTED, as job queues built on
// PostgreSQL claim: the item's row lock (FOR UPDATE SKIP LOCKED) keeps
// two claimers off one item while they run, and each statement reads what
// was committed before it, so a claimer that gets a row only once another
// has committed its claim finds that claim's live lease and moves on.
// Under SERIALIZABLE every claim would read a range of items and leases
// that each concurrent commit of an item changes, and fail and retry far
// more often. The lease is all a claim writes; every other write stays
// SERIALIZABLE.
func (s *Store) ClaimItem(ctx context.Context, runID, stepID string, l Lease, ttl time.Duration) (got, prev Lease, err error) {
	return s.ClaimItemUnlessDead(ctx, runID, stepID, l, ttl, -1)
}

// ClaimItemUnlessDead is ClaimItem for a map step that stops once more
// than maxDead of its items are dead (max_failures): the claim's
// transaction first counts the step's dead letters, and claims nothing,
// returning a *TooManyDeadError, when there are more. A negative maxDead
// claims whatever the count. The count is read in the claim's own
// transaction, instead of in one of its own before each claim.
func (s *Store) ClaimItemUnlessDead(ctx context.Context, runID, stepID string, l Lease, ttl time.Duration, maxDead int) (got, prev Lease, err error) {
	if s.readOnly {
		return Lease{}, Lease{}, fmt.Errorf("claim an item on %s: %w", s.path, ErrReadOnly)
	}
	claim := func(tx *Tx) error {
		if maxDead >= 0 {
			dead, err := tx.DeadCount(runID, stepID)
			if err != nil {
				return err
			}
			if dead > maxDead {
				return &TooManyDeadError{Dead: dead}
			}
		}
		// A row that another claimer held while this one looked is
		// skipped; one whose lease it committed just before is found
		// held, and the next item is tried.
		for range 8 {
			got, prev, err = tx.ClaimItem(runID, stepID, l, ttl)
			var held *LeaseHeldError
			if !errors.As(err, &held) {
				return err
			}
		}
		return err
	}
	if s.engine != enginePostgres {
		err = s.Update(ctx, claim)
		return got, prev, err
	}
	begin := func() (*sqlx.Tx, error) {
		return s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	}
	var fs faultState
	err = s.retryPostgres(ctx, func() (bool, error) { return s.runTx(ctx, false, claim, begin, &fs) })
	return got, prev, err
}

// ClaimItem is Store.ClaimItem in a transaction the caller runs.
func (t *Tx) ClaimItem(runID, stepID string, l Lease, ttl time.Duration) (got, prev Lease, err error) {
	if err := t.mustWrite("claim an item of step " + stepID); err != nil {
		return Lease{}, Lease{}, err
	}
	now, err := t.Now()
	if err != nil {
		return Lease{}, Lease{}, err
	}
	var key string
	if err := t.getRow(&key, claimableItemQuery, runID, stepID, dbTime(now), dbTime(now)); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Lease{}, Lease{}, fmt.Errorf("claim an item of step %s/%s: %w", runID, stepID, ErrNotFound)
		}
		return Lease{}, Lease{}, fmt.Errorf("claim an item of step %s/%s: %w", runID, stepID, err)
	}
	l.RunID, l.StepID, l.ItemKey = runID, stepID, key
	return t.AcquireLease(l, ttl, nil)
}

type leaseContextKey struct{}

// WithLease returns a context whose write transactions (Store.Update and
// UpdateRelaxed) first check that l is still held, in the same
// transaction, and fail with ErrLeaseLost, writing nothing, when it is not.
// Every commit made for a leased item runs under it: that is the fencing
// that keeps a process which lost its lease, even one that was stopped
// and does not know yet, from changing what the new holder does.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseContextKey{}, l)
}

// WithoutLease returns a context that no longer carries a lease, for the
// transactions that manage the lease itself.
func WithoutLease(ctx context.Context) context.Context {
	return context.WithValue(ctx, leaseContextKey{}, nil)
}

type leaseEndsContextKey struct{}

// WithEndingLease is WithLease for the lease of a step or an item that
// its holder gives up as soon as the unit ends: the transaction that ends
// a step (StepSucceeded, StepFailed), or that an item succeeds in
// (StepSucceeded), also releases the lease, so that on PostgreSQL the
// outcome and the release are one commit instead of two. The release is
// fenced as every write under the lease is, and it is committed with the
// outcome or not at all: a crash after the commit leaves the unit ended
// and its lease free, one before it leaves both as they were. An item
// that fails keeps its lease: its holder still writes under it (its dead
// letter).
func WithEndingLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(WithLease(ctx, l), leaseEndsContextKey{}, true)
}

// endLease releases, in transaction t that ends unit s (succeeded says
// how), the lease its context holds for s when that lease was given by
// WithEndingLease.
func (t *Tx) endLease(s *Step, succeeded bool) error {
	if t.ctx == nil || !t.writable {
		return nil
	}
	l, ok := leaseFrom(t.ctx)
	if ends, _ := t.ctx.Value(leaseEndsContextKey{}).(bool); !ok || !ends || l.RunID != s.RunID || l.StepID != s.ID || l.ItemKey != s.ItemKey {
		return nil
	}
	if s.ItemKey != "" && !succeeded {
		return nil
	}
	return t.ReleaseLease(l)
}

func leaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseContextKey{}).(Lease)
	return l, ok
}

const runLeasesQuery = `SELECT ` + leaseColumns + ` FROM leases WHERE run_id = ? AND owner <> '' ORDER BY step_id, item_key`

// HeldLeases returns the leases of run runID (its own and its items')
// that have a holder, expired or not.
func (t *Tx) HeldLeases(runID string) ([]Lease, error) {
	var rows []leaseRow
	if err := t.selectRows(&rows, runLeasesQuery, runID); err != nil {
		return nil, fmt.Errorf("read the leases of run %s: %w", runID, err)
	}
	out := make([]Lease, len(rows))
	for i, r := range rows {
		out[i] = r.lease()
	}
	return out, nil
}

// BreakLease ends a lease whose holder the caller knows to be dead, so
// that the next claim takes it at once instead of after its expiry; its
// epoch stays, and a holder that was not dead after all is fenced by the
// next claimer's new epoch. A lease that changed hands since l was read is
// left alone.
func (t *Tx) BreakLease(l Lease) error {
	if err := t.mustWrite("break " + l.what()); err != nil {
		return err
	}
	cur, err := t.LeaseOf(l.RunID, l.StepID, l.ItemKey)
	if err != nil {
		return fmt.Errorf("break %s: %w", l.what(), err)
	}
	if cur.Owner != l.Owner || cur.Epoch != l.Epoch {
		return nil
	}
	now, err := t.Now()
	if err != nil {
		return err
	}
	cur.Owner, cur.ExpiresAt = "", now
	if _, err := t.putLease(*cur); err != nil {
		return fmt.Errorf("break %s: %w", l.what(), err)
	}
	return nil
}
