package steps

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// riverStep is a River job: step I of a chain, or map item I.
type riverStep struct {
	I int `json:"i"`
}

func (riverStep) Kind() string { return "step" }

// riverSteps is a River job that runs a chain of N resumable steps.
type riverSteps struct {
	N int `json:"n"`
}

func (riverSteps) Kind() string { return "steps" }

// riverTx is what a worker needs of a transaction on one driver.
type riverTx[TTx any] struct {
	begin    func(ctx context.Context) (TTx, error)
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx)
	// complete is river.JobCompleteTx with the driver's type.
	complete func(ctx context.Context, tx TTx, job *river.Job[riverStep]) error
	// setStep is river.ResumableSetStepTx with the driver's type.
	setStep func(ctx context.Context, tx TTx, job *river.Job[riverSteps]) error
}

// stepsWorker runs a chain as one job of N resumable steps, each one start
// of /bin/true and then, in a transaction of its own, the step recorded
// (river.ResumableSetStepTx), so that each step is durable before the next
// begins, as a DBOS step is. done is closed when the last step has
// committed.
type stepsWorker[TTx any] struct {
	river.WorkerDefaults[riverSteps]
	tx   riverTx[TTx]
	done chan struct{}
}

func (w *stepsWorker[TTx]) Work(ctx context.Context, job *river.Job[riverSteps]) error {
	var failed error
	for i := range job.Args.N {
		river.ResumableStep(ctx, "s"+strconv.Itoa(i), nil, func(ctx context.Context) error {
			if err := startTrue(ctx); err != nil {
				failed = err
				return err
			}
			tx, err := w.tx.begin(ctx)
			if err != nil {
				failed = err
				return err
			}
			defer w.tx.rollback(ctx, tx)
			if err := w.tx.setStep(ctx, tx, job); err != nil {
				failed = err
				return err
			}
			failed = w.tx.commit(ctx, tx)
			return failed
		})
	}
	if failed == nil {
		close(w.done)
	}
	return failed
}

// chainWorker runs step I of a chain of n: one start of /bin/true, then
// in one transaction the next step's job inserted and this one completed,
// so that each step is durable before the next begins. done is closed
// when the last step has committed.
type chainWorker[TTx any] struct {
	river.WorkerDefaults[riverStep]
	tx   riverTx[TTx]
	n    int
	done chan struct{}
}

func (w *chainWorker[TTx]) Work(ctx context.Context, job *river.Job[riverStep]) error {
	if err := startTrue(ctx); err != nil {
		return err
	}
	tx, err := w.tx.begin(ctx)
	if err != nil {
		return err
	}
	defer w.tx.rollback(ctx, tx)
	if next := job.Args.I + 1; next < w.n {
		if _, err := river.ClientFromContext[TTx](ctx).InsertTx(ctx, tx, riverStep{I: next}, nil); err != nil {
			return err
		}
	}
	if err := w.tx.complete(ctx, tx, job); err != nil {
		return err
	}
	if err := w.tx.commit(ctx, tx); err != nil {
		return err
	}
	if job.Args.I+1 == w.n {
		close(w.done)
	}
	return nil
}

// itemWorker runs a map item: one start of /bin/true; River completes the
// job (in its batched completer) when Work returns.
type itemWorker struct {
	river.WorkerDefaults[riverStep]
}

func (itemWorker) Work(ctx context.Context, _ *river.Job[riverStep]) error { return startTrue(ctx) }

// riverClient migrates River's schema on driver and starts a client with
// worker on the default queue, maxWorkers at once, fetching every
// millisecond (River's defaults are 100 ms between fetches and a poll
// each second); it is stopped when b ends.
func riverClient[TTx any, TArgs river.JobArgs](b *testing.B, driver riverdriver.Driver[TTx], worker river.Worker[TArgs], maxWorkers int) *river.Client[TTx] {
	ctx := b.Context()
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatalf("river migrate: %v", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	client, err := river.NewClient(driver, &river.Config{
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Stop(stop); err != nil {
			b.Errorf("river stop: %v", err)
		}
	})
	return client
}

// riverChain times a chain of n steps on one River client, a job per
// step.
func riverChain[TTx any](b *testing.B, n int, driver riverdriver.Driver[TTx], tx riverTx[TTx]) time.Duration {
	b.StopTimer()
	w := &chainWorker[TTx]{tx: tx, n: n, done: make(chan struct{})}
	client := riverClient(b, driver, w, 1)
	b.StartTimer()
	start := time.Now()
	if _, err := client.Insert(b.Context(), riverStep{I: 0}, nil); err != nil {
		b.Fatal(err)
	}
	waitRiver(b, w.done)
	return time.Since(start)
}

// riverResumable times a chain of n steps on one River client, one job
// of n resumable steps.
func riverResumable[TTx any](b *testing.B, n int, driver riverdriver.Driver[TTx], tx riverTx[TTx]) time.Duration {
	b.StopTimer()
	w := &stepsWorker[TTx]{tx: tx, done: make(chan struct{})}
	client := riverClient[TTx](b, driver, w, 1)
	b.StartTimer()
	start := time.Now()
	if _, err := client.Insert(b.Context(), riverSteps{N: n}, nil); err != nil {
		b.Fatal(err)
	}
	waitRiver(b, w.done)
	return time.Since(start)
}

// waitRiver waits until done is closed or b's time is up.
func waitRiver(b *testing.B, done <-chan struct{}) {
	select {
	case <-done:
	case <-b.Context().Done():
		b.Fatal("chain not finished")
	}
}

// riverMap times n items, 4 at once, on one River client: inserted in one
// batch, done when River reports the n-th completed.
func riverMap[TTx any](b *testing.B, n int, driver riverdriver.Driver[TTx]) time.Duration {
	b.StopTimer()
	client := riverClient(b, driver, itemWorker{}, 4)
	completed, cancel := client.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: riverStep{I: i}}
	}
	b.StartTimer()
	start := time.Now()
	if _, err := client.InsertMany(b.Context(), params); err != nil {
		b.Fatal(err)
	}
	for range n {
		select {
		case _, ok := <-completed:
			if !ok {
				b.Fatal("river closed its event channel")
			}
		case <-b.Context().Done():
			b.Fatal("items not finished")
		}
	}
	return time.Since(start)
}

// pgxTx is riverTx on PostgreSQL through pgx.
func pgxTx(pool *pgxpool.Pool) riverTx[pgx.Tx] {
	return riverTx[pgx.Tx]{
		begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(ctx context.Context, tx pgx.Tx) { _ = tx.Rollback(ctx) },
		complete: func(ctx context.Context, tx pgx.Tx, job *river.Job[riverStep]) error {
			_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		},
		setStep: func(ctx context.Context, tx pgx.Tx, job *river.Job[riverSteps]) error {
			_, err := river.ResumableSetStepTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		},
	}
}

// sqlTx is riverTx on SQLite through database/sql.
func sqlTx(db *sql.DB) riverTx[*sql.Tx] {
	return riverTx[*sql.Tx]{
		begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		rollback: func(_ context.Context, tx *sql.Tx) { _ = tx.Rollback() },
		complete: func(ctx context.Context, tx *sql.Tx, job *river.Job[riverStep]) error {
			_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job)
			return err
		},
		setStep: func(ctx context.Context, tx *sql.Tx, job *river.Job[riverSteps]) error {
			_, err := river.ResumableSetStepTx[*riversqlite.Driver](ctx, tx, job)
			return err
		},
	}
}

// riverSQLite opens a SQLite file for River like cadence's state (WAL,
// synchronous=FULL), with the one connection River's SQLite driver asks
// for.
func riverSQLite(b *testing.B) *sql.DB {
	db := openSQLite(b, filepath.Join(scratchDir(b), "river.db"))
	db.SetMaxOpenConns(1)
	return db
}

// riverPool connects to a new database of the shared cluster.
func riverPool(b *testing.B) *pgxpool.Pool {
	u, _ := postgres(b).database(b)
	pool, err := pgxpool.New(b.Context(), u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// BenchmarkRiver runs the chain two ways, chain/… a job per step, each
// inserting the next in the transaction that completes it, and steps/… one
// job of resumable steps each recorded in a transaction of its own, and
// the map items (a job per
// item, 4 workers) on River, on SQLite and on PostgreSQL, timed from the
// first insert to the last completion: River's own start is not counted.
func BenchmarkRiver(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	b.Run("chain/sqlite", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			db := riverSQLite(b)
			total += riverChain(b, n, riversqlite.New(db), sqlTx(db))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
	})
	b.Run("steps/sqlite", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			db := riverSQLite(b)
			total += riverResumable(b, n, riversqlite.New(db), sqlTx(db))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
	})
	b.Run("map/sqlite", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += riverMap(b, n, riversqlite.New(riverSQLite(b)))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "item")
	})
	b.Run("chain/postgres", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			pool := riverPool(b)
			total += riverChain(b, n, riverpgxv5.New(pool), pgxTx(pool))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
	})
	b.Run("steps/postgres", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			pool := riverPool(b)
			total += riverResumable(b, n, riverpgxv5.New(pool), pgxTx(pool))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
	})
	b.Run("map/postgres", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += riverMap(b, n, riverpgxv5.New(riverPool(b)))
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "item")
	})
}
