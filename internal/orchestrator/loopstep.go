package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// A loop (SPEC §16.5) is stored as rows beside its own: iteration N of
// loop L is a row L/N, committed with a row L/N/ID for each inner step
// when the iteration starts; the row L/N ends succeeded with its until
// decision, or failed. Every inner step instance is a unit of its own
// (attempts, session, backoff, files), so a resume finds the iteration
// that was running and, in it, the inner step that was.

// iterationEnd is how one iteration of a loop ended.
type iterationEnd int

const (
	iterationDone     iterationEnd = iota // its inner steps ended and none failed the iteration
	iterationFailed                       // an inner step failed (without allow_failure)
	iterationAwaiting                     // an inner approval gate waits for a person
)

// iterationInput is what iteration n of a loop starts from: what its
// expressions read of the steps outside the loop, and the previous
// iteration's outputs (.Loop.Previous; nil in the first).
type iterationInput struct {
	n        int
	vars     map[string]workflow.StepVars
	previous map[string]any
}

// iteration is iteration n of a loop as it ended: how, its inner steps'
// outputs, and its until decision (taken, not committed yet), or the
// until that could not be evaluated (which failed it).
type iteration struct {
	n        int
	end      iterationEnd
	outputs  map[string]any
	decision *history.Decision
	untilErr error
}

// runLoop runs a loop step's iterations from where the committed state
// left them, until its until is true or max_iterations are used.
// vars are what its expressions read of the steps outside it, as they
// were when it started.
func (g *graph) runLoop(ctx context.Context, in *attempt.Instance, vars map[string]workflow.StepVars) (stepResult, any, error) {
	p, ws, path := g.p, in.Step, in.StepPath()
	st, n, last, err := g.loopRows(ctx, path)
	if err != nil {
		return 0, nil, err
	}
	if st.Status() == checkpoint.StepPending {
		now := p.now()
		if err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
			return tx.StepRunning(st, now)
		}); err != nil {
			return 0, nil, fmt.Errorf("record the start of loop %s: %w", path, err)
		}
	}
	if last != nil && last.Status() == checkpoint.StepFailed {
		return stepFailed, nil, nil // the loop failed with it, in the same commit
	}
	// A next iteration starts when the last one ended with until false (a
	// true until, or the last iteration, ended the loop in the same
	// commit as the decision), or when none started yet.
	next := last == nil || last.Status() == checkpoint.StepSucceeded
	// The previous iteration's outputs (.Loop.Previous): read from the
	// state once, on the way in, then kept from the iteration that ended.
	prev, err := g.previousOutputs(ctx, in, n, next)
	if err != nil {
		return 0, nil, err
	}
	for {
		if next {
			if n >= ws.Loop.MaxIterations {
				// Its iterations are used up (a failed loop reopened by
				// --retry-failed): it fails again, as it did.
				return g.exhausted(ctx, in, n)
			}
			if err := g.startIteration(ctx, in, n+1); err != nil {
				return 0, nil, err
			}
			n++
		}
		it, err := g.runIteration(ctx, in, iterationInput{n: n, vars: vars, previous: prev})
		switch {
		case err != nil:
			return 0, nil, err
		case it.end == iterationAwaiting:
			return stepAwaiting, nil, nil
		}
		res, out, err := g.endIteration(ctx, in, it)
		if err != nil || res != stepRunning {
			return res, out, err
		}
		prev = make(map[string]any, len(it.outputs))
		for id, o := range it.outputs {
			prev[id] = map[string]any{"Output": o}
		}
		next = true
	}
}

// stepRunning, from endIteration: the loop goes on to its next iteration.
const stepRunning stepResult = -1

// loopRows reads a loop's own row, how many iterations it started, and
// the last one's row (nil before the first). Iterations are numbered
// from 1 without gaps, so the last is found in a logarithmic number of
// reads: a resume in iteration 900 does not read 900 rows to find it.
func (g *graph) loopRows(ctx context.Context, path string) (*checkpoint.Step, int, *checkpoint.Step, error) {
	var (
		st, last *checkpoint.Step
		n        int
	)
	err := g.p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		if st, err = tx.Step(g.run.ID, path); err != nil {
			return err
		}
		exists := func(i int) (*checkpoint.Step, error) {
			it, err := tx.Step(g.run.ID, iterationPath(path, i))
			if errors.Is(err, checkpoint.ErrNotFound) {
				return nil, nil
			}
			return it, err
		}
		// lo exists (or is 0), hi does not: gallop, then bisect.
		lo, hi := 0, 1
		for {
			it, err := exists(hi)
			if err != nil {
				return err
			}
			if it == nil {
				break
			}
			lo, last, hi = hi, it, hi*2
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			it, err := exists(mid)
			if err != nil {
				return err
			}
			if it == nil {
				hi = mid
			} else {
				lo, last = mid, it
			}
		}
		n = lo
		return nil
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("read the iterations of loop %s: %w", path, err)
	}
	return st, n, last, nil
}

// iterationPath is the row of iteration n of the loop at path.
func iterationPath(path string, n int) string { return address.Of(path).Iteration(n).String() }

// startIteration commits iteration n of the loop: its row, running, and
// a pending row for each inner step, past every row the run has. With
// session: continue an inner step's row starts from the session its
// previous iteration left.
func (g *graph) startIteration(ctx context.Context, in *attempt.Instance, n int) error {
	p, ws, path := g.p, in.Step, in.StepPath()
	now := p.now()
	var row checkpoint.Step
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		idx, err := tx.NextIdx(g.run.ID)
		if err != nil {
			return err
		}
		row = checkpoint.NewStep(checkpoint.Step{RunID: g.run.ID, ID: iterationPath(path, n), Idx: idx, CostKnown: true}, now)
		if err := tx.InsertStep(row); err != nil {
			return err
		}
		if err := tx.StepRunning(&row, now); err != nil {
			return err
		}
		for i, inner := range ws.Loop.Order() {
			s := newStepRow(g.run.ID, inner, now)
			s.ID, s.Idx = address.Of(path).Iteration(n).Inner(inner.ID).String(), idx+1+i
			if n > 1 && inner.Kind == workflow.KindAgent && ws.Loop.Session != workflow.SessionFresh {
				prev, err := tx.Step(g.run.ID, address.Of(path).Iteration(n-1).Inner(inner.ID).String())
				if err != nil {
					return err
				}
				if prev.Agent == s.Agent {
					// (A session of a fallback entry cannot move back
					// to the step's own agent: that starts afresh.)
					s.SessionID = prev.SessionID
				}
			}
			if err := tx.InsertStep(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the start of iteration %d of loop %s: %w", n, path, err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventIterationStarted, RunID: g.run.ID, Step: path, Attempt: n,
		MaxAttempts: ws.Loop.MaxIterations})
	p.attempts.Failpoint.Hit(attempt.FailAfterIterationStart)
	return nil
}

// runIteration runs iteration n's inner graph from where the committed
// state left it. When it ends with every inner step done, until is
// evaluated (not committed: endIteration commits it); outputs are the
// inner steps' outputs, for the loop's own.
func (g *graph) runIteration(ctx context.Context, in *attempt.Instance, at iterationInput) (iteration, error) {
	p, ws, path, n := g.p, in.Step, in.StepPath(), at.n
	ig := newGraph(p, g.run, ws.Loop.Order(), g.gates)
	ig.iter, ig.iteration, ig.inputs, ig.previous = address.Of(path).Iteration(n), n, g.inputs, at.previous
	for id, out := range in.Outputs {
		ig.outputs[id] = out
	}
	for id, v := range at.vars {
		ig.vars[id] = v
	}
	failed, err := ig.read(ctx, nil, nil)
	if err != nil {
		return iteration{}, err
	}
	if failed == "" {
		ig.runAll(ctx)
		failed = ig.failed
	}
	switch {
	case ig.stop != nil:
		return iteration{}, ig.stop
	case failed != "":
		return iteration{n: n, end: iterationFailed}, nil
	case len(ig.parked) > 0:
		return iteration{n: n, end: iterationAwaiting}, nil
	}
	outputs := map[string]any{}
	for _, inner := range ws.Loop.Steps {
		if o, ok := ig.outputs[inner.ID].(map[string]any); ok {
			outputs[inner.ID] = o["Output"]
		}
	}
	u := ws.Loop.Until // required: the loader refuses a loop without one
	v, err := u.Eval(ctx, workflow.ExprVars{Inputs: g.inputs, Steps: ig.vars, Iteration: n})
	if err != nil {
		if !workflow.IsExprError(err) {
			return iteration{}, err
		}
		return iteration{n: n, end: iterationFailed, untilErr: err}, p.attempts.StopStep(ctx, in, handoff.ClassExpression, err.Error(), checkpoint.KindInitial)
	}
	d := &history.Decision{Until: u.Source, Value: &v, Read: ig.readBy(u), At: p.now()}
	return iteration{n: n, end: iterationDone, outputs: outputs, decision: d}, nil
}

// previousOutputs reads what .Loop.Previous is for the iteration that
// runs next: the outputs of iteration n when a new one starts (next),
// else of iteration n-1; nil for the first iteration.
func (g *graph) previousOutputs(ctx context.Context, in *attempt.Instance, n int, next bool) (map[string]any, error) {
	if !next {
		n--
	}
	if n < 1 {
		return nil, nil
	}
	return g.iterationOutputs(ctx, in.Step, iterationPath(in.StepPath(), n))
}

// iterationOutputs reads the outputs of an ended iteration's inner
// steps, as templates see them (.Loop.Previous.ID.Output).
func (g *graph) iterationOutputs(ctx context.Context, ws *workflow.Step, iterPath string) (map[string]any, error) {
	out := map[string]any{}
	err := g.p.store.View(ctx, func(tx *checkpoint.Tx) error {
		for _, inner := range ws.Loop.Steps {
			st, err := tx.Step(g.run.ID, address.Of(iterPath).Inner(inner.ID).String())
			if err != nil {
				return err
			}
			if st.Status() != checkpoint.StepSucceeded {
				continue
			}
			v, err := attempt.EnvelopeData(st.HandoffJSON)
			if err != nil {
				return fmt.Errorf("step %s: stored handoff: %w", st.ID, err)
			}
			out[inner.ID] = map[string]any{"Output": v}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the outputs of iteration %s: %w", iterPath, err)
	}
	return out, nil
}

// endIteration commits how iteration n ended, with what it means for the
// loop in the same transaction: a failed iteration fails the loop; a
// true until, or the last iteration, ends it (on_exhausted says how);
// otherwise the loop goes on (stepRunning). The decision is committed
// once and never taken again.
func (g *graph) endIteration(ctx context.Context, in *attempt.Instance, it iteration) (stepResult, any, error) {
	p, ws, path := g.p, in.Step, in.StepPath()
	n, end, outputs, d := it.n, it.end, it.outputs, it.decision
	now := p.now()
	res, msg := stepRunning, ""
	var (
		out     any
		envJSON []byte
	)
	switch {
	case end == iterationFailed && it.untilErr != nil:
		// Not the agents': the expression. A fixed one decides again.
		res, msg = stepFailed, fmt.Sprintf("until %s could not be evaluated after iteration %d: edit it, then %s decides again with it",
			ws.Loop.Until.Source, n, resumeChanged)
	case end == iterationFailed:
		res, msg = stepFailed, fmt.Sprintf("iteration %d failed", n)
	case *d.Value:
		res, msg = stepDone, fmt.Sprintf("until %s is true after %s", d.Until, history.Count(n, "iteration", "iterations"))
	case n >= ws.Loop.MaxIterations && ws.Loop.OnExhausted == workflow.OnContinue:
		res, msg = stepDone, fmt.Sprintf("%s used", history.Count(n, "iteration", "iterations"))
	case n >= ws.Loop.MaxIterations:
		res, msg = stepFailed, fmt.Sprintf("until %s is still false after max_iterations %d: %s", d.Until, n, moreIterations)
	}
	if res == stepDone {
		var env handoff.Envelope
		var err error
		if env, envJSON, out, err = loopEnvelope(ws, n, outputs, now); err != nil {
			return 0, nil, err
		}
		if err := p.attempts.WriteEnvelope(in, env); err != nil {
			return 0, nil, err
		}
	}
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		row, err := tx.Step(g.run.ID, iterationPath(path, n))
		if err != nil {
			return err
		}
		if end == iterationFailed {
			if err := tx.StepFailed(row, now); err != nil {
				return err
			}
		} else {
			b, _ := json.Marshal(d)
			if err := tx.StepDecided(row, b, now); err != nil {
				return err
			}
			if err := tx.StepSucceeded(row, nil, now); err != nil {
				return err
			}
		}
		st, err := tx.Step(g.run.ID, path)
		switch {
		case err != nil:
			return err
		case res == stepDone:
			return tx.StepSucceeded(st, envJSON, now)
		case res == stepFailed && st.Status() != checkpoint.StepFailed:
			return tx.StepFailed(st, now) // (an until that failed to evaluate failed it already)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the end of iteration %d of loop %s: %w", n, path, err)
	}
	switch end {
	case iterationDone:
		p.sink.Emit(history.Event{Status: string(checkpoint.StepSucceeded), Time: now, Type: history.EventIterationEnded, RunID: g.run.ID,
			Step: path, Attempt: n, Message: iterationWhy(d)})
	case iterationFailed:
		// As --follow tells it from the rows.
		why := "an inner step failed"
		if it.untilErr != nil {
			why = "its until could not be evaluated"
		}
		p.sink.Emit(history.Event{Status: string(checkpoint.StepFailed), Time: now, Type: history.EventIterationEnded, RunID: g.run.ID,
			Step: path, Attempt: n, Message: why})
	}
	p.attempts.Failpoint.Hit(attempt.FailAfterUntil)
	switch res {
	case stepDone:
		p.sink.Emit(history.Event{Time: now, Type: history.EventStepSucceeded, RunID: g.run.ID, Step: path, Message: msg})
	case stepFailed:
		p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: g.run.ID, Step: path, Message: msg})
	}
	return res, out, nil
}

// iterationWhy says what an iteration's until gave.
func iterationWhy(d *history.Decision) string {
	if *d.Value {
		return "until " + d.Until + " is true"
	}
	return "until " + d.Until + " is false"
}

// loopEnvelope is a loop's output, {"iterations": N, "steps": {...}}
// with the last iteration's outputs, as an envelope and as templates and
// expressions read it.
func loopEnvelope(ws *workflow.Step, n int, outputs map[string]any, now time.Time) (handoff.Envelope, []byte, any, error) {
	data, err := json.Marshal(map[string]any{"iterations": n, "steps": outputs})
	if err != nil {
		return handoff.Envelope{}, nil, nil, fmt.Errorf("encode the output of loop %s: %w", ws.ID, err)
	}
	env := handoff.Envelope{Component: ws.ID, Timestamp: now, Status: "success", Data: data,
		Metadata: handoff.EnvelopeMetadata{Attempts: n, Repairs: []string{}, PreviousErrors: []string{}}}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return handoff.Envelope{}, nil, nil, fmt.Errorf("encode the envelope of loop %s: %w", ws.ID, err)
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return handoff.Envelope{}, nil, nil, fmt.Errorf("decode the output of loop %s: %w", ws.ID, err)
	}
	return env, envJSON, v, nil
}

// exhausted fails a loop whose iterations are all used and whose until
// was never true: a loop reopened after it failed so.
func (g *graph) exhausted(ctx context.Context, in *attempt.Instance, n int) (stepResult, any, error) {
	p, path := g.p, in.StepPath()
	now := p.now()
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		st, err := tx.Step(g.run.ID, path)
		if err != nil {
			return err
		}
		return tx.StepFailed(st, now)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record loop %s failed: %w", path, err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: g.run.ID, Step: path,
		Message: fmt.Sprintf("max_iterations %d used up and until %s was never true: %s", n, in.Step.Loop.Until.Source, moreIterations)})
	return stepFailed, nil, nil
}

// resumeChanged is the command that applies an edited loop (its until,
// its max_iterations) to a loop that failed.
const resumeChanged = "cadence resume --retry-failed --allow-changed"

// moreIterations says how to give a loop whose iterations are used up
// more of them.
const moreIterations = "raise max_iterations, then " + resumeChanged + " gives it more"
