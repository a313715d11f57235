package checkpoint

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cadence-dev/cadence/migrations"
)

// DefaultBusyTimeout is how long a write waits for another connection's
// write lock before it fails with ErrBusy.
const DefaultBusyTimeout = 10 * time.Second

// Store is an open state database: a SQLite file, or a PostgreSQL database
// (see postgres.go). Its methods behave alike on both. It is safe for
// concurrent use; on SQLite, writes are serialised through a single
// connection.
type Store struct {
	db       *sqlx.DB
	stmts    *statements
	engine   engine
	path     string // the SQLite file, or the PostgreSQL URL without its password
	readOnly bool
	// project is the identity of the project whose rows the store reads
	// and writes (SetProject); '' until it is set.
	project string
	// file is the identity of the SQLite file as opened (fileKnown), and
	// abs its absolute path: every write checks, before it commits, that
	// the path still names that file. guards are the caller's checks
	// (Guard), run at the same point.
	file      fileID
	fileKnown bool
	abs       string
	guards    []func() error
	// fault and writes drive InjectFault; writes counts write
	// transactions.
	fault  Fault
	writes atomic.Int64
	// debt follows the commits of UpdateSyncedByNext not yet known to
	// be on disk (SQLite).
	debt syncDebt
}

// options are the knobs tests turn; production code uses the defaults.
type options struct {
	busyTimeout time.Duration
	syncBound   time.Duration // see DefaultSyncBound
}

func defaultOptions() options {
	return options{busyTimeout: DefaultBusyTimeout, syncBound: DefaultSyncBound}
}

// Open opens the state database at target and applies any pending
// migrations. target is the path of a SQLite file, created with its
// directory if needed, or a postgres:// or postgresql:// URL of an existing
// PostgreSQL database, whose tables Open creates. A database from a newer
// cadence is refused with a *NewerSchemaError; a file that is not SQLite
// with ErrNotSQLite.
func Open(ctx context.Context, target string) (*Store, error) {
	return open(ctx, target, defaultOptions())
}

func open(ctx context.Context, path string, opt options) (*Store, error) {
	if IsPostgresURL(path) {
		return openPostgres(ctx, path, opt, false)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	dsn, err := writerDSN(path, opt)
	if err != nil {
		return nil, err
	}
	s, err := connect(ctx, path, dsn, false)
	if err != nil {
		return nil, err
	}
	if err := s.remember(); err != nil {
		s.db.Close()
		return nil, err
	}
	s.debt.bound, s.debt.pay = opt.syncBound, s.syncWAL
	if err := migrate(ctx, s.db, migrations.FS); err != nil {
		s.db.Close()
		var newer *NewerSchemaError
		if errors.As(err, &newer) {
			return nil, newer
		}
		return nil, fmt.Errorf("migrate %s: %w", path, classify(err))
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens an existing state database, a SQLite file or a
// PostgreSQL URL as for Open, for reading only, as `cadence inspect` does
// while a run goes on (WAL, or PostgreSQL's snapshots, let it read a
// consistent state without blocking the writer). It never creates or
// migrates the database: a missing file or database, or one without
// cadence's tables, is ErrNoDatabase; a database whose schema this binary
// cannot read is a *NewerSchemaError.
func OpenReadOnly(ctx context.Context, target string) (*Store, error) {
	return openReadOnly(ctx, target, defaultOptions())
}

func openReadOnly(ctx context.Context, path string, opt options) (*Store, error) {
	if IsPostgresURL(path) {
		return openPostgres(ctx, path, opt, true)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open %s: %w", path, ErrNoDatabase)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	dsn, err := readerDSN(path, opt, false)
	if err != nil {
		return nil, err
	}
	s, err := connect(ctx, path, dsn, true)
	if err != nil && needsWALFiles(err) {
		s, err = openWithoutWAL(ctx, path, opt, err)
	}
	if err != nil {
		return nil, err
	}
	if err := checkReadable(ctx, s.db, migrations.FS); err != nil {
		s.db.Close()
		var newer *NewerSchemaError
		if errors.As(err, &newer) {
			return nil, newer
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// remember records the identity of the SQLite file just opened, for
// CheckStateFile.
func (s *Store) remember() error {
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	id, err := statID(abs)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.abs, s.file, s.fileKnown = abs, id, true
	return nil
}

// Guard adds a check that every write transaction runs just before it
// commits, after the store's own check that its SQLite file is still the
// one it opened: an error from check rolls the transaction back and is
// returned by Update. The project lock uses it (Lock.Check), so that a
// process whose lock file was deleted commits nothing more. Call it before
// the store is used by more than one goroutine.
func (s *Store) Guard(check func() error) { s.guards = append(s.guards, check) }

// CheckStateFile returns ErrStateReplaced, naming the file, when the path
// the store was opened from no longer names the SQLite file it opened
// (deleted, or another file moved over it): commits to the opened file
// would be lost with it. Every write checks it before it commits; a
// process that waits long between commits may check it meanwhile. It
// costs a stat(2); on PostgreSQL it is always nil.
func (s *Store) CheckStateFile() error {
	if !s.fileKnown {
		return nil
	}
	return samePath(s.abs, s.file, ErrStateReplaced)
}

// checkFiles is what every write checks before it commits: the state
// file, then the guards (Guard).
func (s *Store) checkFiles() error {
	if err := s.CheckStateFile(); err != nil {
		return err
	}
	for _, g := range s.guards {
		if err := g(); err != nil {
			return err
		}
	}
	return nil
}

// prepare compiles the store's statements once the schema is known to be
// current; on failure it closes the database.
func (s *Store) prepare(ctx context.Context) error {
	st, err := prepareStatements(ctx, s.db, s.readOnly)
	if err != nil {
		s.db.Close()
		return fmt.Errorf("open %s: %w", s.path, classify(err))
	}
	s.stmts = st
	return nil
}

// connect opens the pool and checks that the file really is a database: the
// driver opens lazily, so a garbage file is only noticed on first use.
func connect(ctx context.Context, path, dsn string, readOnly bool) (*Store, error) {
	db, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: SQLite allows one writer at a time anyway, and a single
	// connection keeps every write in this process strictly ordered.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// The first statement opens the connection and applies the DSN's
	// pragmas. Switching a database that another process is creating at
	// the same moment to WAL can fail with SQLITE_BUSY at once, without
	// SQLite's busy handler: that is retried, briefly, like a busy wait.
	deadline := time.Now().Add(openBusyRetry)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		var n int
		err := db.GetContext(ctx, &n, "SELECT count(*) FROM sqlite_schema")
		if err == nil {
			break
		}
		err = classify(err)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			db.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			db.Close()
			return nil, fmt.Errorf("open %s: %w", path, ctx.Err())
		case <-time.After(delay):
		}
	}
	return &Store{db: db, engine: engineSQLite, path: path, readOnly: readOnly}, nil
}

// openBusyRetry is how long opening a SQLite state retries a database that
// is busy being set up by another process.
const openBusyRetry = 5 * time.Second

// writerDSN builds the read-write connection string. The pragmas are in the
// DSN so the driver applies them to every connection it opens (G9);
// busy_timeout comes first so the others can wait for a lock too.
func writerDSN(path string, opt options) (string, error) {
	u, err := fileURI(path)
	if err != nil {
		return "", err
	}
	q := "_pragma=" + url.QueryEscape("busy_timeout("+strconv.FormatInt(opt.busyTimeout.Milliseconds(), 10)+")") +
		"&_pragma=" + url.QueryEscape("journal_mode(WAL)") +
		"&_pragma=" + url.QueryEscape("synchronous(FULL)") +
		"&_pragma=" + url.QueryEscape("foreign_keys(1)") +
		"&_txlock=immediate"
	return u + "?" + q, nil
}

// readerDSN builds a connection string that SQLite itself opens read-only
// (mode=ro): it cannot create the file, change the journal mode or write.
// immutable tells SQLite that nobody changes the file while it is open,
// so that it reads it without the WAL's shared memory (see
// openWithoutWAL).
func readerDSN(path string, opt options, immutable bool) (string, error) {
	u, err := fileURI(path)
	if err != nil {
		return "", err
	}
	q := "mode=ro"
	if immutable {
		q += "&immutable=1"
	}
	q += "&_pragma=" + url.QueryEscape("busy_timeout("+strconv.FormatInt(opt.busyTimeout.Milliseconds(), 10)+")") +
		"&_pragma=" + url.QueryEscape("foreign_keys(1)") +
		"&_pragma=" + url.QueryEscape("query_only(1)")
	return u + "?" + q, nil
}

// needsWALFiles reports whether a read-only open failed because SQLite
// could not create the files a database in WAL mode is read through (its
// -wal and -shm, next to it): the user may read the directory but not
// write it.
func needsWALFiles(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}

// openWithoutWAL reads a state database in WAL mode that this user cannot
// create the -wal and -shm files of. When there is no -wal file, no
// process has the database open (the last one to close it folds the WAL
// into the file and removes it), so the file alone is the whole state and
// is read as immutable, without the shared memory. A read that a cadence
// starting at that very moment overlaps may fail, or miss what it writes;
// running the command again reads it. When a -wal file exists, a process
// may have the database open and its latest commits be only in the WAL,
// which cannot be read without the -shm file: the error says what is
// needed. (A -wal and -shm that exist, even read-only, SQLite reads.)
func openWithoutWAL(ctx context.Context, path string, opt options, cause error) (*Store, error) {
	wal := path + "-wal"
	if _, err := os.Stat(wal); err == nil {
		base := filepath.Base(path)
		return nil, fmt.Errorf("%w: the state is in WAL mode and has a %s-wal file (a cadence process has it open, or a reader "+
			"left it), so reading it needs %s-shm, which this user cannot create or write: give it write access to %s "+
			"(and to %s-shm if it exists), or read it as the user who runs cadence",
			cause, base, base, filepath.Dir(path), base)
	}
	dsn, err := readerDSN(path, opt, true)
	if err != nil {
		return nil, err
	}
	return connect(ctx, path, dsn, true)
}

// fileURI turns path into an absolute SQLite file: URI, escaping characters
// such as '?' and '#' that would otherwise end the file name.
func fileURI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath(), nil
}

// Path returns the file the store was opened from, or for PostgreSQL its
// URL with the password hidden.
func (s *Store) Path() string { return s.path }

// Shared reports whether the database can be shared by cadence processes
// on several machines (PostgreSQL), which then coordinate through leases.
func (s *Store) Shared() bool { return s.engine == enginePostgres }

// Close closes the database.
func (s *Store) Close() error {
	stErr := errors.Join(s.debt.close(), s.stmts.close())
	if err := s.db.Close(); err != nil {
		return errors.Join(stErr, fmt.Errorf("close %s: %w", s.path, err))
	}
	return stErr
}

// Update runs fn in one write transaction and commits it when fn returns
// nil; an error from fn (or a panic) rolls everything back.
//
// On SQLite the transaction is BEGIN IMMEDIATE: the write lock is taken at
// BEGIN, so fn never fails half-way for lack of it; if another process
// holds it past the busy timeout, Update returns ErrBusy.
//
// On PostgreSQL the transaction is SERIALIZABLE, so fn's reads and checks
// (the transition tables) hold at commit however many processes write:
// when PostgreSQL detects that a concurrent transaction made them stale
// (a serialization failure or a deadlock), the transaction is rolled back
// and fn runs again from the start, a few times, before Update gives up
// with ErrBusy. fn must therefore leave nothing behind but its writes to
// tx: whatever it computes from its reads must be computed anew on each
// run. A row lock held past the busy timeout is ErrBusy as well.
//
// fn must not call View or Update on the same store.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("update %s: %w", s.path, ErrReadOnly)
	}
	if s.engine == enginePostgres {
		return s.updatePostgres(ctx, false, fn)
	}
	return s.inTx(ctx, false, fn)
}

// UpdateRelaxed is Update for a write that must survive a crash of the
// process but not a power cut: on SQLite the transaction commits at
// synchronous=NORMAL, so its WAL frames reach the operating system at
// commit (a killed process loses nothing) and the disk at the next commit
// made by Update, instead of costing an fsync of their own. On PostgreSQL
// it commits with synchronous_commit off: the commit survives a crash of
// cadence (the server has it), but not one of the server's machine, and
// does not wait for the server's WAL flush. Use it only for a write whose
// loss in a power cut no guarantee depends on, such as the pid of a
// started check: after a power cut no check survives to be found by it,
// and a check left running is settled as interrupted with or without it.
// An agent's pid is not such a write (UpdateBeforeStart).
func (s *Store) UpdateRelaxed(ctx context.Context, fn func(tx *Tx) error) (err error) {
	if s.readOnly {
		return fmt.Errorf("update %s: %w", s.path, ErrReadOnly)
	}
	if s.engine == enginePostgres {
		return s.updatePostgres(ctx, true, fn)
	}
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction on %s: %w", s.path, classify(err))
	}
	defer func() {
		// The connection goes back to the pool at FULL, or not at all: a
		// connection whose setting could not be restored is discarded,
		// and the next one gets FULL from the DSN.
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous=FULL"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = fmt.Errorf("restore synchronous=FULL on %s: %w", s.path, rerr)
			}
		}
		_ = conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
		return fmt.Errorf("relax synchronous on %s: %w", s.path, classify(err))
	}
	var fs faultState
	_, err = s.runTx(ctx, false, fn, func() (*sqlx.Tx, error) { return conn.BeginTxx(ctx, nil) }, &fs)
	return err
}

// UpdateBeforeStart is Update for a commit that a process's start depends
// on: an attempt's row (G1) and its agent's pid. Both are durable, at
// synchronous=FULL (on PostgreSQL, with the server's WAL flushed), before
// the agent runs (the row may instead be committed by UpdateSyncedByStart
// when the pid's commit follows it; a command's row, which names the
// supervisor it will run under, is committed by this alone), so that
// after a power cut resume knows the agent ran:
// it continues the agent's session rather than starting a fresh one with
// the original prompt (G5), and inspect does not say "interrupted before
// the agent started" of an agent that ran. An agent runs only once its
// pid is committed (agent.Spec.OnStart), so a pid row lost in a power cut
// could only belong to an agent that never ran. The fault unsynced-starts
// (InjectFault) commits them relaxed instead: a build broken on purpose.
//
// fn always writes (the row, or the pid), so on SQLite its commit ends
// with an fsync of the WAL that also makes durable every commit of
// UpdateSyncedByNext made before it began.
func (s *Store) UpdateBeforeStart(ctx context.Context, fn func(tx *Tx) error) error {
	if s.fault.UnsyncedStarts {
		return s.UpdateRelaxed(ctx, fn)
	}
	owed := s.debt.seen()
	if err := s.Update(ctx, fn); err != nil {
		return err
	}
	s.debt.paid(owed)
	return nil
}

// UpdateSyncedByStart is Update for the commit of an attempt's row when
// the commit of its process's pid (UpdateBeforeStart) follows it before
// the process runs. On SQLite it commits at synchronous=NORMAL, like
// UpdateRelaxed: its WAL frames reach the operating system at once, so a
// killed process loses nothing, and the disk with the fsync of the WAL at
// the pid's commit, which syncs every frame written before its own. The
// row is thus durable before the process runs (G1), at one fsync per
// attempt instead of two. A power cut between the two commits may lose
// the row, but no process had run: the state is the one a cut before the
// row leaves. On PostgreSQL it is Update, whose commit other sessions
// may act on and which must therefore not be lost. The fault
// unsynced-starts (InjectFault) applies to it as to UpdateBeforeStart.
func (s *Store) UpdateSyncedByStart(ctx context.Context, fn func(tx *Tx) error) error {
	if s.engine == enginePostgres && !s.fault.UnsyncedStarts {
		return s.Update(ctx, fn)
	}
	return s.UpdateRelaxed(ctx, fn)
}

// View runs fn in a read-only transaction: every read inside it sees the
// same snapshot of the database.
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	return s.inTx(ctx, true, fn)
}

func (s *Store) inTx(ctx context.Context, readOnly bool, fn func(tx *Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: readOnly}
	if s.engine == enginePostgres {
		// One snapshot for the whole transaction, as SQLite gives; a
		// read-only one never has to be retried.
		opts.Isolation = sql.LevelRepeatableRead
	}
	var fs faultState
	run := func() (bool, error) {
		return s.runTx(ctx, readOnly, fn, func() (*sqlx.Tx, error) { return s.db.BeginTxx(ctx, opts) }, &fs)
	}
	if s.engine == enginePostgres {
		return s.retryPostgres(ctx, run)
	}
	_, err := run()
	return err
}

// faultState carries the decision of InjectFault for one call of Update
// across the runs of its function, so that a run repeated after a
// serialization failure is not counted as another write transaction.
type faultState struct {
	decided bool
	fault   Fault
	hit     bool
}

// runTx runs fn in the transaction begin starts, and commits it when fn
// returns nil. retry reports that the transaction failed for a conflict
// with another (PostgreSQL) and may be run again.
func (s *Store) runTx(ctx context.Context, readOnly bool, fn func(tx *Tx) error, begin func() (*sqlx.Tx, error), fs *faultState) (retry bool, err error) {
	sqlTx, err := begin()
	if err != nil {
		return isConflict(err) || isUnavailable(err), fmt.Errorf("begin transaction on %s: %w", s.path, classify(err))
	}
	done := false
	defer func() {
		if !done {
			// Reached on error and on panic; the panic continues unwinding.
			_ = sqlTx.Rollback()
		}
	}()
	tx := &Tx{ctx: ctx, tx: sqlTx, stmts: s.stmts, engine: s.engine, writable: !readOnly, project: s.project}
	if err := fenced(tx, fn); err != nil {
		done = true
		// A conflict fn met counts even if fn returned another error;
		// so does a connection lost before the commit.
		retry = tx.conflict || isConflict(err) || isUnavailable(err) || isUnavailable(tx.aborted)
		err = classify(err)
		if s.engine == enginePostgres && pgCode(err) == pgLockNotAvailable {
			// Name the database, as SQLite's busy error at BEGIN does.
			err = fmt.Errorf("write to %s: %w", s.path, err)
		}
		if rbErr := sqlTx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return retry, errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
		}
		return retry, err
	}
	if tx.aborted != nil {
		done = true
		_ = sqlTx.Rollback()
		return tx.conflict, fmt.Errorf("commit to %s: the transaction was aborted by a failed statement whose error was not returned: %w", s.path, classify(tx.aborted))
	}
	if !readOnly && !fs.decided {
		fs.fault, fs.hit = s.injected()
		fs.decided = true
	}
	if !readOnly {
		if err := s.checkFiles(); err != nil {
			done = true
			_ = sqlTx.Rollback()
			return false, fmt.Errorf("commit to %s: %w", s.path, err)
		}
	}
	done = true
	if fs.hit && !fs.fault.AfterCommit {
		_ = sqlTx.Rollback()
		return false, fmt.Errorf("commit to %s: %w (write transaction %d rolled back)", s.path, ErrInjectedFault, fs.fault.Tx)
	}
	if err := sqlTx.Commit(); err != nil {
		return isConflict(err), fmt.Errorf("commit to %s: %w", s.path, classify(err))
	}
	if fs.hit {
		return false, fmt.Errorf("commit to %s: %w (write transaction %d committed; the caller was told it failed)", s.path, ErrInjectedFault, fs.fault.Tx)
	}
	return false, nil
}

// fenced runs fn in a write transaction made under a lease (WithLease)
// only once the transaction has checked that the lease is still held.
func fenced(tx *Tx, fn func(tx *Tx) error) error {
	if l, ok := leaseFrom(tx.ctx); ok && tx.writable {
		if err := tx.CheckLease(l); err != nil {
			return err
		}
	}
	return fn(tx)
}

// classify adds the package's sentinels to driver errors a caller must tell
// apart: a lock held too long (ErrBusy), a file that is not a database
// (ErrNotSQLite) and a damaged one (ErrCorrupt). Other errors are returned
// unchanged.
func classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return classifyPostgres(err)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY:
		if !errors.Is(err, ErrBusy) {
			return fmt.Errorf("%w: another connection held the write lock past the busy timeout: %w", ErrBusy, err)
		}
	case sqlite3.SQLITE_NOTADB:
		if !errors.Is(err, ErrNotSQLite) {
			return fmt.Errorf("%w: %w", ErrNotSQLite, err)
		}
	case sqlite3.SQLITE_CORRUPT:
		if !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return err
}
