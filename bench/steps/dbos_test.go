package steps

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // DBOS on SQLite (modernc.org/sqlite)
)

// dbosStates are the system databases DBOS runs on here. On SQLite it is
// given a handle opened like cadence's state (WAL, synchronous=FULL)
// rather than its own default of synchronous=NORMAL, so that a committed
// step survives a power cut on both sides.
var dbosStates = []struct {
	name   string
	config func(b *testing.B) dbos.Config
}{
	{"sqlite", func(b *testing.B) dbos.Config {
		db := openSQLite(b, filepath.Join(scratchDir(b), "dbos.db"))
		db.SetMaxOpenConns(8) // as DBOS sets its own SQLite pool
		return dbos.Config{SQLiteSystemDB: db}
	}},
	{"postgres", func(b *testing.B) dbos.Config {
		u, _ := postgres(b).database(b)
		return dbos.Config{DatabaseURL: u}
	}},
}

// dbosChain is a durable workflow of n steps, each one start of /bin/true
// recorded by DBOS as a step.
func dbosChain(ctx dbos.Context, n int) (int, error) {
	for i := range n {
		if _, err := dbos.RunAsStep(ctx, func(ctx context.Context) (int, error) {
			return i, startTrue(ctx)
		}, dbos.WithStepName("s"+strconv.Itoa(i))); err != nil {
			return i, err
		}
	}
	return n, nil
}

// dbosItem is a durable workflow of one step, one start of /bin/true: a
// map item.
func dbosItem(ctx dbos.Context, i int) (int, error) {
	return dbos.RunAsStep(ctx, func(ctx context.Context) (int, error) {
		return i, startTrue(ctx)
	}, dbos.WithStepName("item"))
}

// newDBOS makes and launches a DBOS context on config, with what register
// registers first; it is shut down when b ends.
func newDBOS(b *testing.B, config dbos.Config, register func(dbos.Context)) dbos.Context {
	config.AppName = "bench-steps"
	config.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Not b's context, which is cancelled before the cleanups run: DBOS
	// would log its queue runner's cancelled queries as errors while it
	// shuts down.
	ctx, err := dbos.NewContext(context.WithoutCancel(b.Context()), config)
	if err != nil {
		b.Fatal(err)
	}
	register(ctx)
	if err := dbos.Launch(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dbos.Shutdown(ctx, 10*time.Second) })
	return ctx
}

// BenchmarkDBOS runs the chain and the map items on DBOS Transact, timed
// from the workflows' start to their last result: DBOS's own start (its
// migrations, its launch) is not counted, unlike cadence's process start.
func BenchmarkDBOS(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	for _, st := range dbosStates {
		b.Run("chain/"+st.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				ctx := newDBOS(b, st.config(b), func(ctx dbos.Context) {
					dbos.RegisterWorkflow(ctx, dbosChain, dbos.WithWorkflowName("chain"))
				})
				b.StartTimer()
				start := time.Now()
				h, err := dbos.RunWorkflow(ctx, dbosChain, n)
				if err != nil {
					b.Fatal(err)
				}
				if got, err := h.GetResult(); err != nil || got != n {
					b.Fatalf("chain: %d steps, %v; want %d", got, err, n)
				}
				total += time.Since(start)
			}
			reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
		})
		// Map items are workflows on a queue that runs 4 at once; the
		// queue is polled every millisecond (DBOS's default is 1 s).
		b.Run("map/"+st.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				var queue dbos.Queue
				ctx := newDBOS(b, st.config(b), func(ctx dbos.Context) {
					dbos.RegisterWorkflow(ctx, dbosItem, dbos.WithWorkflowName("item"))
					var err error
					queue, err = dbos.RegisterQueue(ctx, "items", dbos.WithWorkerConcurrency(4),
						dbos.WithQueueBasePollingInterval(time.Millisecond))
					if err != nil {
						b.Fatal(err)
					}
				})
				b.StartTimer()
				start := time.Now()
				handles := make([]dbos.WorkflowHandle[int], n)
				for i := range n {
					h, err := dbos.RunWorkflow(ctx, dbosItem, i, dbos.WithQueue(queue))
					if err != nil {
						b.Fatal(err)
					}
					handles[i] = h
				}
				for i, h := range handles {
					if got, err := h.GetResult(); err != nil || got != i {
						b.Fatalf("item %d: %d, %v", i, got, err)
					}
				}
				total += time.Since(start)
			}
			reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "item")
		})
	}
}
