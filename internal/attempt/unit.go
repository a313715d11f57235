package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// LastCounted returns the latest attempt that counts against max_attempts.
func LastCounted(tx *checkpoint.Tx, u checkpoint.Unit) (*checkpoint.Attempt, error) {
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

// FailStep marks a step instance failed for good, for the reason why.
func (r *Runner) FailStep(ctx context.Context, in *Instance, why string) (Outcome, error) {
	now := r.now()
	err := r.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Unit(in.Unit())
		if err != nil {
			return err
		}
		if s.Status() == checkpoint.StepFailed {
			return nil
		}
		return tx.StepFailed(s, now)
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("record %s as failed: %w", in.Label(), err)
	}
	r.Sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: in.Run.ID, Step: in.StepPath(), Item: in.ItemKey(), Agent: in.Step.Agent, Message: why})
	return Outcome{Failed: true}, nil
}

// overBudget stops the step (class budget) when the run's or the step's
// recorded cost has reached its budget before this attempt. The stop is
// an attempt row of its own, uncounted: no process runs.
func (r *Runner) overBudget(ctx context.Context, in *Instance, st *checkpoint.Step, used int) (bool, error) {
	detail, err := r.budgetSpent(ctx, in, st)
	if err != nil || detail == "" {
		return false, err
	}
	return true, r.StopStep(ctx, in, handoff.ClassBudget, detail, kindAfter(used))
}

// StopStep fails a step instance for good with class and detail before
// any process runs: a budget spent, a when that could not be evaluated.
// The stop is an attempt row of its own, uncounted, of the kind the next
// attempt would have had, so that inspect shows its class and why.
func (r *Runner) StopStep(ctx context.Context, in *Instance, class handoff.Class, detail, kind string) error {
	now := r.now()
	diag := handoff.Diagnose(class, detail)
	details, _ := json.Marshal(diag)
	u := in.Unit()
	err := r.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		// No process ran: the stop cost nothing, which is known.
		zero := 0.0
		a := checkpoint.Attempt{RunID: u.RunID, StepID: u.StepID, ItemKey: u.Item, N: n, Kind: kind, StartedAt: now, Uncounted: true, CostUSD: &zero}
		if err := tx.StartAttempt(&a); err != nil {
			return err
		}
		a.Class, a.Error, a.DetailsJSON, a.FinishedAt = string(class), diag.Summary(), details, &now
		if err := tx.AttemptFailed(&a); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		return tx.StepFailed(s, now)
	})
	if err != nil {
		return fmt.Errorf("record the %s stop of %s: %w", class, in.Label(), err)
	}
	r.Sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: in.Run.ID, Step: in.StepPath(), Item: in.ItemKey(), Agent: in.Step.Agent,
		Class: string(class), Message: detail})
	return nil
}

// budgetSpent says which budget is spent, the run's or the step's, or ""
// when neither is.
func (r *Runner) budgetSpent(ctx context.Context, in *Instance, st *checkpoint.Step) (string, error) {
	ws := in.Step
	var runBudget float64
	if in.Run.BudgetUSD != nil {
		runBudget = *in.Run.BudgetUSD
	}
	if runBudget <= 0 && ws.MaxCostUSD <= 0 {
		return "", nil
	}
	var spent float64
	if err := r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		spent, _, err = tx.RunCost(in.Run.ID)
		return err
	}); err != nil {
		return "", fmt.Errorf("read run cost: %w", err)
	}
	switch {
	case runBudget > 0 && spent >= runBudget:
		return fmt.Sprintf("the run has spent $%.4f of its $%.2f budget", spent, runBudget), nil
	case ws.MaxCostUSD > 0 && st.CostUSD >= ws.MaxCostUSD:
		return fmt.Sprintf("step %s has spent $%.4f of its $%.2f budget", ws.ID, st.CostUSD, ws.MaxCostUSD), nil
	}
	return "", nil
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

// EnvelopeData returns the data of a stored envelope, decoded for
// templates. The envelope's other fields are not decoded: a resume reads
// the data of every step done before, and parsing each timestamp and
// metadata list was most of the cost.
func EnvelopeData(envJSON []byte) (any, error) {
	if len(envJSON) == 0 {
		return nil, nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(envJSON, &env); err != nil {
		return nil, err
	}
	return jsonvalue.Decode(env.Data)
}
