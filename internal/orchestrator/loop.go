package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
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
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		steps, err := tx.Steps(run.ID)
		for _, s := range steps {
			done[s.ID] = s.Status == checkpoint.StepSucceeded
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("read the steps of run %s: %w", run.ID, err)
	}
	if err := p.settle(ctx, run); err != nil {
		return nil, fmt.Errorf("settle interrupted attempts of run %s: %w", run.ID, err)
	}
	outputs := map[string]any{}
	for _, ws := range p.wf.Steps {
		st, err := p.stepRow(ctx, run.ID, ws.ID)
		if err != nil {
			return nil, err
		}
		switch st.Status {
		case checkpoint.StepSucceeded:
			out, err := envelopeData(st.HandoffJSON)
			if err != nil {
				return nil, fmt.Errorf("step %s: stored handoff: %w", ws.ID, err)
			}
			outputs[ws.ID] = map[string]any{"Output": out}
			if done[ws.ID] {
				p.sink.Emit(history.Event{Time: p.now(), Type: history.EventStepSkipped, RunID: run.ID, Step: ws.ID, Status: st.Status})
			}
			continue
		case checkpoint.StepFailed:
			return p.finish(run.ID, checkpoint.RunFailed, &Result{RunID: run.ID, Status: StatusFailed, Step: ws.ID,
				Message: fmt.Sprintf("step %s failed", ws.ID)})
		}
		var (
			res stepResult
			out any
		)
		if ws.Map != nil {
			res, out, err = p.runMap(ctx, run, ws, outputs)
		} else {
			res, out, err = p.runUnit(ctx, run, ws, nil, outputs)
		}
		if err != nil {
			return p.stopped(run.ID, ws.ID, err)
		}
		if res == stepFailed {
			return p.finish(run.ID, checkpoint.RunFailed, &Result{RunID: run.ID, Status: StatusFailed, Step: ws.ID,
				Message: fmt.Sprintf("step %s failed", ws.ID)})
		}
		outputs[ws.ID] = map[string]any{"Output": out}
	}
	return p.finish(run.ID, checkpoint.RunSucceeded, &Result{RunID: run.ID, Status: StatusSucceeded})
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
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(watchStateEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := p.store.CheckStateFile(); err != nil {
				gone(err)
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// stopped turns an error that ended the loop into a result: an interruption
// or a wait beyond --max-wait leaves the run resumable (exit 3); anything
// else is returned as an error with the run left as committed.
func (p *project) stopped(runID, stepID string, err error) (*Result, error) {
	var long *errWaitTooLong
	switch {
	case errors.As(err, &long):
		res := &Result{RunID: runID, Status: StatusInterrupted, Step: stepID, ResumeAt: long.until, Circuit: long.circuit,
			Message: fmt.Sprintf("step %s waits until %s, longer than --max-wait", stepID, long.until.Format(time.RFC3339))}
		if long.circuit != "" {
			res.Message = fmt.Sprintf("step %s waits until %s for agent %s's circuit, longer than --max-wait (%s)",
				stepID, long.until.Format(time.RFC3339), long.circuit, history.ResetHint(long.circuit))
		}
		return p.finish(runID, checkpoint.RunInterrupted, res)
	case errors.Is(err, context.Canceled), errors.Is(err, errInterrupted):
		res := &Result{RunID: runID, Status: StatusInterrupted, Step: stepID, Message: "interrupted"}
		return p.finish(runID, checkpoint.RunInterrupted, res)
	}
	return nil, err
}

// errInterrupted reports that the attempt was stopped because cadence was.
var errInterrupted = errors.New("interrupted")

// finish commits the run's final status for this process and emits it.
func (p *project) finish(runID, status string, res *Result) (*Result, error) {
	now := p.now()
	// The caller's context may be cancelled: this write must still land,
	// under the run's lease when it has one.
	ctx := p.fenced(context.Background())
	err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		r, err := tx.Run(runID)
		if err != nil {
			return err
		}
		r.Status = status
		r.UpdatedAt = now
		if status != checkpoint.RunInterrupted {
			r.FinishedAt = &now
		} else if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: history.EventKindRunStopped, Detail: res.Message}); err != nil {
			return err
		}
		return tx.UpdateRun(*r)
	})
	if err != nil {
		return nil, fmt.Errorf("record run %s as %s: %w", runID, status, err)
	}
	typ := history.EventRunFinished
	if status == checkpoint.RunInterrupted {
		typ = history.EventRunInterrupted
	}
	ev := history.Event{Time: now, Type: typ, RunID: runID, Status: status, Step: res.Step, Message: res.Message}
	if !res.ResumeAt.IsZero() {
		t := res.ResumeAt
		ev.Until = &t
	}
	p.sink.Emit(ev)
	return res, nil
}

func (p *project) now() time.Time { return p.clock.Now().UTC() }

func (p *project) stepRow(ctx context.Context, runID, stepID string) (*checkpoint.Step, error) {
	var st *checkpoint.Step
	err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		st, err = tx.Step(runID, stepID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read step %s: %w", stepID, err)
	}
	return st, nil
}

// runUnit runs attempts of one step, or of one item of a map step (it not
// nil), until it succeeds, fails for good, or cadence is stopped. Every
// decision is taken from the committed state, so a resumed process
// continues exactly where the last one left off.
func (p *project) runUnit(ctx context.Context, run *checkpoint.Run, ws *workflow.Step, it *mapItem, outputs map[string]any) (stepResult, any, error) {
	u := unitOf(run.ID, ws.ID, it)
	policy := policyFor(ws.Retry)
	ag := p.wf.Agents[ws.Agent]
	cfg := circuitConfig(ag.Circuit)
	for {
		var (
			st          *checkpoint.Step
			last        *checkpoint.Attempt
			used        int
			needsAdvice bool
		)
		err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
			var err error
			if st, err = tx.Unit(u); err != nil {
				return err
			}
			if last, err = lastCounted(tx, u); err != nil {
				return err
			}
			if needsAdvice, err = helpPending(tx, u, last); err != nil {
				return err
			}
			used, err = tx.UnitCountCounted(u)
			return err
		})
		if err != nil {
			return 0, nil, fmt.Errorf("read %s: %w", unitLabel(u), err)
		}
		switch st.Status {
		case checkpoint.StepSucceeded:
			out, err := envelopeData(st.HandoffJSON)
			return stepDone, out, err
		case checkpoint.StepFailed:
			return stepFailed, nil, nil
		}
		askedHelp := last != nil && last.Status == checkpoint.AttemptFailed && last.Class == string(handoff.ClassHelp)
		switch {
		case askedHelp && ws.OnHelp == nil:
			return p.failStep(ctx, u, ws, "the agent asked for help and the step has no on_help")
		case askedHelp && needsAdvice && st.HelpRounds >= ws.OnHelp.MaxRounds:
			return p.failStep(ctx, u, ws, fmt.Sprintf("the agent asked for help again after all %d help rounds", ws.OnHelp.MaxRounds))
		case !askedHelp && last != nil && last.Status == checkpoint.AttemptFailed &&
			last.Class != string(handoff.ClassBudget) && !policy.Retryable(last.Class):
			// A budget stop is decided again below, against the budget now in force.
			return p.failStep(ctx, u, ws, fmt.Sprintf("class %s is not retried", last.Class))
		case used >= st.MaxAttempts:
			return p.failStep(ctx, u, ws, fmt.Sprintf("all %d attempts used", st.MaxAttempts))
		case askedHelp && needsAdvice:
			if err := p.helpRound(ctx, run, ws, it, last, outputs); err != nil {
				return 0, nil, err
			}
			continue
		}

		if st.NextRetryAt != nil && p.now().Before(*st.NextRetryAt) {
			reason := "backoff"
			if last != nil && last.Uncounted && last.Class == string(handoff.ClassTransient) {
				reason = "usage limit"
			}
			if err := p.wait(ctx, u, ws, *st.NextRetryAt, reason, FailDuringBackoff); err != nil {
				return 0, nil, err
			}
		}

		if stop, err := p.overBudget(ctx, run, ws, u, st, used); err != nil || stop {
			if err != nil {
				return 0, nil, err
			}
			return stepFailed, nil, nil
		}

		task, err := p.renderPrompt(ws, run.ID, used+1, outputs, it, st.Advice)
		if err != nil {
			return p.failStep(ctx, u, ws, err.Error())
		}
		orig, answered := task, false
		if last != nil {
			// One read of the step's history serves both questions.
			if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
				list, err := tx.UnitAttempts(u)
				if t := sessionTask(list); t != "" {
					orig = t
				}
				answered = sessionAnswered(list, st.SessionID)
				return err
			}); err != nil {
				return 0, nil, fmt.Errorf("read %s: %w", unitLabel(u), err)
			}
		}
		plan, err := p.plan(ws, st, last, task, orig, used+1, answered)
		if err != nil {
			return 0, nil, err
		}

		a, waitUntil, err := p.beginAttempt(ctx, u, ws, cfg, plan)
		if err != nil {
			return 0, nil, err
		}
		if a == nil {
			if err := p.wait(ctx, u, ws, waitUntil, "circuit", ""); err != nil {
				return 0, nil, err
			}
			continue
		}
		p.fp.hit(FailAfterAttemptCommit)
		out, err := p.execute(ctx, &try{run: run, ws: ws, item: it, row: a, plan: plan, counted: used + 1, max: st.MaxAttempts})
		if err != nil {
			return 0, nil, err
		}
		if out.done {
			return stepDone, out.data, nil
		}
	}
}

// lastCounted returns the latest attempt that counts against max_attempts.
func lastCounted(tx *checkpoint.Tx, u checkpoint.Unit) (*checkpoint.Attempt, error) {
	all, err := tx.UnitLastAttempt(u)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if all.Kind != checkpoint.KindHelp {
		return all, nil
	}
	list, err := tx.UnitAttempts(u)
	if err != nil {
		return nil, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Kind != checkpoint.KindHelp {
			a := list[i]
			return &a, nil
		}
	}
	return nil, nil
}

// failStep marks a step, or an item, failed for good.
func (p *project) failStep(ctx context.Context, u checkpoint.Unit, ws *workflow.Step, why string) (stepResult, any, error) {
	now := p.now()
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		if s.Status == checkpoint.StepFailed {
			return nil
		}
		s.Status = checkpoint.StepFailed
		s.NextRetryAt = nil
		s.UpdatedAt = now
		return tx.UpdateStep(*s)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record %s as failed: %w", unitLabel(u), err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: u.RunID, Step: ws.ID, Item: u.Item, Agent: ws.Agent, Message: why})
	return stepFailed, nil, nil
}

// wait blocks until deadline, honouring --max-wait. The deadline is absolute
// and committed before the wait starts, so a resumed process waits only what
// remains (G4) and a clock moved backwards only lengthens the wait (G10).
func (p *project) wait(ctx context.Context, u checkpoint.Unit, ws *workflow.Step, deadline time.Time, reason, fail string) error {
	remaining := retrystate.Remaining(p.now(), deadline)
	if remaining <= 0 {
		return nil
	}
	circuitOf := ""
	if reason == "circuit" {
		circuitOf = ws.Agent
	}
	if p.opts.MaxWait > 0 && remaining > p.opts.MaxWait {
		return &errWaitTooLong{until: deadline, circuit: circuitOf}
	}
	d := deadline
	p.sink.Emit(history.Event{Time: p.now(), Type: history.EventWaiting, RunID: u.RunID, Step: ws.ID, Item: u.Item, Agent: ws.Agent, Until: &d, Reason: reason})
	if fail != "" {
		p.fp.hit(fail)
	}
	label := ws.ID
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

// overBudget stops the step (class budget) when the run's or the step's
// recorded cost has reached its budget before this attempt.
func (p *project) overBudget(ctx context.Context, run *checkpoint.Run, ws *workflow.Step, u checkpoint.Unit, st *checkpoint.Step, used int) (bool, error) {
	var runBudget float64
	if run.BudgetUSD != nil {
		runBudget = *run.BudgetUSD
	}
	if runBudget <= 0 && ws.MaxCostUSD <= 0 {
		return false, nil
	}
	var spent float64
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		spent, _, err = tx.RunCost(run.ID)
		return err
	}); err != nil {
		return false, fmt.Errorf("read run cost: %w", err)
	}
	var detail string
	switch {
	case runBudget > 0 && spent >= runBudget:
		detail = fmt.Sprintf("the run has spent $%.4f of its $%.2f budget", spent, runBudget)
	case ws.MaxCostUSD > 0 && st.CostUSD >= ws.MaxCostUSD:
		detail = fmt.Sprintf("step %s has spent $%.4f of its $%.2f budget", ws.ID, st.CostUSD, ws.MaxCostUSD)
	default:
		return false, nil
	}
	now := p.now()
	diag := handoff.Diagnose(handoff.ClassBudget, detail)
	details, _ := json.Marshal(diag)
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		// No process runs, so the stop does not use up an attempt.
		a := checkpoint.Attempt{RunID: run.ID, StepID: ws.ID, ItemKey: u.Item, N: n, Kind: kindAfter(used), Status: checkpoint.AttemptRunning,
			StartedAt: now, Uncounted: true}
		if err := tx.InsertAttempt(a); err != nil {
			return err
		}
		a.Status, a.Class, a.Error, a.DetailsJSON, a.FinishedAt = checkpoint.AttemptFailed, string(handoff.ClassBudget), diag.Summary(), details, &now
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		s.Status, s.NextRetryAt, s.UpdatedAt = checkpoint.StepFailed, nil, now
		return tx.UpdateStep(*s)
	})
	if err != nil {
		return false, fmt.Errorf("record budget stop of step %s: %w", ws.ID, err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: run.ID, Step: ws.ID, Item: u.Item, Agent: ws.Agent, Class: string(handoff.ClassBudget), Message: detail})
	return true, nil
}

func kindAfter(used int) string {
	if used == 0 {
		return checkpoint.KindInitial
	}
	return checkpoint.KindFollowup
}

// nextN is the number the next attempt row of a step or an item gets.
func nextN(tx *checkpoint.Tx, u checkpoint.Unit) (int, error) {
	last, err := tx.UnitLastAttempt(u)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return last.N + 1, nil
}

// policyFor converts a workflow retry section into a retry policy.
func policyFor(r workflow.Retry) retrystate.Policy {
	return retrystate.Policy{
		MaxAttempts: r.MaxAttempts,
		Backoff:     retrystate.Backoff(r.Backoff),
		Initial:     r.Initial,
		Multiplier:  r.Multiplier,
		Max:         r.Max,
		Jitter:      retrystate.Jitter(r.Jitter),
		On:          r.On,
		Never:       r.Never,
	}
}

func circuitConfig(c workflow.Circuit) circuit.Config {
	return circuit.Config{Failures: c.Failures, OpenFor: c.OpenFor, HalfOpenCalls: c.HalfOpenCalls}
}

// envelopeData returns the data of a stored envelope, decoded for templates.
func envelopeData(envJSON []byte) (any, error) {
	if len(envJSON) == 0 {
		return nil, nil
	}
	var env handoff.Envelope
	if err := json.Unmarshal(envJSON, &env); err != nil {
		return nil, err
	}
	return jsonvalue.Decode(env.Data)
}

// stderrCause is Event.Stderr for an attempt judged class with the agent's
// result res.
func stderrCause(class handoff.Class, res *agent.Result) string {
	if class != handoff.ClassExitNonzero || res == nil {
		return ""
	}
	lines := strings.Split(res.StderrTail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if line := strings.TrimSpace(lines[i]); line != "" {
			if len(line) > maxStderrCause {
				line = line[:maxStderrCause]
			}
			return line
		}
	}
	return ""
}

// maxStderrCause bounds Event.Stderr.
const maxStderrCause = 1024
