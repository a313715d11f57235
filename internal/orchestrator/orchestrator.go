// Package orchestrator is cadence's run loop: it decides which step
// instance runs next (the workflow's steps, a map step's items, claimed
// under leases by this process or by workers on a shared database),
// settles on resume what a crashed process left running, waits where an
// instance must (backoff, usage limit, an open circuit, --max-wait), and
// keeps the worktrees of map items. Each attempt of an instance is run by
// internal/attempt; every state change is written by checkpoint's named
// transitions, committed before the side effect that depends on it, so
// that Resume after any interruption continues exactly where the
// committed state says.
package orchestrator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/notify"
	"github.com/cadence-dev/cadence/internal/projectid"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Options configure one run or resume.
type Options struct {
	Dir string // project directory
	// State is the state database: a postgres:// URL, or the path of a
	// SQLite file; "" means DIR/.cadence/state.db.
	State string
	// WorkflowPath is the workflow file; "" means DIR/.cadence/workflow.yaml
	// for a run, and for a resume the file of the run it continues (RunID,
	// or the project's only unfinished run).
	WorkflowPath string
	// RunID names the run a resume continues; "" means the unfinished run
	// of WorkflowPath, or the project's only one.
	RunID        string
	New          bool // run: abandon an unfinished run instead of refusing
	AllowChanged bool // resume: accept a workflow whose hash changed
	RetryFailed  bool // resume: reopen a failed run's failed step
	// RetryDead, when set, makes Resume reopen dead-lettered map items
	// first (cadence dlq retry).
	RetryDead *DeadRetry
	// MaxWait bounds a single backoff, circuit or usage-limit wait; a longer
	// one ends the process with StatusInterrupted and ResumeAt set.
	MaxWait time.Duration
	// BudgetUSD, when positive, replaces the run's budget (resume --budget).
	BudgetUSD float64
	// Inputs are run's --input NAME=VALUE flags, InputsFile the content of
	// its --inputs file (SPEC §16.1); a resume uses the run's stored
	// values and refuses them.
	Inputs     []string
	InputsFile []byte
	SelfExe    string   // the cadence binary: the sim preset, and the supervisor of every agent and check
	Env        []string // base environment of agents and checks, CADENCE_* variables dropped; nil means os.Environ()
	Clock      retrystate.Clock
	Rand       func() float64 // jitter source; nil means math/rand/v2
	Sink       history.Sink
	Logger     *slog.Logger
	Failpoint  string // CADENCE_FAILPOINT
	// StoreFault injects a storage failure (CADENCE_STOREFAULT,
	// "before-commit:K" or "after-commit:K"): see checkpoint.Fault.
	StoreFault string
	Grace      time.Duration // SIGTERM → SIGKILL grace for agents; 0 means 5s
	// LeaseTTL is how long the leases this process takes on a shared
	// (PostgreSQL) database last without renewal; 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Poll is how often a process with no item to claim on a shared
	// database looks again; 0 means DefaultPoll.
	Poll time.Duration
	// WaitApproval keeps run and resume waiting for the answer to an
	// approval gate instead of ending with StatusAwaitingApproval when
	// nothing else can run (--wait-approval).
	WaitApproval bool
	// BeforeFirstAttempt, when set, is called once, before the first
	// attempt this process starts (the side effect of a step, an item or
	// a check): what comes before it is loading the workflow and the run's
	// rows, which cmd/cadence runs under a garbage-collector setting of
	// its own.
	BeforeFirstAttempt func()

	// lockOptional lets open go on without the workflow's lock when
	// another process holds it (Cancel): p.lock is then nil.
	lockOptional bool
	// readAhead has open read the rows of the run a resume continues
	// beside the loading of the workflow (runRows).
	readAhead bool
	// preload, when set, returns the load of the workflow open would
	// make, started earlier (preloading); open uses it instead.
	preload func() (*workflow.Workflow, error)
}

// Status is how an invocation of Run or Resume ended.
type Status int

const (
	StatusSucceeded   Status = iota // every step succeeded
	StatusFailed                    // a step exhausted its attempts or could not be retried
	StatusInterrupted               // stopped by a signal or --max-wait; resumable
	// StatusAwaitingApproval: what is left waits for a person to answer
	// an approval gate (SPEC §16.6); resumable, exit 5.
	StatusAwaitingApproval
	// StatusCancelled: `cadence cancel` ended the run for good, from
	// another process while this one worked on it; never resumed.
	StatusCancelled
)

// Result describes how a run ended.
type Result struct {
	RunID    string
	Status   Status
	ResumeAt time.Time // set when a wait exceeded MaxWait
	// Circuit names the agent whose open circuit is waited for, when that
	// wait exceeded MaxWait.
	Circuit string
	Step    string // the step that failed, when Status is StatusFailed
	Message string
	// Gates are the approval gates waiting, by path, when Status is
	// StatusAwaitingApproval.
	Gates []string
	// login is the login that stopped the run, when one did.
	login *attempt.LoginError
}

// UsageError marks a problem with the invocation, the workflow or the state
// that stopped cadence before anything executed (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// CadenceDir is the state directory inside a project.
const CadenceDir = checkpoint.CadenceDir

// project is an opened project: its lock, workflow and store.
type project struct {
	opts  Options
	dir   string
	wf    *workflow.Workflow
	store *checkpoint.Store
	lock  *checkpoint.Lock
	clock retrystate.Clock
	rnd   func() float64
	sink  history.Sink
	log   *slog.Logger
	env   []string
	// attempts runs the attempts of the run's step instances.
	attempts *attempt.Runner
	// spares keeps the supervisors of agents and checks ready (nil
	// without Options.SelfExe).
	spares *agent.Spares
	// restoring, while a resumed run's envelope files are being
	// rewritten (loop), gives the error of that once it is done.
	restoring <-chan error
	// ahead is the reading of the resumed run's rows beside the load
	// (runRows), until the run's loop takes them; aheadRows are those
	// rows until the graph's first read has used their decoded data.
	ahead     *readingRows
	aheadRows *runRows
	aheadDone <-chan struct{} // closed once the reading ahead has ended
	// inputs are a new run's input values, checked (resolveInputs).
	inputs []byte
	// notes commits notifications and sends them.
	notes notifications
	// firstAttempt calls Options.BeforeFirstAttempt, once; nil when
	// there is none.
	firstAttempt func()
	leases
}

// stateOpening is the opening of a project's state. A resume's state
// exists already, so it is opened beside the loading of the workflow, on
// the other core (begin); a new run's may not, and it is opened only when
// asked for, after the workflow and the run's inputs were found right, so
// that a mistake in them creates no state.
type stateOpening struct {
	ctx         context.Context
	dir, target string
	done        chan struct{} // begun: closed once store and err are set
	store       *checkpoint.Store
	err         error
	// ahead, when set, reads rows with the store once it is open; rows
	// is that reading, nil when the store was not opened beside the load.
	ahead func(*checkpoint.Store) *runRows
	rows  *readingRows
}

// begin starts the opening when the state exists and no run starts.
func (o *stateOpening) begin(starting bool) {
	if _, err := os.Stat(o.target); starting || (err != nil && !strings.Contains(o.target, "://")) {
		return
	}
	o.done = make(chan struct{})
	if o.ahead != nil {
		o.rows = &readingRows{done: make(chan struct{}), finished: make(chan struct{})}
	}
	go func() {
		o.store, o.err = projectid.Open(o.ctx, o.dir, o.target)
		close(o.done)
		if o.rows != nil {
			defer close(o.rows.finished)
			var rows *runRows
			if o.err == nil {
				rows = o.ahead(o.store)
			}
			o.rows.rows = rows
			close(o.rows.done)
			// The rows are used while the envelope files are restored.
			if rows != nil {
				rows.restore()
			}
		}
	}()
}

// get returns the store, opened now unless begun.
func (o *stateOpening) get() (*checkpoint.Store, error) {
	if o.done == nil {
		return projectid.Open(o.ctx, o.dir, o.target)
	}
	<-o.done
	return o.store, o.err
}

// abandon closes a store begun and never got.
func (o *stateOpening) abandon() {
	if o.done != nil {
		<-o.done
		if o.rows != nil {
			<-o.rows.finished
		}
		if o.store != nil {
			o.store.Close()
		}
	}
}

// open takes the project lock first (G7), then loads the workflow and
// opens the store; starting says a new run starts, whose inputs are
// checked first.
func open(ctx context.Context, o Options, starting bool) (*project, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, usagef("project directory %s: %w", o.Dir, err)
	}
	cdir := filepath.Join(dir, CadenceDir)
	if fi, err := os.Stat(cdir); err != nil || !fi.IsDir() {
		if o.WorkflowPath == "" {
			return nil, usagef("%s has no .cadence directory; create a workflow with `cadence init %s`", dir, o.Dir)
		}
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", cdir, err)
		}
	}
	wfPath := o.WorkflowPath
	if wfPath == "" {
		wfPath = filepath.Join(cdir, "workflow.yaml")
	}
	lock, err := checkpoint.AcquireLockNamed(cdir, checkpoint.WorkflowLockName(checkpoint.RelPath(dir, wfPath)))
	var locked *checkpoint.LockedError
	if err != nil && !(o.lockOptional && errors.As(err, &locked)) {
		return nil, err
	}
	p := &project{opts: o, dir: dir, lock: lock, clock: o.Clock, rnd: o.Rand, sink: o.Sink, log: o.Logger, env: o.Env,
		leases: leases{id: newIdentity()}}
	if o.BeforeFirstAttempt != nil {
		p.firstAttempt = sync.OnceFunc(o.BeforeFirstAttempt)
	}
	if o.SelfExe != "" && lock != nil {
		// The first attempt's supervisor starts now, beside the loading
		// of the workflow and the state: a resume's first step would
		// otherwise wait for it.
		p.spares = agent.NewSpares(o.SelfExe)
		p.spares.Prestart()
	}
	state := &stateOpening{ctx: ctx, dir: dir, target: history.StateTarget(dir, o.State)}
	if o.readAhead && !starting {
		ahead := rowsAhead{log: o.Logger, dir: dir, runID: o.RunID, rel: checkpoint.RelPath(dir, wfPath)}
		if ahead.log == nil { // p.log is set once the store is open
			ahead.log = slog.New(slog.DiscardHandler)
		}
		state.ahead = func(s *checkpoint.Store) *runRows { return ahead.read(ctx, s) }
	}
	state.begin(starting)
	ok := false
	defer func() {
		if !ok {
			if p.store == nil {
				state.abandon()
			}
			p.close()
		}
	}()
	var wf *workflow.Workflow
	if o.preload != nil {
		wf, err = o.preload()
	} else {
		wf, err = workflow.Load(dir, o.WorkflowPath)
	}
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	// A program that cannot be found is the workflow's mistake: it ends
	// the command here, before any attempt could fail on it and count
	// against its agent's circuit.
	if err := workflow.CheckPrograms(wf); err != nil {
		return nil, &UsageError{Err: err}
	}
	p.wf = wf
	if starting {
		// A run's inputs are checked before the state is created.
		if p.inputs, err = resolveInputs(wf, o); err != nil {
			return nil, err
		}
	}
	store, err := state.get()
	if err != nil {
		return nil, err
	}
	p.store = store
	if p.ahead = state.rows; p.ahead != nil {
		p.aheadDone = p.ahead.finished
	}
	// A deleted lock file stops every write of this process: another
	// process may take a lock on a new file (the run's lease in the
	// state keeps it from running this run meanwhile).
	if lock != nil {
		store.Guard(lock.Check)
	}
	if o.StoreFault != "" {
		f, err := checkpoint.ParseFault(o.StoreFault)
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		store.InjectFault(f)
	}
	p.setDefaults()
	for _, name := range UnsetAPIKeys(wf, p.env) {
		p.log.Warn(fmt.Sprintf("agent %s: api_key_env names %s, which is not set: its requests will carry no API key", name, wf.Agents[name].APIKeyEnv))
	}
	ok = true
	return p, nil
}

// setDefaults fills in what Options left unset.
func (p *project) setDefaults() {
	if p.clock == nil {
		p.clock = retrystate.SystemClock()
	}
	if p.rnd == nil {
		p.rnd = mathrand.Float64
	}
	if p.sink == nil {
		p.sink = history.Discard{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.env == nil {
		p.env = os.Environ()
	}
	p.env = attempt.WithoutCadenceVars(p.env)
	p.leases.store, p.leases.log, p.leases.ttl, p.leases.every = p.store, p.log, p.opts.LeaseTTL, p.opts.Poll
	p.attempts = &attempt.Runner{
		Dir: p.dir, Workflow: p.wf, Store: p.store, Clock: p.clock, Rand: p.rnd, Sink: p.sink, Log: p.log,
		Failpoint: attempt.ParseFailpoint(p.opts.Failpoint), Env: p.env, SelfExe: p.opts.SelfExe, Grace: p.opts.Grace,
	}
	if p.opts.SelfExe != "" {
		if p.spares == nil {
			p.spares = agent.NewSpares(p.opts.SelfExe)
		}
		p.attempts.Spares = p.spares
	}
	failpoint := p.attempts.Failpoint
	p.notes = notifications{wf: p.wf, store: p.store, name: cmp.Or(p.wf.Name, filepath.Base(p.dir)),
		sender: &notify.Deliverer{Store: p.store, Dir: p.dir, Env: p.env, SelfExe: p.opts.SelfExe, Log: p.log, Now: p.now,
			BeforePass: func() { failpoint.Hit(notify.FailBeforeDelivery) }, Holder: p.leases.id.lease(), Gone: p.leases.id.gone}}
}

func (p *project) close() {
	if p.aheadDone != nil {
		<-p.aheadDone
	}
	if p.spares != nil {
		p.spares.Close()
	}
	if p.attempts != nil {
		p.attempts.Close()
	}
	if p.store != nil {
		_ = p.store.Close()
	}
	if p.lock != nil {
		_ = p.lock.Release()
	}
}

// Run validates the workflow and starts a new run. An unfinished run makes it
// refuse, unless Options.New abandons that run first.
func Run(ctx context.Context, o Options) (*Result, error) {
	p, err := open(ctx, o, true)
	if err != nil {
		return nil, err
	}
	defer p.close()
	// Notifications left pending by an earlier process go out too.
	p.notes.start(ctx)
	defer p.notes.stop()
	if err := p.checkWorktrees(ctx); err != nil {
		return nil, err
	}

	var existing *checkpoint.Run
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		r, err := tx.LatestUnfinishedRunOf(p.relPath(p.wf.Path))
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil
		}
		existing = r
		return err
	}); err != nil {
		return nil, fmt.Errorf("look for an unfinished run: %w", err)
	}
	if existing != nil && !o.New {
		// Name the holder if another process is running it.
		if err := p.store.View(ctx, func(tx *checkpoint.Tx) error { return p.heldByOther(tx, existing.ID) }); err != nil {
			return nil, err
		}
		return nil, usagef("run %s (started %s) is unfinished; continue it with `cadence resume`, or abandon it and start over with `cadence run --new`",
			existing.ID, existing.StartedAt.Format(time.RFC3339))
	}

	now := p.clock.Now().UTC()
	run := checkpoint.NewRun(checkpoint.Run{
		InputsJSON:     p.inputs,
		ID:             newRunID(now),
		WorkflowPath:   p.relPath(p.wf.Path),
		WorkflowSHA256: p.wf.SHA256,
		WorkflowYAML:   p.wf.Raw,
		WorkflowFiles:  p.wf.Files,
	}, now)
	if p.wf.MaxCostUSD > 0 {
		b := p.wf.MaxCostUSD
		run.BudgetUSD = &b
	}
	if o.BudgetUSD > 0 {
		b := o.BudgetUSD
		run.BudgetUSD = &b
	}
	steps := make([]checkpoint.Step, len(p.wf.Steps))
	for i, s := range p.wf.Steps {
		steps[i] = newStepRow(run.ID, s, now)
	}
	var abandon *abandonment
	if existing != nil {
		abandon = &abandonment{p: p, runID: existing.ID}
		if err := abandon.prepare(ctx); err != nil {
			return nil, err
		}
	}
	if err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		if existing != nil {
			if err := p.takeRun(tx, existing.ID); err != nil {
				return err
			}
			// Its attempts are settled with it: no process resumes it.
			if err := abandon.commit(tx, now); err != nil {
				return err
			}
			old := *existing
			if err := tx.RunEnded(&old, checkpoint.RunAbandoned, now); err != nil {
				return err
			}
			if err := tx.AddEvent(checkpoint.Event{RunID: old.ID, At: now, Kind: "run_abandoned", Detail: "abandoned by `cadence run --new`; replaced by " + run.ID}); err != nil {
				return err
			}
		}
		if err := tx.CreateRun(run, steps); err != nil {
			return err
		}
		return p.takeRun(tx, run.ID)
	}); err != nil {
		var held *checkpoint.LeaseHeldError
		if errors.As(err, &held) {
			return nil, err
		}
		return nil, fmt.Errorf("create run: %w", err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventRunStarted, RunID: run.ID, Message: p.wf.Name})
	return p.loop(ctx, &run)
}

// Resume continues the latest unfinished run (or, with RetryFailed, reopens
// the latest failed run's failed step with fresh attempts).
func Resume(ctx context.Context, o Options) (*Result, error) {
	pl := preloadDefault(o)
	if err := chooseWorkflow(ctx, &o); err != nil {
		return nil, err
	}
	o.preload = pl.loadOf(o.WorkflowPath)
	o.readAhead = o.RetryDead == nil
	p, err := open(ctx, o, false)
	if err != nil {
		return nil, err
	}
	defer p.close()
	// Notifications left pending by an earlier process go out too.
	p.notes.start(ctx)
	defer p.notes.stop()
	if err := p.checkWorktrees(ctx); err != nil {
		return nil, err
	}

	var run *checkpoint.Run
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		if o.RetryDead != nil {
			r, err := deadRetryRun(tx, o.RetryDead.RunID)
			run = r
			return err
		}
		if o.RunID != "" {
			r, err := tx.Run(o.RunID)
			if errors.Is(err, checkpoint.ErrNotFound) {
				return usagef("no run %s in this state (see: cadence runs)", o.RunID)
			}
			if err == nil && r.Status() == checkpoint.RunCancelled {
				return neverResumed(r)
			}
			if err == nil && r.Status() != checkpoint.RunRunning && r.Status() != checkpoint.RunInterrupted &&
				!(r.Status() == checkpoint.RunFailed && (o.RetryFailed || o.BudgetUSD > 0)) {
				return usagef("run %s is %s: nothing to resume", r.ID, r.Status())
			}
			run = r
			return err
		}
		wf := p.relPath(p.wf.Path)
		r, err := tx.LatestUnfinishedRunOf(wf)
		if errors.Is(err, checkpoint.ErrNotFound) && (o.RetryFailed || o.BudgetUSD > 0) {
			r, err = tx.LatestRunOf(wf)
			if err == nil && r.Status() != checkpoint.RunFailed {
				return usagef("the latest run %s is %s, not failed: nothing to retry", r.ID, r.Status())
			}
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			if last, lerr := tx.LatestRunOf(wf); lerr == nil && last.Status() == checkpoint.RunCancelled {
				return neverResumed(last)
			}
			if last, lerr := tx.LatestRunOf(wf); lerr == nil && last.Status() == checkpoint.RunFailed {
				return usagef("the latest run %s failed; give its failed step fresh attempts with `cadence resume --retry-failed`, or start a new run with `cadence run`", last.ID)
			}
			return usagef("no unfinished run to resume in %s; start one with `cadence run`", p.dir)
		}
		run = r
		return err
	}); err != nil {
		var ue *UsageError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("find the run to resume: %w", err)
	}

	if !sameWorkflow(run, p.wf) {
		changes := workflowChanges(run, p.wf)
		if !o.AllowChanged {
			summary := "  (the file differs, but no step or agent setting changed)"
			if len(changes) > 0 {
				summary = "  " + strings.Join(changes, "\n  ")
			}
			return nil, usagef("the workflow changed since run %s started:\n%s\nresume with --allow-changed to continue with the new workflow", run.ID, summary)
		}
		if graph := workflow.GraphChanges(run.WorkflowYAML, p.wf.Raw); len(graph) > 0 {
			// What the run decided (which steps ran or were skipped) was
			// decided under the old graph and cannot be carried over.
			return nil, usagef("the workflow's graph changed since run %s started:\n  %s\n--allow-changed applies changes of settings, not of the graph; start a new run with `cadence run --new`",
				run.ID, strings.Join(graph, "\n  "))
		}
	}

	now := p.clock.Now().UTC()
	if err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		r, err := tx.Run(run.ID)
		if err != nil {
			return err
		}
		if r.Status() == checkpoint.RunCancelled {
			return neverResumed(r) // cancelled since it was chosen
		}
		if err := p.takeRun(tx, r.ID); err != nil {
			return err
		}
		if !sameWorkflow(r, p.wf) {
			// Applying the changed workflow changes the run's steps:
			// the rows read ahead are not its rows any more. (A
			// failed run, whose steps taking it reopens, is not read
			// ahead.)
			p.ahead = nil
			detail := "resumed with a changed workflow: " + strings.Join(workflowChanges(r, p.wf), "; ")
			if err := tx.AddEvent(checkpoint.Event{RunID: r.ID, At: now, Kind: "workflow_changed_allowed", Detail: detail}); err != nil {
				return err
			}
			if err := p.applyChangedWorkflow(tx, r, now); err != nil {
				return err
			}
			r.WorkflowSHA256, r.WorkflowYAML, r.WorkflowFiles = p.wf.SHA256, p.wf.Raw, p.wf.Files
		}
		if o.BudgetUSD > 0 {
			b := o.BudgetUSD
			r.BudgetUSD = &b
		}
		if o.RetryDead != nil {
			if err := p.reopenDead(tx, r.ID, o.RetryDead, now); err != nil {
				return err
			}
		} else if r.Status() == checkpoint.RunFailed {
			// --retry-failed reopens every failed step; --budget alone the
			// steps the budget stopped.
			if err := reopenFailedSteps(tx, r.ID, now, !o.RetryFailed); err != nil {
				return err
			}
			if o.RetryFailed {
				// A failed map step is retried through its dead items.
				if err := p.reopenDeadOfFailedMaps(tx, r.ID, now); err != nil {
					return err
				}
			}
		}
		if err := tx.RunResumed(r, now); err != nil {
			return err
		}
		if err := tx.AddEvent(checkpoint.Event{RunID: r.ID, At: now, Kind: history.EventKindRunResumed}); err != nil {
			return err
		}
		run = r
		return nil
	}); err != nil {
		var held *checkpoint.LeaseHeldError
		var ue *UsageError
		if errors.As(err, &held) || errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("reopen run %s: %w", run.ID, err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventRunResumed, RunID: run.ID, Message: p.wf.Name})
	return p.loop(ctx, run)
}

// sameWorkflow reports whether wf is the workflow run was stored with
// (G8): its file and every file it names. A run an older cadence stored
// recorded no files (WorkflowFiles nil) and the hash of the workflow file
// alone, which is what it is compared by, so that resuming it does not
// refuse a workflow that did not change.
func sameWorkflow(run *checkpoint.Run, wf *workflow.Workflow) bool {
	if run.WorkflowFiles == nil {
		return run.WorkflowSHA256 == wf.RawSHA256
	}
	return run.WorkflowSHA256 == wf.SHA256
}

// workflowChanges summarises what changed between the workflow run was
// stored with and wf: its settings, then the files it names whose content
// changed.
func workflowChanges(run *checkpoint.Run, wf *workflow.Workflow) []string {
	out := workflow.Changes(run.WorkflowYAML, wf.Raw)
	return append(out, workflow.FileChanges(run.WorkflowFiles, wf.Files)...)
}

// reopenFailedSteps gives each failed step of a failed run a fresh set of
// attempts: max_attempts is raised by what the step already used, so that
// the whole history still counts and nothing is erased. With budgetOnly it
// reopens only the steps a budget stopped, which keep their attempts and
// their session (a budget stop itself does not count as an attempt).
func reopenFailedSteps(tx *checkpoint.Tx, runID string, now time.Time, budgetOnly bool) error {
	steps, err := tx.Steps(runID)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if s.Status() != checkpoint.StepFailed {
			continue
		}
		if items, err := tx.Items(runID, s.ID); err != nil {
			return err
		} else if len(items) > 0 {
			continue // a map step: its dead items are reopened instead
		}
		last, err := attempt.LastCounted(tx, s.Unit())
		if err != nil {
			return err
		}
		byBudget := last != nil && last.Class == string(handoff.ClassBudget)
		if budgetOnly && !byBudget {
			continue
		}
		used, err := tx.CountCounted(runID, s.ID)
		if err != nil {
			return err
		}
		if !budgetOnly {
			s.MaxAttempts = used + s.MaxAttempts
			s.FreshSession = true
		}
		if err := tx.StepReopened(&s, now); err != nil {
			return err
		}
		detail := fmt.Sprintf("step %s reopened by `resume --retry-failed` with %d more attempts", s.ID, s.MaxAttempts-used)
		if budgetOnly {
			detail = fmt.Sprintf("step %s reopened by `resume --budget` after its budget stop", s.ID)
		}
		if a, err := tx.Approval(s.Unit()); err == nil {
			// A gate rejected or timed out asks again.
			if err := tx.AskAgain(s.Unit()); err != nil {
				return err
			}
			detail = fmt.Sprintf("gate %s reopened by `resume --retry-failed`: it asks again (it was %s by %s: %s)",
				s.ID, cmp.Or(a.Decision, "not answered before its timeout"), a.By, a.Comment)
		} else if !errors.Is(err, checkpoint.ErrNotFound) {
			return err
		}
		if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: "step_reopened", Detail: detail}); err != nil {
			return err
		}
	}
	return nil
}

func newStepRow(runID string, s *workflow.Step, now time.Time) checkpoint.Step {
	return checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: s.ID, Idx: s.Index, Agent: s.Agent,
		MaxAttempts: s.Retry.MaxAttempts, CostKnown: true}, now)
}

// newRunID returns a sortable, unique run id such as 20261122-150405-3fa2c1.
func newRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// relPath returns path relative to the project directory, for display and
// for the paths recorded in the store.
func (p *project) relPath(path string) string { return checkpoint.RelPath(p.dir, path) }

// UnsetAPIKeys names the agents, sorted, whose api_key_env names a variable
// set neither in env (cadence's environment) nor in the agent's own env:
// their requests would go out without a key, which the provider refuses
// only when the first attempt runs.
func UnsetAPIKeys(wf *workflow.Workflow, env []string) []string {
	var out []string
	for name, a := range wf.Agents {
		if a.APIKeyEnv == "" {
			continue
		}
		if v, ok := a.Env[a.APIKeyEnv]; ok && v != "" {
			continue
		}
		set := false
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], a.APIKeyEnv+"="); ok {
				set = v != ""
				break
			}
		}
		if !set {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// resolveInputs checks the inputs a run is given against those the
// workflow declares (SPEC §16.1) and returns their values, defaults
// applied, as a JSON object to store with the run; nil for a workflow
// without inputs. A missing, unknown or invalid input is a usage error
// naming it, before anything is written.
func resolveInputs(wf *workflow.Workflow, o Options) ([]byte, error) {
	if len(wf.Inputs) == 0 && len(o.Inputs) == 0 && o.InputsFile == nil {
		return nil, nil
	}
	values, err := workflow.ResolveInputs(wf.Inputs, o.Inputs, o.InputsFile)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	b, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("encode the run's inputs: %w", err)
	}
	return b, nil
}
