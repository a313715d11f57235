package attempt

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/gitwork"
)

// Work tree snapshots (SPEC §19). Before each attempt the instance's work
// directory (the project, or its item's worktree) is recorded as a commit
// object: tracked and untracked files, ignored ones and .cadence left out,
// through a temporary index, so the user's index, HEAD and branch are
// untouched (gitwork.Snapshot). Its id goes on the attempt's row, which is
// committed after it; after the attempt, before its outcome is committed,
// the tree is recorded again (snapshot_after). Both are kept by refs under
// refs/cadence/RUN/_snapshots/, which `cadence prune` deletes with the
// run's other refs.
//
// With restore_on_retry the tree is put back to the last attempt's
// snapshot before the next attempt (gitwork.Restore) and the next prompt
// says so. A kill between the restore and the next attempt's row finds the
// same last attempt on resume, and restores again: a second restore to
// the same snapshot changes nothing.
//
// A work directory that is not in a git repository with a commit has no
// snapshots: its attempts record none, restore_on_retry does nothing there,
// and `cadence diff` says why it has nothing to show.

// snapshotExclude is what snapshots leave out besides ignored files:
// cadence's own directory.
var snapshotExclude = []string{checkpoint.CadenceDir}

// treeRepo is the git repository of the instance's work directory.
func treeRepo(r *Runner, in *Instance) gitwork.Repo {
	return gitwork.Repo{Dir: r.WorkDir(in), Env: r.Env}
}

// prepareTree runs before an attempt's row is committed: it restores the
// work tree to the last attempt's snapshot when the step says so, and
// records the tree. It returns the snapshot ("" when the work directory
// is not in a git repository) and the note the prompt gets about a
// restore ("" when none happened). A restore that fails is an error: the
// next attempt does not run on a tree the workflow asked to put back.
func prepareTree(ctx context.Context, r *Runner, in *Instance, last *checkpoint.Attempt) (snap, note string, err error) {
	repo := treeRepo(r, in)
	if in.Step.RestoreOnRetry && last != nil && last.Snapshot != "" {
		changed, err := repo.Restore(ctx, last.Snapshot, snapshotExclude...)
		if err != nil {
			return "", "", fmt.Errorf("restore_on_retry of %s: %w", in.Label(), err)
		}
		note = restoreNote(last.N, changed)
		r.Failpoint.Hit(FailAfterRestore)
	}
	snap, err = snapshotTree(ctx, r, in, "before an attempt")
	if err != nil && in.Step.RestoreOnRetry {
		return "", "", fmt.Errorf("restore_on_retry of %s needs a snapshot of the work tree: %w", in.Label(), err)
	}
	return snap, note, nil
}

// atMaxConcurrent reports whether the agent entry already runs its
// max_concurrent attempts, read before the work tree is restored and
// recorded: an instance polling for a free slot (every maxConcurrentPoll)
// would otherwise pay a snapshot at every poll. beginAttempt decides
// again, in its transaction; this read only saves the work.
func atMaxConcurrent(ctx context.Context, r *Runner, agentName string) (bool, error) {
	ag := r.Workflow.Agents[agentName]
	if ag == nil || ag.MaxConcurrent <= 0 {
		return false, nil
	}
	var n int
	err := r.Store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		n, err = tx.RunningOfAgent(agentName)
		return err
	})
	return n >= ag.MaxConcurrent, err
}

// snapshotTree records the instance's work tree; "" and no error when the
// work directory is not in a git repository with a commit. Any other
// failure is logged and returned.
func snapshotTree(ctx context.Context, r *Runner, in *Instance, when string) (string, error) {
	snap, _, err := treeRepo(r, in).Snapshot(ctx, "", fmt.Sprintf("cadence: the work tree of %s %s", in.Label(), when), snapshotExclude...)
	switch {
	case errors.Is(err, gitwork.ErrNotRepo):
		r.Log.Debug("work tree not snapshotted: not in a git repository with a commit", "dir", r.WorkDir(in))
		return "", nil
	case err != nil:
		r.Log.Warn("work tree not snapshotted", "step", in.Label(), "err", err)
		return "", err
	}
	return snap, nil
}

// keepSnapshots makes the attempt's snapshots reachable by refs, so that
// git's garbage collection keeps them for cadence diff until the run is
// pruned. A ref that cannot be written is logged: the ids on the row still
// name the snapshots while git keeps unreachable objects.
func keepSnapshots(ctx context.Context, r *Runner, in *Instance, a *checkpoint.Attempt) {
	repo := treeRepo(r, in)
	for name, commit := range map[string]string{"before": a.Snapshot, "after": a.SnapshotAfter} {
		if commit == "" {
			continue
		}
		if err := repo.Keep(ctx, SnapshotRef(in.Unit(), a.N, name), commit); err != nil {
			r.Log.Warn("snapshot ref not written", "step", in.Label(), "attempt", a.N, "err", err)
		}
	}
}

// SnapshotRef is the ref that keeps snapshot which ("before" or "after")
// of attempt n of unit u: refs/cadence/RUN/_snapshots/STEPPATH[/ITEM]/N/which.
// No step id starts with _, so it never meets the refs of a map step
// (refs/cadence/RUN/STEP/base).
func SnapshotRef(u checkpoint.Unit, n int, which string) string {
	p := path.Join("refs/cadence", u.RunID, "_snapshots", u.StepID)
	if u.Item != "" {
		p = path.Join(p, checkpoint.SafeName(u.Item))
	}
	return path.Join(p, strconv.Itoa(n), which)
}

// restoreNote is what the prompt after a restore says: the tree is as it
// was before attempt n, and which files were put back.
func restoreNote(n int, changed []string) string {
	if len(changed) == 0 {
		return fmt.Sprintf("\n\nNote: the work tree is as it was before attempt %d (restore_on_retry); that attempt left no change to undo.", n)
	}
	const most = 20
	list := changed
	more := ""
	if len(list) > most {
		list, more = list[:most], fmt.Sprintf(" and %d more", len(changed)-most)
	}
	return fmt.Sprintf("\n\nNote: the work tree was put back as it was before attempt %d (restore_on_retry): "+
		"the changes that attempt made are gone. Files restored or removed: %s%s.", n, strings.Join(list, ", "), more)
}
