package checkpoint

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/cadence-dev/cadence/migrations"
)

// PostgreSQL as the state database (SPEC section 13): the same tables,
// queries and transition checks as on SQLite, for several cadence
// processes, on several machines, sharing one run.
//
// What differs from SQLite, and why:
//   - Writes run at SERIALIZABLE isolation instead of under SQLite's single
//     write lock: every Update reads, checks a transition, then writes, and
//     SERIALIZABLE makes PostgreSQL refuse the commit of a transaction whose
//     reads another one made stale. Such a transaction (SQLSTATE 40001, or
//     a deadlock, 40P01) is run again from the start; see Store.Update.
//   - Reads (View, OpenReadOnly) run at REPEATABLE READ, READ ONLY: one
//     snapshot per transaction, as SQLite's, and never a lock.
//   - lock_timeout is the busy timeout: a row lock another transaction holds
//     past it fails the write with ErrBusy (SQLSTATE 55P03), as SQLITE_BUSY
//     does. A lock_timeout in the URL wins.
//   - A small pool of connections instead of SQLite's single one; each
//     transaction stays on one connection. pgx prepares and caches every
//     statement per connection, so the store prepares nothing itself.
//   - The schema version is the highest row of the schema_version table,
//     written in each migration's transaction; an advisory lock makes
//     processes that migrate one database at once take turns.

// postgresPoolSize bounds the connections a store opens.
const postgresPoolSize = 4

// postgresWriteTries is how many times Update runs a write transaction
// that keeps failing with serialization failures before giving up: with
// the backoff's limit capped at 128 ms, some five seconds of trying.
const postgresWriteTries = 50

// postgresReconnectFor is how long a transaction that could not reach the
// server (a restart, a failover, a dropped connection) is tried again
// before the error is returned: long enough to ride out a restart.
const postgresReconnectFor = 30 * time.Second

// postgresReconnectEvery is the pause between those tries.
const postgresReconnectEvery = 250 * time.Millisecond

// SQLSTATE codes the store acts on.
const (
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03" // lock_timeout
	pgInvalidCatalogName   = "3D000" // the database does not exist
)

// openPostgres connects to the PostgreSQL database at rawURL and migrates
// it, or for a read-only store checks that its schema can be read.
func openPostgres(ctx context.Context, rawURL string, opt options, readOnly bool) (*Store, error) {
	shown := redactURL(rawURL)
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", shown, err)
	}
	setDefault(cfg.RuntimeParams, "application_name", "cadence")
	setDefault(cfg.RuntimeParams, "lock_timeout", strconv.FormatInt(opt.busyTimeout.Milliseconds(), 10))
	if readOnly {
		// Even a write that slips past the store is refused by the server.
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.SetMaxOpenConns(postgresPoolSize)
	db.SetMaxIdleConns(postgresPoolSize)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if pgCode(err) == pgInvalidCatalogName {
			if readOnly {
				return nil, fmt.Errorf("open %s: %w: %w", shown, ErrNoDatabase, err)
			}
			return nil, fmt.Errorf("open %s: %w (cadence creates its tables, not the database: create it first)", shown, err)
		}
		return nil, fmt.Errorf("open %s: %w", shown, classify(err))
	}
	s := &Store{db: db, engine: enginePostgres, path: shown, readOnly: readOnly}
	if readOnly {
		err = checkReadablePostgres(ctx, db, migrations.Postgres)
	} else {
		err = migratePostgres(ctx, db, migrations.Postgres)
	}
	if err != nil {
		db.Close()
		var newer *NewerSchemaError
		if errors.As(err, &newer) {
			return nil, newer
		}
		return nil, fmt.Errorf("open %s: %w", shown, classify(err))
	}
	return s, nil
}

// updatePostgres runs fn in a SERIALIZABLE transaction, again from the
// start when it fails for a conflict with a concurrent transaction, up to
// postgresWriteTries times. relaxed commits it without waiting for the
// server's WAL flush (Store.UpdateRelaxed).
func (s *Store) updatePostgres(ctx context.Context, relaxed bool, fn func(tx *Tx) error) error {
	begin := func() (*sqlx.Tx, error) {
		tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil || !relaxed {
			return tx, err
		}
		if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
			return nil, errors.Join(err, tx.Rollback())
		}
		return tx, nil
	}
	var (
		fs       faultState
		inserted int
	)
	run := func(tx *Tx) error {
		err := fn(tx)
		inserted = tx.insertedSteps
		return err
	}
	if err := s.retryPostgres(ctx, func() (bool, error) { return s.runTx(ctx, false, run, begin, &fs) }); err != nil {
		return err
	}
	if inserted > 0 {
		s.analyzeStepsIfStale(ctx, inserted)
	}
	return nil
}

// stepsStaleQuery reports whether the planner's statistics of the steps
// table are missing (no row of pg_stats for its run_id) or older than
// rows just inserted: more rows were inserted ($1) than the table held
// when it was last analyzed or vacuumed (pg_class.reltuples, -1 when
// never).
const stepsStaleQuery = `SELECT NOT EXISTS (SELECT 1 FROM pg_stats
		WHERE schemaname = current_schema() AND tablename = 'steps' AND attname = 'run_id')
	OR COALESCE((SELECT c.reltuples FROM pg_class c WHERE c.oid = to_regclass('steps')), -1) < $1`

// analyzeStepsIfStale gathers the planner's statistics of the steps table
// after the commit of a transaction that inserted rows into it (a run's
// creation, a map step's items), when the table has none or when the
// transaction inserted more rows than the table held at its last
// analyze: on a new database, the first run, and the first map whose
// items outnumber every step before them.
//
// Why: with statistics that saw about one row per run (none, or those of
// a run of one step taken before its map's items were inserted), every
// index of steps that starts with run_id is estimated to return one row
// of a run, as the primary key does, and PostgreSQL breaks the tie with
// units_order or steps_order. A step's lookups by its key (its row, its
// status before a transition, the foreign-key check of each attempt's
// insert) then read every step of the run: O(steps) per statement, 97
// buffers per lookup in a chain of 200 (BENCHMARKS.md, "PostgreSQL: round
// trips per step"), 65 in a map of 200 items. Autovacuum would analyze
// the table only after its naptime (a minute), and until then a new
// database's runs pay it on every step; once the statistics see several
// rows per run, the primary key is the cheaper plan and nothing is done
// here.
//
// It is an optimisation only: a failure (no right to analyze, the table's
// lock held by a vacuum past analyzeLockTimeout, the server gone) is
// ignored and leaves the table as autovacuum would.
func (s *Store) analyzeStepsIfStale(ctx context.Context, inserted int) {
	var stale bool
	if err := s.db.GetContext(ctx, &stale, stepsStaleQuery, inserted); err != nil || !stale {
		return
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, analyzeLockTimeout); err != nil {
		return
	}
	if _, err := tx.ExecContext(ctx, "ANALYZE steps"); err != nil {
		return
	}
	_ = tx.Commit()
}

// analyzeLockTimeout bounds how long analyzeStepsIfStale waits for the lock
// of steps that a vacuum or another analyze holds, instead of the store's
// lock_timeout (the busy timeout, seconds): the run that created the
// table's rows waits at most that long, and the other analyze gives the
// planner its statistics anyway.
const analyzeLockTimeout = "SET LOCAL lock_timeout = '100ms'"

// retryPostgres runs a transaction with run, and again when it failed
// without committing: after a serialization failure or a deadlock, up to
// postgresWriteTries times with a random backoff; after losing the server
// (isUnavailable), every postgresReconnectEvery for up to
// postgresReconnectFor. A commit whose connection broke is never run
// again, since it may have landed: runTx does not report it as retryable.
func (s *Store) retryPostgres(ctx context.Context, run func() (retry bool, err error)) error {
	var lost time.Time
	for try := 1; ; try++ {
		retry, err := run()
		if !retry {
			return err
		}
		if isUnavailable(err) {
			if lost.IsZero() {
				lost = time.Now()
			}
			if time.Since(lost) > postgresReconnectFor {
				return fmt.Errorf("the database was unreachable for %s: %w", postgresReconnectFor, err)
			}
			if werr := sleep(ctx, postgresReconnectEvery); werr != nil {
				return errors.Join(err, werr)
			}
			continue
		}
		if try >= postgresWriteTries {
			return fmt.Errorf("%w: the transaction conflicted with concurrent writers %d times in a row: %w", ErrBusy, try, err)
		}
		if werr := backoff(ctx, try); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

// backoff waits before the next run of a transaction that conflicted with
// another: a random time up to a limit that doubles with each try (from
// 2 ms, at most 128 ms), so that the writers that met do not meet again.
func backoff(ctx context.Context, try int) error {
	limit := 2 * time.Millisecond << min(try-1, 6)
	return sleep(ctx, rand.N(limit)+time.Millisecond)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isConflict reports whether err is a PostgreSQL serialization failure or
// deadlock: a transaction that may succeed when run again.
func isConflict(err error) bool {
	code := pgCode(err)
	return code == pgSerializationFailure || code == pgDeadlockDetected
}

// isUnavailable reports whether err says the server could not be reached
// or dropped the connection: a refused or broken connection, or a server
// shutting down, starting up or ending sessions (SQLSTATE classes 08 and
// 57P). A transaction that failed so before its commit may run again.
func isUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if code := pgCode(err); code != "" {
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P")
	}
	var (
		ce *pgconn.ConnectError
		ne net.Error
	)
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return ""
	}
	return pe.Code
}

// classifyPostgres adds ErrBusy to a lock that was not granted within
// lock_timeout; other errors are returned unchanged.
func classifyPostgres(err error) error {
	if pgCode(err) == pgLockNotAvailable && !errors.Is(err, ErrBusy) {
		return fmt.Errorf("%w: a row lock was held past lock_timeout: %w", ErrBusy, err)
	}
	return err
}

// setDefault sets params[key] unless the URL already set it.
func setDefault(params map[string]string, key, value string) {
	if _, ok := params[key]; !ok {
		params[key] = value
	}
}

// redactURL returns rawURL with its password, in the user part or in the
// query, replaced by "xxxxx", for messages; a URL that does not parse is
// shown as its scheme alone.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
