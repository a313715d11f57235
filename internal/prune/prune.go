// Package prune removes a project's finished runs (succeeded, failed,
// abandoned, cancelled) that ended before a cutoff, with every row they own in the
// state and every file they left under .cadence/: attempt outputs,
// handoffs, failed-handoff records, command outputs, worktrees, reports
// and the git branches of their map items. An unfinished run is never
// touched: it may be resumed. Only the runs of the project in the
// directory are seen (projectid): on a state several projects share, a
// prune never removes another project's runs.
//
// Before a run's rows go, an intent file (.cadence/pruning/RUN) is made
// durable; the rows then go in one transaction, then the files, then the
// intent. A crash anywhere leaves either the whole run (its rows
// committed: the intent is dropped and the run is pruned again like any
// other) or files of a run the state no longer has, named by their
// intent, which the next prune removes. A directory under .cadence/ that
// no intent names is never removed as a leftover: it may belong to a run
// of another state file (--state).
package prune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/gitwork"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// runDirs are the directories under .cadence/ that hold a directory per
// run, named by the run's id.
var runDirs = []string{"attempts", "failed_handoffs", "handoffs", "outputs", "worktrees"}

// runID is the shape of a run's id (20261127-115800-f3b360): only entries
// of that shape are ever removed as a run's files.
var runID = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// Options say what to prune.
type Options struct {
	Dir    string    // the project directory
	State  string    // --state, as for history.StateTarget
	Before time.Time // runs that ended before this are removed
	DryRun bool      // report what would go, remove nothing
	// Failpoint, for tests, kills the process at FailAfterCommit (see
	// SPEC §7's crash points).
	Failpoint *attempt.Failpoint
}

// FailAfterCommit is the crash point between a run's rows going and its
// files going.
const FailAfterCommit = "after-prune-commit"

// Run is one run removed (or, in a dry run, that would be).
type Run struct {
	ID         string               `json:"id"`
	Status     checkpoint.RunStatus `json:"status"`
	EndedAt    time.Time            `json:"ended_at"`
	Rows       int64                `json:"rows"`                  // rows deleted from the state (0 in a dry run)
	Files      int                  `json:"files"`                 // files under .cadence/
	Bytes      int64                `json:"bytes"`                 // their size
	Branches   []string             `json:"branches"`              // git branches and refs of its map items
	BranchNote string               `json:"branch_note,omitempty"` // why its branches were left, if they were
}

// Result is what a prune removed.
type Result struct {
	Runs []Run `json:"runs"`
	// Leftovers are files of runs the state no longer has (a prune cut
	// short after its commit), removed with them.
	Leftovers []string `json:"leftovers"`
	Bytes     int64    `json:"bytes"` // everything freed under .cadence/
	DryRun    bool     `json:"dry_run"`
}

// Prune removes the finished runs that ended before o.Before.
func Prune(ctx context.Context, o Options) (*Result, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	target := history.StateTarget(dir, o.State)
	res := &Result{Runs: []Run{}, Leftovers: []string{}, DryRun: o.DryRun}
	if _, err := os.Stat(target); !checkpoint.IsPostgresURL(target) && errors.Is(err, fs.ErrNotExist) {
		return res, nil // no state: no run to prune
	}
	store, err := projectid.Open(ctx, dir, target)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var old []checkpoint.Run
	known := map[string]bool{}
	err = store.View(ctx, func(tx *checkpoint.Tx) error {
		all, err := tx.Runs()
		if err != nil {
			return err
		}
		for _, r := range all {
			known[r.ID] = true
		}
		old, err = tx.FinishedRunsBefore(o.Before)
		return err
	})
	if err != nil {
		return nil, err
	}
	cdir := filepath.Join(dir, checkpoint.CadenceDir)
	repo := gitwork.Repo{Dir: dir}
	if err := finishCutShort(cdir, known, res); err != nil {
		return res, err
	}
	for _, r := range old {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		pr := Run{ID: r.ID, Status: r.Status(), EndedAt: r.UpdatedAt, Branches: []string{}}
		if r.FinishedAt != nil {
			pr.EndedAt = *r.FinishedAt
		}
		paths := runPaths(cdir, r.ID)
		for _, p := range paths {
			n, size := treeSize(p)
			pr.Files, pr.Bytes = pr.Files+n, pr.Bytes+size
		}
		if !o.DryRun {
			intent := filepath.Join(cdir, intentDir, r.ID)
			if err := checkpoint.WriteFileAtomic(intent, []byte(r.ID+"\n"), 0o644); err != nil {
				return res, fmt.Errorf("prune run %s: %w", r.ID, err)
			}
			var pruned checkpoint.Pruned
			err := store.Update(ctx, func(tx *checkpoint.Tx) error {
				var err error
				pruned, err = tx.DeleteRun(r.ID)
				return err
			})
			if err != nil {
				return res, fmt.Errorf("prune run %s: %w", r.ID, err)
			}
			for _, n := range pruned {
				pr.Rows += n
			}
			o.Failpoint.Hit(FailAfterCommit)
			_, werr := os.Stat(filepath.Join(cdir, "worktrees", r.ID))
			hadWorktrees := werr == nil
			if err := removeAll(paths); err != nil {
				return res, fmt.Errorf("prune run %s: its rows are gone, its files not all (the next prune removes them): %w", r.ID, err)
			}
			if hadWorktrees {
				if err := repo.PruneWorktrees(ctx); err != nil {
					pr.BranchNote = err.Error()
				}
			}
			deleted, err := repo.DeleteRunRefs(ctx, r.ID)
			switch {
			case errors.Is(err, gitwork.ErrNotRepo):
			case err != nil:
				pr.BranchNote = err.Error()
			default:
				pr.Branches = append(pr.Branches, deleted...)
			}
			if err := os.Remove(intent); err != nil {
				return res, fmt.Errorf("prune run %s: %w", r.ID, err)
			}
		}
		res.Runs = append(res.Runs, pr)
		res.Bytes += pr.Bytes
	}
	return res, nil
}

// intentDir holds, under .cadence/, one file per run being pruned.
const intentDir = "pruning"

// finishCutShort completes the prunes a crash cut short: a run named by an
// intent that the state no longer has lost its rows but maybe not its
// files, which go now; a run the state still has was not deleted, and its
// intent is dropped (it is pruned again if it is still old enough). In a
// dry run it only reports the files.
func finishCutShort(cdir string, known map[string]bool, res *Result) error {
	entries, err := os.ReadDir(filepath.Join(cdir, intentDir))
	if err != nil {
		return nil // none
	}
	for _, e := range entries {
		id := e.Name()
		if !runID.MatchString(id) {
			continue // a temporary file of an intent being written
		}
		intent := filepath.Join(cdir, intentDir, id)
		if !known[id] {
			for _, p := range runPaths(cdir, id) {
				if _, err := os.Lstat(p); err != nil {
					continue
				}
				_, size := treeSize(p)
				rel, _ := filepath.Rel(filepath.Dir(cdir), p)
				res.Leftovers = append(res.Leftovers, rel)
				res.Bytes += size
				if !res.DryRun {
					if err := os.RemoveAll(p); err != nil {
						return fmt.Errorf("remove %s: %w", p, err)
					}
				}
			}
		}
		if !res.DryRun {
			if err := os.Remove(intent); err != nil {
				return fmt.Errorf("remove %s: %w", intent, err)
			}
		}
	}
	return nil
}

// runPaths are the files and directories a run may have left under the
// .cadence directory cdir.
func runPaths(cdir, id string) []string {
	out := make([]string, 0, len(runDirs)+1)
	for _, base := range runDirs {
		out = append(out, filepath.Join(cdir, base, id))
	}
	return append(out, filepath.Join(cdir, "reports", id+".html"))
}

// treeSize counts the regular files under p (p itself when it is one) and
// their bytes; what cannot be read counts nothing.
func treeSize(p string) (files int, bytes int64) {
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				files++
				bytes += fi.Size()
			}
		}
		return nil
	})
	return files, bytes
}

// removeAll removes each path and what is under it; a path that is not
// there is no error.
func removeAll(paths []string) error {
	var errs []error
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
