package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// Cancel ends an unfinished run for good (`cadence cancel`): the run
// o.RunID, or the unfinished run of o.WorkflowPath, or the project's only
// unfinished run; several make it refuse and list them. The run's status
// becomes cancelled, with a run_cancelled event in its audit log and a
// run_cancelled notification, in one transaction: no resume continues it.
//
// When no process works on the run, its attempts left running (a process
// killed) are settled in that transaction as an abandonment settles them:
// their agents killed, the attempts interrupted. When a process works on
// it (it holds the workflow's lock, or a live lease on the run), that
// process sees the cancel within watchCancelEvery, stops its agents and
// records their attempts as interrupted, uncounted, as on SIGINT.
func Cancel(ctx context.Context, o Options) (*Result, error) {
	runID, err := chooseCancel(ctx, &o)
	if err != nil {
		return nil, err
	}
	o.lockOptional = true
	p, err := open(ctx, o, false)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var ab *abandonment
	if p.lock != nil {
		ab = &abandonment{p: p, runID: runID, cancel: true}
		var held *checkpoint.LeaseHeldError
		if err := ab.prepare(ctx); errors.As(err, &held) {
			ab = nil // a process on another machine works on it
		} else if err != nil {
			return nil, err
		}
	}
	now := p.now()
	res := &Result{RunID: runID, Status: StatusCancelled, Message: "cancelled by cadence cancel"}
	if ab == nil {
		res.Message += "; the process working on it stops within a few seconds"
	}
	err = p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		r, err := tx.Run(runID)
		if err != nil {
			return err
		}
		if err := cancellable(r); err != nil {
			return err
		}
		if ab != nil {
			if err := p.takeRun(tx, runID); err != nil {
				return err
			}
			if err := ab.commit(tx, now); err != nil {
				return err
			}
		}
		if err := tx.RunEnded(r, checkpoint.RunCancelled, now); err != nil {
			return err
		}
		if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: "run_cancelled", Detail: res.Message}); err != nil {
			return err
		}
		if ev, ok := p.notes.runEnd(runID, checkpoint.RunCancelled, res, now); ok {
			return p.notes.enqueue(tx, ev)
		}
		return nil
	})
	if err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventRunFinished, RunID: runID, Status: string(checkpoint.RunCancelled)})
	// The notification goes out now (what is not delivered stays in the
	// outbox for the project's next process).
	p.notes.start(ctx)
	p.notes.kick()
	p.notes.stop()
	return res, nil
}

// cancellable refuses a run that is not unfinished.
func cancellable(r *checkpoint.Run) error {
	switch r.Status() {
	case checkpoint.RunRunning, checkpoint.RunInterrupted:
		return nil
	case checkpoint.RunCancelled:
		return usagef("run %s was cancelled already", r.ID)
	}
	return usagef("run %s is %s: only an unfinished run (running, stopped, waiting or interrupted) can be cancelled", r.ID, r.Status())
}

// chooseCancel returns the run Cancel is to end, and sets o.WorkflowPath
// to the file it was started from: o.RunID; else the unfinished run of
// o.WorkflowPath; else the project's only unfinished run. It reads the
// state without the lock; Cancel checks the run again in its
// transaction.
func chooseCancel(ctx context.Context, o *Options) (string, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return "", usagef("project directory %s: %w", o.Dir, err)
	}
	runs, err := history.Runs(ctx, dir, o.State)
	if errors.Is(err, history.ErrNoRuns) {
		return "", usagef("no runs in %s: nothing to cancel", dir)
	}
	if err != nil {
		return "", err
	}
	want := ""
	if o.WorkflowPath != "" {
		want = checkpoint.RelPath(dir, o.WorkflowPath)
	}
	var target *checkpoint.Run
	var unfinished []checkpoint.Run
	for i := range runs {
		r := &runs[i]
		if o.RunID != "" && r.ID == o.RunID {
			target = r
		}
		open := r.Status() == checkpoint.RunRunning || r.Status() == checkpoint.RunInterrupted
		if open && (want == "" || filepath.Clean(r.WorkflowPath) == filepath.Clean(want)) {
			unfinished = append(unfinished, *r)
		}
	}
	switch {
	case o.RunID != "" && target == nil:
		return "", usagef("no run %s in %s (see: cadence runs %s)", o.RunID, dir, dir)
	case o.RunID != "":
	case len(unfinished) == 1:
		target = &unfinished[0]
	case len(unfinished) > 1:
		return "", ambiguousRuns(unfinished, "cancel")
	case want != "":
		return "", usagef("workflow %s has no unfinished run in %s: nothing to cancel (see: cadence runs %s)", want, dir, dir)
	default:
		return "", usagef("no unfinished run in %s: nothing to cancel (see: cadence runs %s)", dir, dir)
	}
	if err := cancellable(target); err != nil {
		return "", err
	}
	o.WorkflowPath = target.WorkflowPath
	if !filepath.IsAbs(o.WorkflowPath) {
		o.WorkflowPath = filepath.Join(dir, filepath.FromSlash(o.WorkflowPath))
	}
	return target.ID, nil
}

// neverResumed is resume's refusal of a cancelled run.
func neverResumed(r *checkpoint.Run) error {
	return usagef("run %s was cancelled (cadence cancel): a cancelled run is never resumed; start a new run with `cadence run`", r.ID)
}
