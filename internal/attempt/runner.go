// Package attempt runs one attempt of a step instance from its committed
// row to its committed outcome: it plans the attempt (prompt, session,
// kind), begins it under the agent's circuit, launches the agent, judges
// its handoff, runs the step's checks, decides the retry (a pure
// function, decide) and commits the outcome through the named state
// changes of checkpoint. Settling an attempt a crash left running, and an
// advisor's help round, go through the same launch as the normal path and
// end through the same list of endings (end, in endings.go), whose
// transactions one switch builds.
//
// The run loop (internal/orchestrator) decides which instance runs next
// and waits where Run says to; everything about one attempt is here.
package attempt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Runner runs the attempts of a project's step instances. Its fields are
// its dependencies, set by whoever opened the project; Run is its one
// entry point for the normal path, Settle the one for an attempt a crash
// left running.
type Runner struct {
	Dir      string             // the project directory, absolute
	Workflow *workflow.Workflow // the workflow the run uses
	Store    *checkpoint.Store
	Clock    retrystate.Clock
	Rand     func() float64 // jitter source
	Sink     history.Sink
	Log      *slog.Logger
	// Failpoint is the CADENCE_FAILPOINT of this process (nil: none).
	Failpoint *Failpoint
	// Env is the base environment of agents and checks, CADENCE_*
	// variables dropped (WithoutCadenceVars).
	Env     []string
	SelfExe string // the cadence binary: the sim preset, and the supervisor of agents and checks
	// Spares, when set, keeps a supervisor of SelfExe started ahead of the
	// attempt or check that takes it (agent.Spares).
	Spares *agent.Spares
	Grace  time.Duration // SIGTERM → SIGKILL grace for agents and checks; 0 means agent.DefaultGrace

	once sync.Once
	// configHashes identifies each agent's configuration, stored with its
	// breaker (agentBreaker).
	configHashes map[string]string
	// noSchemaFormat names the openai agents whose endpoint refused
	// response_format in this process; they are not asked for it again.
	// mu guards it: the items of a map step run at once.
	mu             sync.Mutex
	noSchemaFormat map[string]bool
	// outputs knows the CADENCE_OUTPUTS_DIR files already checked.
	outputs outputStamps
}

// Outcome is how Run left a step instance.
type Outcome struct {
	Done   bool // succeeded: Output is its output
	Output any
	Failed bool // failed for good
	// Wait, when not zero, is the committed time before which the next
	// attempt may not start; Reason says why ("backoff", "usage limit",
	// "circuit"), and Circuit names the agent whose circuit is open.
	Wait    time.Time
	Reason  string
	Circuit string
}

func (r *Runner) init() {
	r.once.Do(func() {
		r.configHashes = agentConfigHashes(r.Workflow)
		r.noSchemaFormat = map[string]bool{}
	})
}

// Run takes the instance one step further from its committed state: it
// reports it done or failed, or the wait before its next attempt, or it
// runs one attempt (or a help round, or a budget stop) and commits its
// outcome. The caller calls it again until the instance is done or
// failed, waiting where it says; every decision is taken from the
// committed state, so a resumed process continues exactly where the last
// one left off.
func (r *Runner) Run(ctx context.Context, in *Instance) (Outcome, error) {
	r.init()
	s, err := r.readState(ctx, in)
	if err != nil {
		return Outcome{}, err
	}
	switch next := nextAction(in.Step, s, r.now()); next.kind {
	case nextFallback:
		return Outcome{}, r.fallBack(ctx, in, s.entries.current, next.agent)
	case nextDone:
		out, err := EnvelopeData(s.step.HandoffJSON)
		return Outcome{Done: true, Output: out}, err
	case nextFailed:
		return Outcome{Failed: true}, nil
	case nextFail:
		return r.FailStep(ctx, in, next.why)
	case nextHelp:
		return Outcome{}, r.helpRound(ctx, in, s.last)
	case nextWait:
		return Outcome{Wait: next.until, Reason: next.reason}, nil
	}
	if stop, err := r.overBudget(ctx, in, s.step, s.used); err != nil || stop {
		return Outcome{Failed: stop}, err
	}
	plan, err := r.planFor(ctx, in, s)
	if err != nil {
		var pe *promptError
		if errors.As(err, &pe) {
			return r.FailStep(ctx, in, pe.Error())
		}
		return Outcome{}, err
	}
	handoffPath, err := r.clearHandoffFile(in)
	if err != nil {
		return Outcome{}, err
	}
	switch busy, err := atMaxConcurrent(ctx, r, plan.agent); {
	case err != nil:
		return Outcome{}, err
	case busy:
		return Outcome{Wait: r.now().Add(maxConcurrentPoll), Reason: "max_concurrent"}, nil
	}
	snap, note, err := prepareTree(ctx, r, in, s.last)
	if err != nil {
		return Outcome{}, err
	}
	if plan.snapshot = snap; !in.isCommand() {
		plan.prompt += note
	}
	sup := reserveSupervisor(ctx, r, in)
	a, waitUntil, why, err := r.beginAttempt(ctx, in, plan, sup)
	if err != nil {
		sup.Discard() // the row may have been committed naming it
		return Outcome{}, err
	}
	switch {
	case a == nil && why == "circuit":
		sup.Release()
		return Outcome{Wait: waitUntil, Reason: why, Circuit: plan.agent}, nil
	case a == nil:
		sup.Release()
		return Outcome{Wait: waitUntil, Reason: why}, nil
	}
	defer sup.Discard() // unless the attempt's process ran under it
	r.Failpoint.Hit(FailAfterAttemptCommit)
	t := &try{r: r, in: in, row: a, plan: plan, counted: s.used + 1, max: s.step.MaxAttempts, supervisor: sup}
	return t.execute(ctx, handoffPath)
}

// reserveSupervisor takes, for a command step's attempt of r, the supervisor
// its process will run under, so that the attempt's row names it in the
// one commit made before the process starts (G1), instead of a commit of
// the row and then one of the pid. Only a command's: a command has no
// session for a later attempt to continue, so after a crash between that
// commit and its start nothing depends on whether the process ran, while
// an agent's pid, committed once it is about to run, is what tells
// resume that its session exists (G5). nil when the runner has no spares
// or none could be taken: the attempt's Run then takes one itself, and
// reports why it could not.
func reserveSupervisor(ctx context.Context, r *Runner, in *Instance) *agent.Reserved {
	if !in.isCommand() || r.Spares == nil || r.SelfExe == "" {
		return nil
	}
	sup, err := r.Spares.Reserve(ctx)
	if err != nil {
		return nil
	}
	return sup
}

// unitState is an instance's committed state, as the next decision needs
// it.
type unitState struct {
	step *checkpoint.Step
	// last is the latest attempt that counts against max_attempts; used
	// how many do.
	last *checkpoint.Attempt
	used int
	// needsAdvice says the last attempt asked for help and no advisor
	// round has answered it yet.
	needsAdvice bool
	// entries is the state of the agent entries the instance may run on,
	// candidates those it may move to (fallbackCandidates).
	entries    entries
	candidates []string
}

func (r *Runner) readState(ctx context.Context, in *Instance) (unitState, error) {
	if st := in.State; st != nil {
		in.State = nil // good for the attempt that follows its read only
		return st.s, nil
	}
	var s unitState
	err := r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		s, err = stateIn(tx, r, in, nil)
		return err
	})
	if err != nil {
		return s, fmt.Errorf("read %s: %w", UnitLabel(in.Unit()), err)
	}
	return s, nil
}

// State is an instance's committed state as its next attempt decides
// from it, read by the caller in a transaction of its own (ReadState):
// a worker on PostgreSQL reads it in the transaction that claims the
// step, instead of in one more.
type State struct{ s unitState }

// ReadState reads instance in's state in tx, for Instance.State. row is
// the instance's row as the caller read it in tx already (a claim reads
// it first), used instead of reading it again; nil reads it.
func ReadState(tx *checkpoint.Tx, r *Runner, in *Instance, row *checkpoint.Step) (*State, error) {
	s, err := stateIn(tx, r, in, row)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", UnitLabel(in.Unit()), err)
	}
	return &State{s: s}, nil
}

// stateIn reads instance in's state in tx, from its row when row is set.
func stateIn(tx *checkpoint.Tx, r *Runner, in *Instance, row *checkpoint.Step) (unitState, error) {
	var s unitState
	u := in.Unit()
	var err error
	if row != nil {
		cp := *row // the caller's copy stays its own
		s.step = &cp
	} else if s.step, err = tx.Unit(u); err != nil {
		return s, err
	}
	if s.last, err = LastCounted(tx, u); err != nil {
		return s, err
	}
	if s.needsAdvice, err = helpPending(tx, u, s.last); err != nil {
		return s, err
	}
	if s.used, err = tx.UnitCountCounted(u); err != nil {
		return s, err
	}
	s.entries.current = currentAgent(r.Workflow, in.Step, s.step)
	s.candidates = fallbackCandidates(r.Workflow, in.Step, s.entries.current)
	if !slices.ContainsFunc(s.candidates, func(n string) bool { return n != s.entries.current }) || in.isCommand() {
		// Nowhere to move: a step without fallbacks reads nothing
		// more than it did without them.
		s.candidates = nil
		return s, nil
	}
	s.entries.openUntil, s.entries.loggedOut, err = r.readEntries(tx, in, s.candidates, s.entries.current)
	return s, err
}

// planFor renders the task and plans the next attempt from the committed
// state.
func (r *Runner) planFor(ctx context.Context, in *Instance, s unitState) (attemptPlan, error) {
	if in.isCommand() {
		return commandPlan(in, s.last), nil
	}
	task, err := r.renderPrompt(in, s.used+1, s.step.Advice)
	if err != nil {
		return attemptPlan{}, &promptError{err}
	}
	orig, answered, diag := task, false, ""
	if s.last != nil {
		// One read of the step's history serves every question.
		if err := r.Store.View(ctx, func(tx *checkpoint.Tx) error {
			list, err := tx.UnitAttempts(in.Unit())
			if t := sessionTask(list); t != "" {
				orig = t
			}
			answered = sessionAnswered(list, s.step.SessionID)
			diag = diagnosisSoFar(list)
			return err
		}); err != nil {
			return attemptPlan{}, fmt.Errorf("read %s: %w", in.Label(), err)
		}
	}
	p, err := r.plan(in.Step, s.step, s.last, task, orig, s.used+1, answered)
	p.agent = s.entries.current
	if p.kind == checkpoint.KindFallback {
		p.prompt = fallbackPrompt(task, diag)
	}
	return p, err
}

// promptError is a prompt that could not be rendered: the step fails.
type promptError struct{ err error }

func (e *promptError) Error() string { return e.err.Error() }

func (r *Runner) now() time.Time { return r.Clock.Now().UTC() }

// Close releases what the runner keeps between attempts (the watches of
// the CADENCE_OUTPUTS_DIR files). The runner may not be used after.
func (r *Runner) Close() { r.outputs.close() }

// ErrInterrupted reports that an attempt was stopped because cadence was
// (SIGINT, SIGTERM): the run stops, resumable.
var ErrInterrupted = errors.New("interrupted")

// LoginError stops a run whose agent's login failed (class auth): no
// retry can fix it, a person logging in can. The run stops resumable.
type LoginError struct {
	Agent, Step string
	Detail      string // the attempt's error
}

func (e *LoginError) Error() string {
	return "step " + e.Step + ": " + e.Detail
}
