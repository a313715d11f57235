package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/projectid"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// WorkOptions configure a worker: Options.Dir is its checkout of the
// project, Options.State the shared database (required); the other
// fields mean what they mean for a run.
type WorkOptions struct {
	Options
	// Once makes the worker return as soon as no run has an item left to
	// claim, instead of waiting for more work.
	Once bool
}

// Work claims the runnable map items of every running run in the shared
// state database and runs them in the project checkout opts.Dir, exactly
// as the run's own process does (SPEC section 13), until ctx ends (a
// signal: its items are interrupted, their leases released, and it
// returns StatusInterrupted) or, with Once, until there is nothing left
// to claim.
//
// Items of map steps that work in git worktrees are left to the run's own
// process, which merges their branches in its own repository.
func Work(ctx context.Context, o WorkOptions) (*Result, error) {
	if o.State == "" || !checkpoint.IsPostgresURL(o.State) {
		return nil, usagef("a worker needs a shared state database: --state postgres://… (or CADENCE_STATE); a SQLite file is one machine's and its run processes need no workers")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, usagef("project directory %s: %w", o.Dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, CadenceDir), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(dir, CadenceDir), err)
	}
	store, err := projectid.Open(ctx, dir, o.State)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	w := &worker{opts: o, dir: dir, store: store, id: newIdentity(), projects: map[string]*project{}, skipped: map[string]string{}}
	return w.loop(ctx)
}

// maxWorkerFailures is how many items in a row may stop on errors before
// a worker gives up.
const maxWorkerFailures = 3

type worker struct {
	opts  WorkOptions
	dir   string
	store *checkpoint.Store
	id    identity
	// projects holds, per run, the run's workflow as this checkout sees it.
	projects map[string]*project
	// skipped holds, per run, why this worker does not work on it, as
	// last logged: each reason is said once, not at every poll.
	skipped map[string]string
}

// slot is a map step of a run that this worker may claim items of, or a
// step of the run's graph that it may claim itself (step).
type slot struct {
	p       *project
	run     *checkpoint.Run
	ws      *workflow.Step
	outputs map[string]any
	inputs  map[string]any
	step    bool
	running int
}

// parallel is how many of the slot's claims this worker runs at once.
func (s *slot) parallel() int {
	if s.step {
		return 1
	}
	return s.ws.Map.MaxParallel
}

// claimOne claims the slot's step, or its next item; nil when there is
// nothing to claim now.
func (s *slot) claimOne(ctx context.Context) (*claimed, error) {
	in := &attempt.Instance{Run: s.run, Step: s.ws}
	if s.step {
		// A step that ended since the slot was found is nothing to claim.
		c, _, err := s.p.claimStep(ctx, in)
		return c, err
	}
	c, err := s.p.claim(ctx, in)
	var tooMany *checkpoint.TooManyDeadError
	if errors.As(err, &tooMany) {
		// More of the step's items are dead than it allows: the run's
		// process claims no more of them either, and fails the step
		// once those running have ended.
		return nil, nil
	}
	return c, err
}

// work runs what claimOne claimed. A cancel of the run (cadence cancel,
// from any process) stops it within watchCancelEvery, as a signal
// would: its attempt is recorded as interrupted, uncounted.
func (s *slot) work(ctx context.Context, c *claimed) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := watchCancel(ctx, s.p.store, s.run.ID, func() { cancel(errRunCancelled) })
	defer stop()
	in := &attempt.Instance{Run: s.run, Step: s.ws, Outputs: s.outputs, Inputs: s.inputs}
	if s.step {
		_, _, _, err := s.p.workStep(ctx, in, c)
		return err
	}
	return s.p.workItem(ctx, in, c)
}

func (w *worker) loop(ctx context.Context) (*Result, error) {
	type done struct {
		s   *slot
		err error
	}
	finished := make(chan done)
	running := 0
	slots := map[string]*slot{}
	var firstErr error
	// failures counts items in a row that ended on an error of the
	// machine or the database rather than an outcome: one such item is
	// logged and left to be claimed again (its lease is released), but a
	// worker that fails every item stops.
	failures := 0
	wake := ctx.Done()
	for {
		claimedAny := false
		if ctx.Err() == nil && firstErr == nil {
			open, err := w.openSlots(ctx, slots)
			if err != nil {
				w.log().Warn("could not read the runs to work on; trying again", "err", err)
			}
			for _, s := range open {
				for s.running < s.parallel() {
					c, err := s.claimOne(ctx)
					if err != nil {
						w.log().Warn("could not claim; trying again", "step", s.ws.ID, "err", err)
						break
					}
					if c == nil {
						break
					}
					claimedAny = true
					s.running++
					running++
					go func() { finished <- done{s, s.work(ctx, c)} }()
				}
			}
		}
		if running == 0 && (ctx.Err() != nil || firstErr != nil || w.opts.Once && !claimedAny) {
			break
		}
		select {
		case d := <-finished:
			d.s.running--
			running--
			switch {
			case d.err == nil || errors.Is(d.err, attempt.ErrInterrupted):
				failures = 0
			case failures+1 < maxWorkerFailures:
				failures++
				w.log().Warn("an item stopped on an error; it is left for another claim", "step", d.s.ws.ID, "err", d.err)
			case firstErr == nil:
				firstErr = fmt.Errorf("%d items in a row stopped on errors, the last: %w", maxWorkerFailures, d.err)
			}
		case <-wake:
			wake = nil
		case <-time.After(w.poll()):
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if ctx.Err() != nil {
		return &Result{Status: StatusInterrupted, Message: "stopped; the items it held were released for other processes"}, nil
	}
	return &Result{Status: StatusSucceeded}, nil
}

func (w *worker) log() *slog.Logger {
	if w.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.opts.Logger
}

func (w *worker) poll() time.Duration {
	if w.opts.Poll > 0 {
		return w.opts.Poll
	}
	return DefaultPoll
}

// openSlots returns the map steps, of the running runs, whose items are
// frozen and not all ended: the ones this worker may claim from. A run's
// slots are kept across calls, with the items running in them.
func (w *worker) openSlots(ctx context.Context, slots map[string]*slot) ([]*slot, error) {
	var runs []checkpoint.Run
	if err := w.store.View(ctx, func(tx *checkpoint.Tx) error {
		all, err := tx.UnfinishedRuns()
		for _, r := range all {
			if r.Status() == checkpoint.RunRunning {
				runs = append(runs, r)
			}
		}
		return err
	}); err != nil {
		return nil, err
	}
	var open []*slot
	for i := range runs {
		run := &runs[i]
		p, err := w.project(ctx, run)
		if err != nil {
			if w.skipped[run.ID] != err.Error() {
				w.skipped[run.ID] = err.Error()
				w.log().Warn("skipping run: its items are left to processes whose checkout has its workflow", "run", run.ID, "reason", err)
			}
			continue
		}
		if _, ok := w.skipped[run.ID]; ok {
			delete(w.skipped, run.ID)
			w.log().Warn("working on run: this checkout now has its workflow", "run", run.ID)
		}
		rows, err := stepRows(ctx, p.store, run.ID)
		if err != nil {
			return nil, err
		}
		for _, ws := range p.wf.Steps {
			st := rows[ws.ID]
			items := ws.Map != nil && ws.Map.Workspace != workflow.WorkspaceWorktree && st != nil && st.Status() == checkpoint.StepRunning
			step := runnableStep(ws, rows, p.wf)
			if !items && !step {
				continue
			}
			key := run.ID + "/" + ws.ID
			s := slots[key]
			if s == nil {
				// The outputs it reads are those of the steps ended now:
				// a step's slot opens once the steps it needs have ended.
				outputs, err := outputsOf(ctx, p.store, run.ID)
				if err != nil {
					return nil, err
				}
				inputs, err := inputsOf(run)
				if err != nil {
					return nil, err
				}
				s = &slot{p: p, run: run, ws: ws, outputs: outputs, inputs: inputs, step: step}
				slots[key] = s
			}
			open = append(open, s)
		}
	}
	return open, nil
}

// project returns the project of a run as this checkout has it: only a
// checkout whose workflow, and every file the workflow names, hash to
// what the run stored may work on the run's items (G8). A checkout of
// another project sharing the database, or of another version of this
// one, would run its own agents and prompts for the run and have its
// answers judged by its own schemas: its error says why it may not.
func (w *worker) project(ctx context.Context, run *checkpoint.Run) (*project, error) {
	if p, ok := w.projects[run.ID]; ok && sameWorkflow(run, p.wf) {
		return p, nil
	}
	delete(w.projects, run.ID)
	wf, err := workflow.Load(w.dir, run.WorkflowPath)
	if err != nil {
		return nil, fmt.Errorf("this checkout's workflow %s does not load: %w", run.WorkflowPath, err)
	}
	if !sameWorkflow(run, wf) {
		why := "the files it names differ"
		if changes := workflowChanges(run, wf); len(changes) > 0 {
			const most = 5
			if len(changes) > most {
				changes = append(changes[:most:most], fmt.Sprintf("and %d more", len(changes)-most))
			}
			why = strings.Join(changes, "; ")
		}
		return nil, fmt.Errorf("the run's workflow (sha256 %.12s) is not this checkout's %s (sha256 %.12s): %s",
			run.WorkflowSHA256, wf.Path, wf.SHA256, why)
	}
	p := &project{opts: w.opts.Options, dir: w.dir, wf: wf, store: w.store, leases: leases{id: w.id},
		clock: w.opts.Clock, rnd: w.opts.Rand, sink: w.opts.Sink, log: w.opts.Logger, env: w.opts.Env}
	p.setDefaults()
	w.projects[run.ID] = p
	return p, nil
}

// outputsOf returns the outputs of a run's succeeded steps, as the run's
// own process gives them to the templates of later steps.
func outputsOf(ctx context.Context, store *checkpoint.Store, runID string) (map[string]any, error) {
	outputs := map[string]any{}
	err := store.View(ctx, func(tx *checkpoint.Tx) error {
		steps, err := tx.Steps(runID)
		if err != nil {
			return err
		}
		for _, s := range steps {
			if s.Status() != checkpoint.StepSucceeded {
				continue
			}
			out, err := attempt.EnvelopeData(s.HandoffJSON)
			if err != nil {
				return fmt.Errorf("step %s: stored handoff: %w", s.ID, err)
			}
			outputs[s.ID] = map[string]any{"Output": out}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the outputs of run %s: %w", runID, err)
	}
	return outputs, nil
}

// stepRows reads the rows of a run's steps, by id.
func stepRows(ctx context.Context, store *checkpoint.Store, runID string) (map[string]*checkpoint.Step, error) {
	out := map[string]*checkpoint.Step{}
	err := store.View(ctx, func(tx *checkpoint.Tx) error {
		steps, err := tx.Steps(runID)
		for i := range steps {
			out[steps[i].ID] = &steps[i]
		}
		return err
	})
	return out, err
}
