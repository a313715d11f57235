package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// On a shared PostgreSQL state a step of the graph is a step instance any
// process may run, as a map item is (SPEC §16): the run's process and
// every worker claim it under a lease of its own, settle what a holder
// whose lease expired left running, and fence every commit with the lease.
// The run's process alone takes the graph's decisions (when, skips); a
// worker claims only a step the committed state says runs.

// claimStep takes the lease of step instance in when the step has not
// ended and no live process holds it: c is nil when one does, and ended
// is the step's row when it has ended (succeeded or failed). One write
// transaction reads the step's row, takes the lease, reads the
// attempts its last holder left running and, when there are none, the
// state the next attempt decides from, so that a claim costs one commit
// on PostgreSQL instead of four. The reads hold at commit: the
// transaction is BEGIN IMMEDIATE on SQLite and SERIALIZABLE on
// PostgreSQL, and after it every commit of the step's last holder is
// fenced by the lease's new epoch.
func (p *project) claimStep(ctx context.Context, in *attempt.Instance) (c *claimed, ended *checkpoint.Step, err error) {
	l := p.id.lease()
	l.RunID, l.StepID = in.Run.ID, in.Step.ID
	err = p.store.Update(checkpoint.WithoutLease(ctx), func(tx *checkpoint.Tx) error {
		// Update may run this function again: nothing of a run before
		// is kept.
		c, ended = &claimed{}, nil
		st, err := tx.Step(in.Run.ID, in.Step.ID)
		if err != nil {
			return fmt.Errorf("read step %s: %w", in.Step.ID, err)
		}
		if st.Status() == checkpoint.StepSucceeded || st.Status() == checkpoint.StepFailed {
			ended = st
			return nil
		}
		if c.lease, c.prev, err = tx.AcquireLease(l, p.leaseTTL(), p.id.gone); err != nil {
			return err
		}
		if c.running, err = runningAttempts(tx, c.lease.Unit()); err != nil || len(c.running) > 0 {
			return err
		}
		c.state, err = attempt.ReadState(tx, p.attempts, in, st)
		return err
	})
	var held *checkpoint.LeaseHeldError
	if errors.As(err, &held) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("claim step %s: %w", in.Step.ID, err)
	}
	if ended != nil {
		return nil, ended, nil
	}
	if c.prev.Owner != "" && c.prev.Owner != l.Owner {
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventItemTakenOver, RunID: in.Run.ID, Step: in.Step.ID,
			Message: fmt.Sprintf("taken over from pid %d on host %s, whose lease expired at %s (lease epoch %d)",
				c.prev.PID, c.prev.Host, c.prev.ExpiresAt.Local().Format("15:04:05.000"), c.lease.Epoch)})
	}
	return c, nil, nil
}

// workStep runs a claimed step instance under its lease, as workItem runs
// an item: settled first when its last holder left an attempt running
// (the attempts claimStep read), then run to its end, every commit fenced
// by the lease. The commit that ends the step also releases the lease
// (checkpoint.WithEndingLease), so an ended step is left without another
// commit; a step that has not ended (stopped, or an error) gives its
// lease up after. lost says the lease was lost meanwhile: the process that
// took it continues the step.
func (p *project) workStep(ctx context.Context, in *attempt.Instance, c *claimed) (res stepResult, out any, lost bool, err error) {
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release, stop := p.hold(stepCtx, c.lease, func(err error) { cancel(err) })
	ended := false
	defer func() {
		if ended {
			stop()
		} else {
			release()
		}
	}()
	stepCtx = checkpoint.WithEndingLease(stepCtx, c.lease)
	err = p.settleUnit(stepCtx, in.Run, c.running, p.id.local(c.prev))
	if err == nil {
		in.State = c.state // nil when settling may have changed it
		res, out, err = p.runUnit(stepCtx, in)
	}
	if ended = err == nil && (res == stepDone || res == stepFailed); ended {
		// The step's end was committed under the lease, which that
		// commit released: a renewal that raced it and found the lease
		// gone lost nothing.
		return res, out, false, nil
	}
	if cause := context.Cause(stepCtx); errors.Is(cause, checkpoint.ErrLeaseLost) || errors.Is(err, checkpoint.ErrLeaseLost) {
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventLeaseLost, RunID: in.Run.ID, Step: in.Step.ID,
			Message: "another process holds it now; its agent was stopped and nothing more of it is recorded here"})
		return 0, nil, true, nil
	}
	return res, out, false, err
}

// runSharedStep runs step instance in with every other process working on
// the run: it claims the step and runs it, or, while another process
// holds it, waits for the step to end there (and takes it over when that
// process's lease expires).
func (p *project) runSharedStep(ctx context.Context, in *attempt.Instance) (stepResult, any, error) {
	for {
		c, st, err := p.claimStep(ctx, in)
		if err != nil {
			return 0, nil, err
		}
		switch {
		case st != nil && st.Status() == checkpoint.StepSucceeded:
			out, err := attempt.EnvelopeData(st.HandoffJSON)
			return stepDone, out, err
		case st != nil:
			return stepFailed, nil, nil
		}
		if c != nil {
			res, out, lost, err := p.workStep(ctx, in, c)
			if !lost {
				return res, out, err
			}
		}
		select {
		case <-ctx.Done():
			return 0, nil, attempt.ErrInterrupted
		case <-time.After(p.poll()):
		}
	}
}

// runnableStep reports whether a worker may claim step ws of a run whose
// steps' rows are rows: it has not ended, every step it needs has ended
// (a failure only when that step allows it), and the run's process
// decided that it runs: its when committed true, or, without a when, no
// step it needs was skipped (a skip is the run's process's to commit).
// A map step's items are claimed as items, never the step.
func runnableStep(ws *workflow.Step, rows map[string]*checkpoint.Step, wf *workflow.Workflow) bool {
	st := rows[ws.ID]
	if st == nil || ws.Map != nil || ws.Kind == workflow.KindLoop || ws.Kind == workflow.KindApproval {
		return false
	}
	switch st.Status() {
	case checkpoint.StepPending, checkpoint.StepRunning, checkpoint.StepWaiting:
	default:
		return false
	}
	skippedNeed := false
	for _, id := range ws.Needs {
		n := rows[id]
		if n == nil {
			return false
		}
		switch n.Status() {
		case checkpoint.StepSucceeded:
		case checkpoint.StepSkipped:
			skippedNeed = true
		case checkpoint.StepFailed:
			if need := wf.Step(id); need == nil || !need.AllowFailure {
				return false
			}
		default:
			return false
		}
	}
	if ws.When != nil {
		var d history.Decision
		return len(st.DecisionJSON) > 0 && json.Unmarshal(st.DecisionJSON, &d) == nil && d.Value != nil && *d.Value
	}
	return !skippedNeed
}

// inputsOf decodes a run's stored inputs for templates (.Inputs).
func inputsOf(run *checkpoint.Run) (map[string]any, error) {
	if len(run.InputsJSON) == 0 {
		return nil, nil
	}
	v, err := jsonvalue.Decode(run.InputsJSON)
	if err != nil {
		return nil, fmt.Errorf("run %s: stored inputs: %w", run.ID, err)
	}
	obj, _ := v.(jsonvalue.Object)
	return obj, nil
}
