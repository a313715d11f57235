package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/gitwork"
	"github.com/cadence-dev/cadence/internal/history"
)

type diffCmd struct {
	Step    string `arg:"" help:"The step (an inner step of a loop: LOOP/ITERATION/STEP, as inspect shows it)."`
	Dir     string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	Attempt int    `help:"The attempt whose change to print (default: the step's last)."`
	Item    string `placeholder:"KEY" help:"The item of a map step."`
	RunID   string `name:"run" help:"Run id (default: the latest run; list them with cadence runs)."`
	stateFlag
}

// Run prints what an attempt changed in its work tree as a git diff: from
// the snapshot recorded before the attempt to the one recorded after it
// (before its outcome was committed, and before any restore_on_retry). An
// attempt cut short by a crash has no snapshot after it: its change then
// ends at the snapshot of the next attempt (taken after any restore, so a
// restored attempt's change is lost), or at the work tree now for the last
// attempt. Which it is goes to stderr; the diff alone goes to stdout, for
// git apply.
func (c *diffCmd) Run(e *env) error {
	dir := findProject(c.Dir)
	runID, list, err := history.UnitAttempts(e.ctx, dir, c.State, c.RunID, c.Step, c.Item)
	switch {
	case errors.Is(err, history.ErrNoRuns):
		return noRuns(dir)
	case err != nil:
		return withCode(exitUsage, stateHint(err))
	}
	a := list[len(list)-1]
	var next *checkpoint.Attempt
	if c.Attempt != 0 {
		if c.Attempt < 1 || c.Attempt > len(list) {
			return withCode(exitUsage, fmt.Errorf("step %s has attempts 1 to %d in run %s, not %d", unitLabel(c.Step, c.Item), len(list), runID, c.Attempt))
		}
		a = list[c.Attempt-1]
	}
	if a.N < len(list) {
		next = &list[a.N]
	}
	work := dir
	if c.Item != "" {
		wt := filepath.Join(dir, checkpoint.CadenceDir, "worktrees", runID, c.Step, checkpoint.SafeName(c.Item))
		if _, err := os.Stat(wt); err == nil {
			work = wt
		}
	}
	repo := gitwork.Repo{Dir: work}
	if a.Snapshot == "" {
		return withCode(exitFailed, fmt.Errorf("attempt %d of %s in run %s has no snapshot of its work tree: "+
			"snapshots are taken only in a git repository with a commit (and by cadence versions that take them)", a.N, unitLabel(c.Step, c.Item), runID))
	}
	to, what := a.SnapshotAfter, "recorded after the attempt"
	switch {
	case to != "":
	case next != nil && next.Snapshot != "":
		to, what = next.Snapshot, fmt.Sprintf("recorded before attempt %d: attempt %d was cut short before its tree was recorded", next.N, a.N)
	default:
		now, _, err := repo.Snapshot(e.ctx, "", "cadence diff: the work tree now", checkpoint.CadenceDir)
		if err != nil {
			return fmt.Errorf("attempt %d of %s: record the work tree now: %w", a.N, unitLabel(c.Step, c.Item), err)
		}
		to, what = now, "the work tree now: the attempt's tree after it was not recorded"
	}
	d, err := repo.Diff(e.ctx, a.Snapshot, to)
	if err != nil {
		return fmt.Errorf("attempt %d of %s: %w (was the snapshot pruned from the repository?)", a.N, unitLabel(c.Step, c.Item), err)
	}
	fmt.Fprintf(e.stderr, "attempt %d of %s, run %s: %s..%s (%s)\n", a.N, unitLabel(c.Step, c.Item), runID, short(a.Snapshot), short(to), what)
	_, err = e.stdout.Write([]byte(d))
	return err
}

// label names a step or one of its items.
func unitLabel(step, item string) string {
	if item == "" {
		return step
	}
	return step + "[" + item + "]"
}

// attemptChanges lists the files an attempt changed in its work tree,
// between its snapshots (empty, not nil, for none); nil without both, or
// when git cannot tell (a snapshot pruned from the repository).
func attemptChanges(ctx context.Context, dir string, a history.AttemptReport) []string {
	if a.Snapshot == "" || a.SnapshotAfter == "" {
		return nil
	}
	files, err := gitwork.Repo{Dir: findProject(dir)}.ChangedBetween(ctx, a.Snapshot, a.SnapshotAfter)
	if err != nil {
		return nil
	}
	return append([]string{}, files...)
}
