package orchestrator

import (
	"context"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/gitwork"
	"github.com/cadence-dev/cadence/internal/history"
)

// CleanBranches deletes the git branches (cadence/RUN/STEP/KEY) and refs
// (refs/cadence/RUN/…) that the map steps of a finished run left in the
// project's repository, and returns the run's id and the branches
// deleted. The latest run is meant when runID is "". An unfinished run's
// branches hold work a resume still needs, and are refused; so are those
// of a failed run, whose map step `resume --retry-failed` may merge yet,
// unless force is set.
func CleanBranches(ctx context.Context, dir, state, runID string, force bool) (string, []string, error) {
	rep, err := history.Inspect(ctx, dir, state, runID, false)
	if err != nil {
		return "", nil, err
	}
	switch rep.Run.Status {
	case checkpoint.RunRunning, checkpoint.RunInterrupted:
		return rep.Run.ID, nil, usagef("run %s is unfinished: its items' branches hold work that `cadence resume` needs "+
			"(finish it, or abandon it with `cadence run --new`, first)", rep.Run.ID)
	case checkpoint.RunFailed:
		if !force {
			return rep.Run.ID, nil, usagef("run %s failed: `cadence resume --retry-failed` may still merge its items' branches; "+
				"delete them anyway with --force", rep.Run.ID)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return rep.Run.ID, nil, err
	}
	deleted, err := gitwork.Repo{Dir: abs}.DeleteRunRefs(ctx, rep.Run.ID)
	return rep.Run.ID, deleted, err
}
