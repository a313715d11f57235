package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// errRunCancelled is the cause with which a process stops the run it
// works on when `cadence cancel`, in another process, cancelled it.
var errRunCancelled = errors.New("the run was cancelled by cadence cancel")

// watchCancelEvery is how often a process working on a run reads whether
// the run was cancelled meanwhile: a cancel from another process stops
// it within about this long (plus the time its agents take to stop).
const watchCancelEvery = time.Second

// watchCancel reads the run's status every watchCancelEvery, until ctx
// ends or stop is called, and calls cancelled once when it finds the run
// cancelled. A read that fails is tried again at the next tick: the
// run's own commits report a state that cannot be reached.
func watchCancel(ctx context.Context, store *checkpoint.Store, runID string, cancelled func()) (stop func()) {
	return poll(ctx, watchCancelEvery, func(ctx context.Context) bool {
		var status checkpoint.RunStatus
		err := store.View(ctx, func(tx *checkpoint.Tx) error {
			r, err := tx.Run(runID)
			if err == nil {
				status = r.Status()
			}
			return err
		})
		if err == nil && status == checkpoint.RunCancelled {
			cancelled()
			return true
		}
		return false
	})
}

// poll calls check every interval, until it reports true, ctx ends or
// stop is called; stop returns once check is no longer running.
func poll(ctx context.Context, every time.Duration, check func(context.Context) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if check(ctx) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// cancelledResult is the result of a run that `cadence cancel` ended while
// this process worked on it: its attempts were recorded as interrupted
// (uncounted) as they stopped; the run's status, and its run_cancelled
// notification, are the cancel's.
func cancelledResult(sink history.Sink, runID, stepID string, now time.Time) *Result {
	sink.Emit(history.Event{Time: now, Type: history.EventRunFinished, RunID: runID, Status: string(checkpoint.RunCancelled)})
	return &Result{RunID: runID, Status: StatusCancelled, Step: stepID, Message: "cancelled by cadence cancel"}
}
