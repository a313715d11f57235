package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// chooseWorkflow sets o.WorkflowPath, for a resume that names none, to the
// file of the run it is to continue, so that the run is compared with,
// and continued under, the workflow it was started from (SPEC §18): the
// run o.RunID (or the dead-letter retry's run) when one is named, else the
// project's only unfinished run. Several unfinished runs, of different
// workflows, make the choice ambiguous: it refuses, listing them. With no
// unfinished run, a failed one to retry is the latest run's.
//
// It reads the state without the lock; the resume checks what it chose
// again under the lock. A state it cannot read here (one an older cadence
// wrote, say, which only a resume may upgrade) leaves the default
// workflow file, as before.
func chooseWorkflow(ctx context.Context, o *Options) error {
	if o.WorkflowPath != "" {
		return nil
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return usagef("project directory %s: %w", o.Dir, err)
	}
	named := o.RunID
	if o.RetryDead != nil && o.RetryDead.RunID != "" {
		named = o.RetryDead.RunID
	}
	// Only the runs the choice can fall on are read, through indexes:
	// not the project's whole history of runs with their workflows.
	c, err := history.ResumeCandidates(ctx, dir, o.State, named)
	if err != nil {
		return nil
	}
	var target *checkpoint.Run
	switch {
	case named != "":
		if c.Named == nil {
			return usagef("no run %s in %s (see: cadence runs %s)", named, dir, dir)
		}
		target = c.Named
	case len(c.Unfinished) == 1:
		target = &c.Unfinished[0]
	case len(c.Unfinished) > 1:
		return ambiguousRuns(c.Unfinished, "resume")
	case o.RetryFailed || o.BudgetUSD > 0:
		target = c.Latest // the failed run to retry is the latest
	}
	if target != nil {
		o.WorkflowPath = target.WorkflowPath
		if !filepath.IsAbs(o.WorkflowPath) {
			o.WorkflowPath = filepath.Join(dir, filepath.FromSlash(o.WorkflowPath))
		}
	}
	return nil
}

// ambiguousRuns refuses a command that did not say which of several
// unfinished runs it means, naming each with how to name it.
func ambiguousRuns(runs []checkpoint.Run, command string) error {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "\n  %s  %s  started %s: --run %s or --workflow %s", r.ID, r.Status(), r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), r.ID, r.WorkflowPath)
	}
	return usagef("%d runs are unfinished in this project; say which to %s:%s", len(runs), command, b.String())
}

// preloading is a load of the project's default workflow started before
// a resume knows which workflow its run used: the choice reads the state,
// and most projects run one workflow, so the choice runs beside the load
// instead of before it.
type preloading struct {
	path string // as given to workflow.Load: the default workflow's, absolute
	done chan struct{}
	wf   *workflow.Workflow
	err  error
}

// preloadDefault starts the load of o's default workflow, as open would
// load it once chooseWorkflow names it; nil when o names a workflow
// already (--workflow), which open loads as before.
func preloadDefault(o Options) *preloading {
	if o.WorkflowPath != "" {
		return nil
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil // chooseWorkflow reports it
	}
	pl := &preloading{path: filepath.Join(dir, filepath.FromSlash(workflow.DefaultPath)), done: make(chan struct{})}
	go func() {
		defer close(pl.done)
		pl.wf, pl.err = workflow.Load(dir, pl.path)
	}()
	return pl
}

// loadOf returns the preloaded result for open when path, the workflow
// chosen, is the one loaded, the same call with the same arguments; nil
// otherwise, and the load, left to end by itself, is not used.
func (pl *preloading) loadOf(path string) func() (*workflow.Workflow, error) {
	if pl == nil || path != pl.path {
		return nil
	}
	return func() (*workflow.Workflow, error) {
		<-pl.done
		return pl.wf, pl.err
	}
}
