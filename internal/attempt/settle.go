package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
)

// Settle resolves an attempt a previous process left running (G5). Its
// agent is killed first if it survived and kill says it runs on this
// machine (G6). Then, if the attempt's handoff is present and valid, the
// attempt is adopted: the step succeeds with no new execution (its checks,
// when it has any, run again first). Otherwise it becomes interrupted and
// counts as an attempt; a half-open circuit trial it held counts as
// failed. An attempt that ended meanwhile (on a shared database, its
// process committed just as its lease expired) is left as it is.
func (r *Runner) Settle(ctx context.Context, in *Instance, a *checkpoint.Attempt, kill bool) error {
	r.init()
	if a.PID != nil && kill {
		r.killOrphan(ctx, *a.PID, a.Unit().String())
	}
	t, err := r.settlingTry(ctx, in, a)
	if err != nil {
		return fmt.Errorf("attempt %d of %s: %w", a.N, in.Label(), err)
	}
	if err := t.settleOne(ctx); err != nil {
		return fmt.Errorf("attempt %d of %s: %w", a.N, in.Label(), err)
	}
	return nil
}

// settlingTry rebuilds the try of an attempt a crash left running, and
// settles the checks it was running: their processes are killed if they
// survived (G6), and their rows become interrupted.
func (r *Runner) settlingTry(ctx context.Context, in *Instance, a *checkpoint.Attempt) (*try, error) {
	t := &try{r: r, in: in, row: a, settling: true,
		plan: attemptPlan{agent: attemptAgent(a, in.Step), kind: a.Kind, prompt: a.Prompt, sessionID: a.SessionID, resume: a.Kind == checkpoint.KindFollowup}}
	var checks []checkpoint.Check
	err := r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		st, err := tx.Unit(in.Unit())
		if err != nil {
			return err
		}
		t.max = st.MaxAttempts
		if t.counted, err = tx.UnitCountCounted(in.Unit()); err != nil {
			return err
		}
		checks, err = tx.Checks(in.Run.ID, in.StepPath(), in.ItemKey(), a.N)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := r.now()
	var cut []checkpoint.Check
	for _, c := range checks {
		if c.Status != checkpoint.CheckRunning {
			continue
		}
		if c.PID != nil {
			r.killOrphan(ctx, *c.PID, in.Unit().String())
		}
		c.Status, c.FinishedAt = checkpoint.CheckInterrupted, &now
		cut = append(cut, c)
	}
	if len(cut) == 0 {
		return t, nil
	}
	return t, r.Store.Update(ctx, func(tx *checkpoint.Tx) error {
		for _, c := range cut {
			if err := tx.UpdateCheck(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// settleOne settles one interrupted attempt (G5): a handoff that passed
// its schema before the crash is checked again (when the step has checks)
// and adopted when its checks pass, without running the agent again;
// otherwise the attempt is interrupted and counts.
func (t *try) settleOne(ctx context.Context) error {
	ws := t.in.Step
	if len(ws.Checks) > 0 {
		if data, ok := t.storedCandidate(ctx); ok {
			return t.settleChecks(ctx, data, t.row.Repairs, false)
		}
	}
	now := t.r.now()
	t.row.FinishedAt = &now
	env, fromEnvelope, ok := t.adoptable()
	switch {
	case ok && len(ws.Checks) > 0 && !fromEnvelope:
		// A file handoff that landed passed the pipeline; its checks
		// have not run.
		if err := t.storeCandidate(env.Data); err != nil {
			return err
		}
		t.row.Repairs = nonNil(env.Metadata.Repairs)
		return t.settleChecks(ctx, env.Data, env.Metadata.Repairs, true)
	case ok:
		return t.settled(ctx, endAdopted, env, now)
	}
	return t.settled(ctx, endInterrupted, nil, now)
}

// settled commits the end of an attempt a crash left running: adopted,
// with the envelope of its handoff, which is written first (the step
// succeeds with no new execution), or interrupted, when no handoff of it
// landed (it counts, and the step runs again). An attempt that ended
// meanwhile is left as it is.
func (t *try) settled(ctx context.Context, e end, env *handoff.Envelope, now time.Time) error {
	a := t.row
	var (
		f   endFacts
		msg string
	)
	switch e {
	case endAdopted:
		a.Repairs = env.Metadata.Repairs
		envJSON, err := json.Marshal(env)
		if err != nil {
			return err
		}
		if err := t.r.WriteEnvelope(t.in, *env); err != nil {
			return err
		}
		f.envelope, msg = envJSON, "its handoff was already written; adopted without running the agent again"
	case endInterrupted:
		a.Class = string(handoff.ClassInterrupted)
		a.Error = "interrupted: cadence stopped during the attempt"
		if a.PID == nil {
			a.Error = "interrupted before the agent started"
		}
		f.class, msg = a.Class, a.Error
	default:
		return fmt.Errorf("attempt %d: a settled attempt is adopted or interrupted, not %s", a.N, e)
	}
	err := t.r.Store.Update(ctx, func(tx *checkpoint.Tx) error {
		if err := stillRunning(tx, a); err != nil {
			return err
		}
		return t.r.finish(tx, t, t.ending(e, f, now), now)
	})
	if errors.Is(err, errSettledElsewhere) {
		return nil
	}
	if err != nil {
		return err
	}
	t.r.Sink.Emit(history.Event{Time: now, Type: history.EventAttemptSettled, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(),
		Attempt: a.N, Status: string(a.Status()), Message: msg})
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
	if cur.Status() != checkpoint.AttemptRunning {
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
func (t *try) adoptable() (env *handoff.Envelope, fromEnvelope, ok bool) {
	ws, a := t.in.Step, t.row
	envPath := t.r.envelopePath(t.in)
	if b, err := os.ReadFile(envPath); err == nil {
		var env handoff.Envelope
		// Only a succeeding attempt writes the envelope, and the step has
		// not succeeded: an envelope written since this attempt started is
		// this attempt's.
		if json.Unmarshal(b, &env) == nil && !env.Timestamp.Before(a.StartedAt) && len(env.Data) > 0 {
			if hr := handoff.Check(env.Data, ws.Handoff.Schema, handoff.Options{MaxBytes: ws.Handoff.MaxBytes, MaxDepth: ws.Handoff.MaxDepth}); hr.OK {
				return &env, true, true
			}
		}
	}
	// A file at the handoff path was written since the attempt began
	// (clearHandoffFile made its removal durable before the attempt's
	// row): it is adopted whether or not the agent's pid was recorded. A
	// help round's advisor never writes the step's handoff.
	if ws.Handoff.From != "file" || a.Kind == checkpoint.KindHelp {
		return nil, false, false
	}
	path, err := t.r.handoffFile(t.r.WorkDir(t.in), ws.Handoff.Path)
	if err != nil {
		return nil, false, false
	}
	// The very pipeline a finished attempt's file goes through, coercion
	// included, so a resume adopts what the attempt would have accepted.
	hr := handoff.CheckFile(path, ws.Handoff.Schema, handoffOptions(ws))
	if !hr.OK {
		return nil, false, false
	}
	return &handoff.Envelope{
		Component: ws.ID, SessionID: a.SessionID, Timestamp: t.r.now(), Status: "success",
		Data:     json.RawMessage(hr.JSON),
		Metadata: handoff.EnvelopeMetadata{Attempts: a.N, Repairs: nonNil(hr.Repairs), Provenance: hr.Provenance, PreviousErrors: []string{}},
	}, false, true
}

// settleChecks settles an attempt whose handoff passed its schema before a
// crash: its checks run again on the stored handoff, without the agent;
// when they pass the attempt is adopted, when one fails it is a failed
// check like any other, and the next attempt continues the session.
func (t *try) settleChecks(ctx context.Context, data []byte, repairs []string, recordAttempt bool) error {
	if err := t.syncOutputs(); err != nil {
		return err
	}
	t.r.Sink.Emit(history.Event{Time: t.r.now(), Type: history.EventAttemptSettled, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Attempt: t.row.N,
		Status: string(t.row.Status()), Message: "its handoff was accepted before cadence stopped; running its checks again without the agent"})
	j := judgement{ok: true, result: handoff.Result{OK: true, JSON: data, Repairs: repairs}}
	failed, err := t.runChecks(ctx, recordAttempt)
	switch {
	case errors.Is(err, errCheckInterrupted):
		return ErrInterrupted
	case err != nil:
		return err
	case failed != nil:
		failed.result = j.result
		j = *failed
	}
	_, err = t.commit(context.WithoutCancel(ctx), nil, j)
	return err
}

// killOrphan kills the process group of an agent that outlived a crashed
// cadence (G6), so that the resumed attempt never overlaps it. The parent-
// death signal normally got there first, but it reaches only the process
// cadence started, not, say, the native child of a Node launcher. Only
// processes whose environment carries the step's idempotency key are
// touched, so a reused pid of an unrelated process is never killed.
func (r *Runner) killOrphan(ctx context.Context, pid int, idemKey string) {
	if pid <= 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if killed, err := agent.KillOrphanGroup(wctx, pid, "CADENCE_IDEMPOTENCY_KEY="+idemKey); err != nil {
		r.Log.Warn("an agent of the interrupted run may still be running", "pgid", pid, "err", err)
	} else if killed {
		r.Log.Info("killed an agent left over from the interrupted run", "pgid", pid)
	}
}

// Abandon settles an attempt that a dead process left running, as its
// run is abandoned (cadence run --new). Its agent is killed first if it
// survived on this machine for that very attempt (G6); the function it
// returns ends the attempt in the caller's transaction, the one that
// abandons the run: interrupted, as settling it would make it, with the
// checks it was running; a half-open circuit trial it held counts as
// failed, and its step goes back to pending. Its handoff is not adopted:
// nothing runs after it. Once committed, the attempt no longer takes a
// place under its agent's max_concurrent. An attempt no longer running
// by then is left as it is.
//
// cancelled says the run is cancelled (cadence cancel) instead: the
// attempt is then recorded as stopped by cadence, as on SIGINT: not
// counted against max_attempts, and neutral to its agent's circuit.
func (r *Runner) Abandon(ctx context.Context, a *checkpoint.Attempt, cancelled bool) func(tx *checkpoint.Tx, now time.Time) error {
	r.init()
	if a.PID != nil {
		r.killOrphan(ctx, *a.PID, a.Unit().String())
	}
	return func(tx *checkpoint.Tx, now time.Time) error {
		if err := stillRunning(tx, a); err != nil {
			if errors.Is(err, errSettledElsewhere) {
				return nil
			}
			return err
		}
		u := a.Unit()
		checks, err := tx.Checks(u.RunID, u.StepID, u.Item, a.N)
		if err != nil {
			return err
		}
		for _, c := range checks {
			if c.Status == checkpoint.CheckRunning {
				c.Status, c.FinishedAt = checkpoint.CheckInterrupted, &now
				if err := tx.UpdateCheck(c); err != nil {
					return err
				}
			}
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		a.Class, a.Error, a.FinishedAt = string(handoff.ClassInterrupted), "interrupted: its run was abandoned (cadence run --new)", &now
		if cancelled {
			a.Error, a.Uncounted = "interrupted: its run was cancelled (cadence cancel)", true
		}
		if err := tx.AttemptInterrupted(a); err != nil {
			return err
		}
		name := a.Agent
		if name == "" {
			name = s.Agent
		}
		if _, known := r.Workflow.Agents[name]; known {
			// (An agent the workflow no longer has keeps its breaker as
			// it was: no configuration says how to move it.)
			t := &try{r: r, row: a, plan: attemptPlan{agent: name}}
			// A cancelled run's attempt was stopped by cadence: neutral
			// to the circuit, as an interrupt is (a half-open trial it
			// held is given back).
			e := endInterrupted
			if cancelled {
				e = endStopped
			}
			if err := t.recordCircuit(tx, t.ending(e, endFacts{class: a.Class}, now), now); err != nil {
				return err
			}
		}
		return tx.StepInterrupted(s, now)
	}
}
