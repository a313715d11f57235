package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// settle resolves every attempt that a previous process left running (G5).
// Its agent is killed if it somehow survived (G6). Then, if the attempt's
// handoff is present and valid, the attempt is adopted: the step succeeds
// with no new execution. Otherwise it becomes interrupted and counts as an
// attempt; a half-open circuit trial it held counts as failed.
//
// On a shared database the attempts of map items are left alone: their
// items may be running in other processes, and an item whose holder is
// gone is settled by whichever process claims it next (settleUnit).
func (p *project) settle(ctx context.Context, run *checkpoint.Run) error {
	var running []checkpoint.Attempt
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		running, err = tx.RunningAttempts(run.ID)
		return err
	}); err != nil {
		return err
	}
	for i := range running {
		if p.shared() && running[i].ItemKey != "" {
			continue
		}
		if err := p.settleAttempt(ctx, run, &running[i], true); err != nil {
			return err
		}
	}
	return nil
}

// settleAttempt settles one attempt left running; kill says its agent, if
// it survived, runs on this machine and is to be killed first.
func (p *project) settleAttempt(ctx context.Context, run *checkpoint.Run, a *checkpoint.Attempt, kill bool) error {
	ws := p.wf.Step(a.StepID)
	if ws == nil {
		return fmt.Errorf("attempt %d of %s: the workflow has no step %s", a.N, unitLabel(a.Unit()), a.StepID)
	}
	if a.PID != nil && kill {
		p.killOrphan(ctx, *a.PID, a.Unit().String())
	}
	it, err := p.frozenItem(ctx, a.Unit())
	if err != nil {
		return err
	}
	t, err := p.settlingTry(ctx, run, ws, it, a)
	if err != nil {
		return fmt.Errorf("attempt %d of %s: %w", a.N, unitLabel(a.Unit()), err)
	}
	if err := p.settleOne(ctx, t); err != nil {
		return fmt.Errorf("attempt %d of %s: %w", a.N, unitLabel(a.Unit()), err)
	}
	return nil
}

// settlingTry rebuilds the try of an attempt a crash left running, and
// settles the checks it was running: their processes are killed if they
// survived (G6), and their rows become interrupted.
func (p *project) settlingTry(ctx context.Context, run *checkpoint.Run, ws *workflow.Step, it *mapItem, a *checkpoint.Attempt) (*try, error) {
	t := &try{run: run, ws: ws, item: it, row: a, settling: true,
		plan: attemptPlan{kind: a.Kind, prompt: a.Prompt, sessionID: a.SessionID, resume: a.Kind == checkpoint.KindFollowup}}
	var checks []checkpoint.Check
	err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		st, err := tx.Unit(t.unit())
		if err != nil {
			return err
		}
		t.max = st.MaxAttempts
		if t.counted, err = tx.UnitCountCounted(t.unit()); err != nil {
			return err
		}
		checks, err = tx.Checks(run.ID, ws.ID, itemKey(it), a.N)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := p.now()
	var cut []checkpoint.Check
	for _, c := range checks {
		if c.Status != checkpoint.CheckRunning {
			continue
		}
		if c.PID != nil {
			p.killOrphan(ctx, *c.PID, t.unit().String())
		}
		c.Status, c.FinishedAt = checkpoint.CheckInterrupted, &now
		cut = append(cut, c)
	}
	if len(cut) > 0 {
		if err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
			for _, c := range cut {
				if err := tx.UpdateCheck(c); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// settleOne settles one interrupted attempt (G5): a handoff that passed
// its schema before the crash is checked again (when the step has checks)
// and adopted when its checks pass, without running the agent again;
// otherwise the attempt is interrupted and counts.
func (p *project) settleOne(ctx context.Context, t *try) error {
	runID, ws, a := t.run.ID, t.ws, t.row
	u := t.unit()
	if len(ws.Checks) > 0 {
		if data, ok := p.storedCandidate(ctx, t); ok {
			return p.settleChecks(ctx, t, data, a.Repairs, false)
		}
	}
	now := p.now()
	a.FinishedAt = &now
	env, fromEnvelope, ok := p.adoptable(t)
	if ok && len(ws.Checks) > 0 && !fromEnvelope {
		// A file handoff that landed passed the pipeline; its checks
		// have not run.
		if err := p.storeCandidate(t, env.Data); err != nil {
			return err
		}
		t.row.Repairs = nonNil(env.Metadata.Repairs)
		return p.settleChecks(ctx, t, env.Data, env.Metadata.Repairs, true)
	}
	if ok {
		a.Status = checkpoint.AttemptAdopted
		a.Repairs = env.Metadata.Repairs
		envJSON, err := json.Marshal(env)
		if err != nil {
			return err
		}
		if err := p.writeEnvelope(runID, ws.ID, t.item, *env); err != nil {
			return err
		}
		err = p.store.Update(ctx, func(tx *checkpoint.Tx) error {
			if err := stillRunning(tx, a); err != nil {
				return err
			}
			if err := tx.UpdateAttempt(*a); err != nil {
				return err
			}
			if err := p.recordCircuit(tx, ws.Agent, circuitConfig(p.wf.Agents[ws.Agent].Circuit), a.CircuitGen, "", now, time.Time{}); err != nil {
				return err
			}
			s, err := tx.Unit(u)
			if err != nil {
				return err
			}
			s.Status = checkpoint.StepSucceeded
			s.NextRetryAt, s.DelayMS = nil, nil
			s.HandoffJSON = envJSON
			s.UpdatedAt = now
			return tx.UpdateStep(*s)
		})
		if errors.Is(err, errSettledElsewhere) {
			return nil
		}
		if err != nil {
			return err
		}
		p.sink.Emit(history.Event{Time: now, Type: history.EventAttemptSettled, RunID: runID, Step: ws.ID, Item: u.Item, Attempt: a.N, Status: a.Status,
			Message: "its handoff was already written; adopted without running the agent again"})
		return nil
	}

	a.Status = checkpoint.AttemptInterrupted
	a.Class = string(handoff.ClassInterrupted)
	a.Error = "interrupted: cadence stopped during the attempt"
	if a.PID == nil {
		a.Error = "interrupted before the agent started"
	}
	err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		if err := stillRunning(tx, a); err != nil {
			return err
		}
		if err := tx.UpdateAttempt(*a); err != nil {
			return err
		}
		b, err := p.agentBreaker(tx, ws.Agent, now)
		if err != nil {
			return err
		}
		// A crash during a half-open trial counts as a failed trial.
		outcome := circuit.Neutral
		if b.State == circuit.HalfOpen && b.Generation == a.CircuitGen {
			outcome = circuit.Failure
		}
		next := circuit.Record(b.Breaker, circuitConfig(p.wf.Agents[ws.Agent].Circuit), a.CircuitGen, outcome, now)
		if err := putBreaker(tx, b, next, now); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		if s.Status == checkpoint.StepRunning {
			s.Status = checkpoint.StepPending
		}
		s.UpdatedAt = now
		return tx.UpdateStep(*s)
	})
	if errors.Is(err, errSettledElsewhere) {
		return nil
	}
	if err != nil {
		return err
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventAttemptSettled, RunID: runID, Step: ws.ID, Item: u.Item, Attempt: a.N, Status: a.Status, Message: a.Error})
	return nil
}

// errSettledElsewhere reports that an attempt read as running had ended
// by the time it was settled: on a shared database, its process committed
// its outcome just as its lease expired.
var errSettledElsewhere = errors.New("the attempt is no longer running")

// stillRunning returns errSettledElsewhere unless attempt a is still
// running in tx.
func stillRunning(tx *checkpoint.Tx, a *checkpoint.Attempt) error {
	cur, err := tx.UnitAttempt(a.Unit(), a.N)
	if err != nil {
		return err
	}
	if cur.Status != checkpoint.AttemptRunning {
		return errSettledElsewhere
	}
	return nil
}

// adoptable returns the envelope of an interrupted attempt whose handoff
// landed: the envelope cadence wrote just before the crash, or a file handoff
// the agent wrote that passes the pipeline.
//
// fromEnvelope tells the envelope, written only after the attempt's checks
// passed, from a file handoff, whose checks have not run.
func (p *project) adoptable(t *try) (env *handoff.Envelope, fromEnvelope, ok bool) {
	ws, a := t.ws, t.row
	envPath := p.envelopePath(t.run.ID, ws.ID, t.item)
	if b, err := os.ReadFile(envPath); err == nil {
		var env handoff.Envelope
		// Only a succeeding attempt writes the envelope, and the step has
		// not succeeded: an envelope written since this attempt started is
		// this attempt's.
		if json.Unmarshal(b, &env) == nil && !env.Timestamp.Before(a.StartedAt) && len(env.Data) > 0 {
			if r := handoff.Check(env.Data, ws.Handoff.Schema, handoff.Options{MaxBytes: ws.Handoff.MaxBytes, MaxDepth: ws.Handoff.MaxDepth}); r.OK {
				return &env, true, true
			}
		}
	}
	if ws.Handoff.From != "file" || a.PID == nil {
		return nil, false, false
	}
	path, err := p.handoffFile(p.workDir(t.item), ws.Handoff.Path)
	if err != nil {
		return nil, false, false
	}
	// The very pipeline a finished attempt's file goes through, coercion
	// included, so a resume adopts what the attempt would have accepted.
	r := handoff.CheckFile(path, ws.Handoff.Schema, handoffOptions(ws))
	if !r.OK {
		return nil, false, false
	}
	return &handoff.Envelope{
		Component: ws.ID, SessionID: a.SessionID, Timestamp: p.now(), Status: "success",
		Data:     json.RawMessage(r.JSON),
		Metadata: handoff.EnvelopeMetadata{Attempts: a.N, Repairs: nonNil(r.Repairs), PreviousErrors: []string{}},
	}, false, true
}

// settleChecks settles an attempt whose handoff passed its schema before a
// crash: its checks run again on the stored handoff, without the agent;
// when they pass the attempt is adopted, when one fails it is a failed
// check like any other, and the next attempt continues the session.
func (p *project) settleChecks(ctx context.Context, t *try, data []byte, repairs []string, recordAttempt bool) error {
	p.sink.Emit(history.Event{Time: p.now(), Type: history.EventAttemptSettled, RunID: t.run.ID, Step: t.ws.ID, Item: itemKey(t.item), Attempt: t.row.N,
		Status: t.row.Status, Message: "its handoff was accepted before cadence stopped; running its checks again without the agent"})
	j := judgement{ok: true, result: handoff.Result{OK: true, JSON: data, Repairs: repairs}}
	failed, err := p.runChecks(ctx, t, recordAttempt)
	switch {
	case errors.Is(err, errCheckInterrupted):
		return errInterrupted
	case err != nil:
		return err
	case failed != nil:
		failed.result = j.result
		j = *failed
	}
	_, err = p.commitOutcome(context.WithoutCancel(ctx), t, nil, j)
	return err
}

// killOrphan kills the process group of an agent that outlived a crashed
// cadence (G6), so that the resumed attempt never overlaps it. The parent-
// death signal normally got there first, but it reaches only the process
// cadence started, not, say, the native child of a Node launcher. Only
// processes whose environment carries the step's idempotency key are
// touched, so a reused pid of an unrelated process is never killed.
func (p *project) killOrphan(ctx context.Context, pid int, idemKey string) {
	if pid <= 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if killed, err := agent.KillOrphanGroup(wctx, pid, "CADENCE_IDEMPOTENCY_KEY="+idemKey); err != nil {
		p.log.Warn("an agent of the interrupted run may still be running", "pgid", pid, "err", err)
	} else if killed {
		p.log.Info("killed an agent left over from the interrupted run", "pgid", pid)
	}
}
