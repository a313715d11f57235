package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/history"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/retrystate"
)

// errWaitTooLong ends a run whose next wait exceeds --max-wait; circuit
// names the agent when the wait is for its circuit.
type errWaitTooLong struct {
	until   time.Time
	circuit string
}

func (e *errWaitTooLong) Error() string {
	return "wait until " + e.until.Format(time.RFC3339) + " exceeds --max-wait"
}

// stepResult is how runStep left a step.
type stepResult int

const (
	stepDone stepResult = iota
	stepFailed
	// stepAwaiting: the step waits for a person (an approval gate, or a
	// loop whose iteration holds one) and nothing here can move it on.
	stepAwaiting
)

// loop settles interrupted attempts, then runs every unfinished step in
// order. It returns the run's outcome; errors are for the store and the
// machine, not for agents (an agent's failure is an attempt outcome).
func (p *project) loop(ctx context.Context, run *checkpoint.Run) (*Result, error) {
	if p.runLease != nil {
		// The run is held by a lease (G7, in the state): losing it to
		// another process stops this one, whose writes it fences; so does
		// finding the state file or the lock file gone when renewing it.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		release := p.holdLease(ctx, *p.runLease, func(err error) {
			p.log.Warn("lost the hold on the run; stopping", "run", run.ID, "err", err)
			cancel(err)
		})
		defer release()
		stopWatch := watchCancel(ctx, p.store, run.ID, func() {
			p.log.Warn("the run was cancelled by cadence cancel; stopping", "run", run.ID)
			cancel(errRunCancelled)
		})
		defer stopWatch()
		if !p.shared() {
			stop := p.watchState(ctx, func(err error) {
				p.log.Warn("the state file is gone; stopping", "run", run.ID, "err", err)
				cancel(err)
			})
			defer stop()
		}
		ctx = p.fenced(ctx)
	}
	// The steps that had succeeded before this process: a step that
	// settling just completed was reported as it succeeded, and is not
	// reported again as one that had.
	done := map[string]bool{}
	var steps, succeeded []checkpoint.Step
	p.aheadRows, p.ahead = p.ahead.take(run.ID), nil
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		if p.aheadRows != nil {
			steps = p.aheadRows.steps
		} else if steps, err = tx.Steps(run.ID); err != nil {
			return err
		}
		for _, s := range steps {
			done[s.ID] = s.Status() == checkpoint.StepSucceeded
		}
		succeeded, err = succeededUnits(tx, p.wf, steps)
		return err
	}); err != nil {
		return nil, fmt.Errorf("read the steps of run %s: %w", run.ID, err)
	}
	// The envelope files are rewritten beside the settling and the
	// graph's first read, on the other core, and are whole before the
	// first step starts (runGraph waits for them).
	restored := make(chan error, 1)
	p.restoring = restored
	if ahead := p.aheadRows; ahead != nil {
		// The steps' own envelopes are being restored with the rows
		// read ahead: a map's items are left.
		items := slices.DeleteFunc(succeeded, func(s checkpoint.Step) bool { return s.ItemKey == "" })
		go func() {
			err := <-ahead.restored
			if err == nil {
				err = restoreEnvelopes(p.log, p.dir, items)
			}
			restored <- err
		}()
	} else {
		go func() {
			if p.aheadDone != nil {
				// Rows read ahead and not used are still restoring
				// files: the same files are not written twice at once.
				<-p.aheadDone
			}
			restored <- restoreEnvelopes(p.log, p.dir, succeeded)
		}()
	}
	settled, err := p.settle(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("settle interrupted attempts of run %s: %w", run.ID, err)
	}
	// The rows just read are still the run's when settling changed none
	// and no other process works on the run (this one holds it, and the
	// project's lock on SQLite): the graph starts from them instead of
	// reading the same rows again. On a shared database other processes
	// write the run's rows, and the graph reads them afresh.
	if settled > 0 || p.shared() {
		steps = nil
	}
	return p.runGraph(ctx, run, done, steps)
}

// watchStateEvery is how often a run on SQLite checks, between its
// commits, that its state file is still the one it opened.
const watchStateEvery = 2 * time.Second

// watchState checks every watchStateEvery, until ctx ends or stop is
// called, that the store's SQLite file is still the one opened (every
// commit checks it too): a run waiting out a long backoff, or running a
// long agent, stops at once when it was deleted or replaced, instead of
// at its next commit, since nothing it does would be recorded. gone is
// called once with the reason. (A deleted lock file is found at the next
// commit: until then the run's lease keeps other processes out.)
func (p *project) watchState(ctx context.Context, gone func(error)) (stop func()) {
	return poll(ctx, watchStateEvery, func(context.Context) bool {
		if err := p.store.CheckStateFile(); err != nil {
			gone(err)
			return true
		}
		return false
	})
}

// stopped turns an error that ended the loop into a result: an interruption
// or a wait beyond --max-wait leaves the run resumable (exit 3); anything
// else is returned as an error with the run left as committed.
func (p *project) stopped(runID, stepID string, err error) (*Result, error) {
	var (
		long  *errWaitTooLong
		login *attempt.LoginError
	)
	switch {
	case errors.As(err, &login):
		// No retry fixes a login: the run stops, resumable, and says who
		// has to log in.
		res := &Result{RunID: runID, Status: StatusInterrupted, Step: login.Step, Message: login.Error(), login: login}
		return p.finish(runID, checkpoint.RunInterrupted, res)
	case errors.As(err, &long):
		res := &Result{RunID: runID, Status: StatusInterrupted, Step: stepID, ResumeAt: long.until, Circuit: long.circuit,
			Message: fmt.Sprintf("step %s waits until %s, longer than --max-wait", stepID, long.until.Format(time.RFC3339))}
		if long.circuit != "" {
			res.Message = fmt.Sprintf("step %s waits until %s for agent %s's circuit, longer than --max-wait (%s)",
				stepID, long.until.Format(time.RFC3339), long.circuit, history.ResetHint(long.circuit))
		}
		return p.finish(runID, checkpoint.RunInterrupted, res)
	case errors.Is(err, context.Canceled), errors.Is(err, attempt.ErrInterrupted):
		res := &Result{RunID: runID, Status: StatusInterrupted, Step: stepID, Message: "interrupted"}
		return p.finish(runID, checkpoint.RunInterrupted, res)
	}
	return nil, err
}

// finish commits the run's final status for this process and emits it;
// the notification of a run that ended (or stopped for a login) is
// committed with it, and sent after.
func (p *project) finish(runID string, status checkpoint.RunStatus, res *Result) (*Result, error) {
	now := p.now()
	// The caller's context may be cancelled: this write must still land,
	// under the run's lease when it has one.
	ctx := p.fenced(context.Background())
	cancelled := false
	err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		r, err := tx.Run(runID)
		if err != nil {
			return err
		}
		if cancelled = r.Status() == checkpoint.RunCancelled; cancelled {
			return nil // cadence cancel ended it: that stands
		}
		if status == checkpoint.RunInterrupted {
			if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: history.EventKindRunStopped, Detail: res.Message}); err != nil {
				return err
			}
		}
		if err := tx.RunEnded(r, status, now); err != nil {
			return err
		}
		if ev, ok := p.notes.runEnd(runID, status, res, now); ok {
			return p.notes.enqueue(tx, ev)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record run %s as %s: %w", runID, status, err)
	}
	if cancelled {
		return cancelledResult(p.sink, runID, res.Step, now), nil
	}
	p.notes.kick()
	typ := history.EventRunFinished
	if status == checkpoint.RunInterrupted {
		typ = history.EventRunInterrupted
	}
	ev := history.Event{Time: now, Type: typ, RunID: runID, Status: string(status), Step: res.Step, Message: res.Message}
	if !res.ResumeAt.IsZero() {
		t := res.ResumeAt
		ev.Until = &t
	}
	p.sink.Emit(ev)
	return res, nil
}

func (p *project) now() time.Time { return p.clock.Now().UTC() }

func stepRow(ctx context.Context, store *checkpoint.Store, runID, stepID string) (*checkpoint.Step, error) {
	var st *checkpoint.Step
	err := store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		st, err = tx.Step(runID, stepID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read step %s: %w", stepID, err)
	}
	return st, nil
}

// runUnit runs attempts of a step instance until it succeeds, fails for
// good, or cadence is stopped, waiting where the attempt runner says.
// Every decision is taken from the committed state, so a resumed process
// continues exactly where the last one left off.
func (p *project) runUnit(ctx context.Context, in *attempt.Instance) (stepResult, any, error) {
	var last string // the reason of the last wait
	if p.firstAttempt != nil {
		p.firstAttempt()
	}
	for {
		out, err := p.attempts.Run(ctx, in)
		switch {
		case err != nil:
			return 0, nil, err
		case out.Done:
			return stepDone, out.Output, nil
		case out.Failed:
			return stepFailed, nil, nil
		case !out.Wait.IsZero():
			// A wait for a place under max_concurrent is looked at again
			// and again: it is announced once.
			quiet := out.Reason == "max_concurrent" && last == out.Reason
			last = out.Reason
			if err := p.wait(ctx, in, out, quiet); err != nil {
				return 0, nil, err
			}
		}
	}
}

// wait blocks until deadline, honouring --max-wait. The deadline is absolute
// and committed before the wait starts, so a resumed process waits only what
// remains (G4) and a clock moved backwards only lengthens the wait (G10).
func (p *project) wait(ctx context.Context, in *attempt.Instance, out attempt.Outcome, quiet bool) error {
	u, ws, deadline, reason := in.Unit(), in.Step, out.Wait, out.Reason
	remaining := retrystate.Remaining(p.now(), deadline)
	if remaining <= 0 {
		return nil
	}
	circuitOf := out.Circuit
	if err := p.notes.longWait(ctx, in, out, remaining, p.now()); err != nil {
		return err
	}
	if p.opts.MaxWait > 0 && remaining > p.opts.MaxWait {
		return &errWaitTooLong{until: deadline, circuit: circuitOf}
	}
	d := deadline
	if !quiet {
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventWaiting, RunID: u.RunID, Step: u.StepID, Item: u.Item, Agent: cmp.Or(out.Circuit, ws.Agent), Until: &d, Reason: reason})
	}
	if reason == "backoff" || reason == "usage limit" {
		p.attempts.Failpoint.Hit(attempt.FailDuringBackoff)
	}
	label := u.StepID
	if u.Item != "" {
		label += "[" + u.Item + "]"
	}
	what := reason
	if circuitOf != "" {
		what = fmt.Sprintf("agent %s's circuit is open (%s)", circuitOf, history.ResetHint(circuitOf))
	}
	return retrystate.WaitUntil(ctx, p.clock, deadline, func(left time.Duration) {
		p.sink.Tick(label, what, left)
	})
}

// failStep fails a step instance for good, for the reason why.
func (p *project) failStep(ctx context.Context, in *attempt.Instance, why string) (stepResult, any, error) {
	if _, err := p.attempts.FailStep(ctx, in, why); err != nil {
		return 0, nil, err
	}
	return stepFailed, nil, nil
}
