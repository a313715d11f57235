package attempt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// beginAttempt asks the agent's circuit for permission and, when granted,
// commits the attempt row (running) together with the circuit's new state
// and the step's session, before any process starts (G1). When the
// circuit refuses, or the agent entry already runs max_concurrent
// attempts (in any process sharing the store), it returns the time to
// wait until, and why; waiting consumes no attempt.
func (r *Runner) beginAttempt(ctx context.Context, in *Instance, plan attemptPlan, sup *agent.Reserved) (*checkpoint.Attempt, time.Time, string, error) {
	var (
		a         *checkpoint.Attempt
		waitUntil time.Time
		why       = "circuit"
	)
	u := in.Unit()
	agentName := plan.agent
	now := r.now()
	commit, pid := r.Store.UpdateBeforeStart, (*int)(nil)
	switch {
	case sup != nil:
		// The row names the supervisor the process will run under: its
		// pid, committed here, is the one the start reports, and no
		// commit of it follows (try.onStart).
		pid = new(sup.PID())
	case startsProcess(r.Workflow, plan):
		// The pid's commit, before the process runs, makes the row
		// durable with it: one fsync per attempt before its start.
		commit = r.Store.UpdateSyncedByStart
	}
	err := commit(ctx, func(tx *checkpoint.Tx) error {
		var gen int64
		if ag := r.Workflow.Agents[agentName]; ag != nil && ag.MaxConcurrent > 0 {
			n, err := tx.RunningOfAgent(agentName)
			if err != nil {
				return err
			}
			if n >= ag.MaxConcurrent {
				waitUntil, why = now.Add(maxConcurrentPoll), "max_concurrent"
				return nil
			}
		}
		if agentName != "" { // a command step has no agent and no circuit
			b, err := r.agentBreaker(tx, agentName, now)
			if err != nil {
				return err
			}
			next, g, ok, until := circuit.Acquire(b.Breaker, r.circuitConfig(agentName), now)
			if err := putBreaker(tx, b, next, now); err != nil {
				return err
			}
			if !ok {
				waitUntil = until
				if waitUntil.IsZero() || !waitUntil.After(now) {
					waitUntil = now.Add(time.Second)
				}
				return nil
			}
			gen = g
		}
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		row := checkpoint.Attempt{
			RunID: u.RunID, StepID: u.StepID, ItemKey: u.Item, N: n, Kind: plan.kind,
			Prompt: plan.prompt, StartedAt: now, SessionID: plan.sessionID, CircuitGen: gen, Agent: plan.agent,
			Snapshot: plan.snapshot, PID: pid,
		}
		if err := tx.StartAttempt(&row); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		s.SessionID = plan.sessionID
		s.FreshSession = false
		if err := tx.StepRunning(s, now); err != nil {
			return err
		}
		a = &row
		return nil
	})
	if err != nil {
		return nil, time.Time{}, "", fmt.Errorf("begin an attempt of %s: %w", in.Label(), err)
	}
	return a, waitUntil, why, nil
}

// startsProcess reports whether an attempt of plan runs a process whose
// pid is committed before it runs (agent.Spec.OnStart, try.onStart): a
// command or a CLI agent. An openai agent's turn is a request cadence
// makes itself, with no pid to commit, so its row is committed durably
// on its own.
func startsProcess(wf *workflow.Workflow, plan attemptPlan) bool {
	if plan.agent == "" {
		return true
	}
	ag := wf.Agents[plan.agent]
	return ag != nil && ag.Preset != agent.PresetOpenAI
}

// maxConcurrentPoll is how soon an attempt that found its agent entry at
// max_concurrent looks again.
const maxConcurrentPoll = 250 * time.Millisecond

// circuitConfig is the circuit breaker configuration of an agent.
func (r *Runner) circuitConfig(agentName string) circuit.Config {
	c := r.Workflow.Agents[agentName].Circuit
	return circuit.Config{Failures: c.Failures, OpenFor: c.OpenFor, HalfOpenCalls: c.HalfOpenCalls}
}

// LoadBreaker reads an agent's breaker as stored (closed when none is).
func LoadBreaker(tx *checkpoint.Tx, agentName string) (circuit.Breaker, error) {
	b, _, err := loadBreakerHash(tx, agentName)
	return b, err
}

// loadBreakerHash reads an agent's breaker and the configuration hash it
// was recorded under ("" when none is recorded).
func loadBreakerHash(tx *checkpoint.Tx, agentName string) (circuit.Breaker, string, error) {
	c, err := tx.Circuit(agentName)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return circuit.Breaker{Agent: agentName, State: circuit.Closed}, "", nil
	}
	if err != nil {
		return circuit.Breaker{}, "", err
	}
	b := circuit.Breaker{
		Agent: c.Agent, State: circuit.State(c.State), Failures: c.Failures, Generation: c.Generation,
		Trials: c.Trials, Successes: c.Successes,
	}
	if c.OpenedAt != nil {
		b.OpenedAt = *c.OpenedAt
	}
	if c.OpenUntil != nil {
		b.OpenUntil = *c.OpenUntil
	}
	return b, c.ConfigHash, nil
}

// sameBreaker reports whether two breakers hold the same state.
func sameBreaker(a, b circuit.Breaker) bool {
	return a.Agent == b.Agent && a.State == b.State && a.Failures == b.Failures && a.Generation == b.Generation &&
		a.OpenedAt.Equal(b.OpenedAt) && a.OpenUntil.Equal(b.OpenUntil) && a.Trials == b.Trials && a.Successes == b.Successes
}

// BreakerRow is the stored row of breaker b, written at now.
func BreakerRow(b circuit.Breaker, now time.Time) checkpoint.Circuit {
	c := checkpoint.Circuit{
		Agent: b.Agent, State: string(b.State), Failures: b.Failures, Generation: b.Generation,
		Trials: b.Trials, Successes: b.Successes, UpdatedAt: now,
	}
	if !b.OpenedAt.IsZero() {
		t := b.OpenedAt.UTC()
		c.OpenedAt = &t
	}
	if !b.OpenUntil.IsZero() {
		t := b.OpenUntil.UTC()
		c.OpenUntil = &t
	}
	return c
}
