package checkpoint_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// A run's state is written in Update transactions and read back, after a
// restart, to find where to resume.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cadence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	lock, err := checkpoint.AcquireLock(filepath.Join(dir, ".cadence"))
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release()

	store, err := checkpoint.Open(ctx, filepath.Join(dir, ".cadence", "state.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	now := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		run := checkpoint.NewRun(checkpoint.Run{ID: "run-1"}, now)
		step := checkpoint.NewStep(checkpoint.Step{RunID: "run-1", ID: "plan", Agent: "claude", MaxAttempts: 3}, now)
		if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
			return err
		}
		// G1: the attempt row is committed before the agent starts.
		return tx.StartAttempt(&checkpoint.Attempt{
			RunID: "run-1", StepID: "plan", N: 1, Kind: checkpoint.KindInitial, StartedAt: now,
		})
	})
	if err != nil {
		log.Fatal(err)
	}

	err = store.View(ctx, func(tx *checkpoint.Tx) error {
		run, err := tx.LatestUnfinishedRun()
		if err != nil {
			return err
		}
		running, err := tx.RunningAttempts(run.ID)
		if err != nil {
			return err
		}
		for _, a := range running {
			fmt.Printf("run %s: settle attempt %s #%d (started %s)\n", run.ID, a.StepID, a.N, a.StartedAt.Format(time.RFC3339))
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// run run-1: settle attempt plan #1 (started 2026-11-22T15:00:00Z)
}
