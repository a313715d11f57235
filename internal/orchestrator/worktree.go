package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/gitwork"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// repo is the git repository of the project, for map steps that work in
// worktrees.
func (p *project) repo() gitwork.Repo { return gitwork.Repo{Dir: p.dir, Env: p.env} }

// checkWorktrees refuses, before anything runs, a workflow whose map steps
// work in git worktrees when the project is not in a git repository with a
// commit to branch from.
func (p *project) checkWorktrees(ctx context.Context) error {
	for _, ws := range p.wf.Steps {
		if ws.Map == nil || ws.Map.Workspace != workflow.WorkspaceWorktree {
			continue
		}
		if _, err := p.repo().Head(ctx); err != nil {
			return usagef("step %s has workspace: worktree, but %s is not in a git repository with a commit to branch from "+
				"(run git init and commit, or use workspace: shared)", ws.ID, p.dir)
		}
		return nil
	}
	return nil
}

// worktreeOf is where an item's worktree lives and its branch's name, both
// from the item's file-safe key: cadence/RUN/STEP/KEY.
func (p *project) worktreeOf(in *attempt.Instance) (path, branch string) {
	runID, ws, it := in.Run.ID, in.Step, in.Item
	return filepath.Join(p.dir, CadenceDir, "worktrees", runID, ws.ID, it.Dir),
		"cadence/" + runID + "/" + ws.ID + "/" + it.Dir
}

// placeItem sets the directory an item's agent and checks run in.
func (p *project) placeItem(in *attempt.Instance) {
	if in.Step.Map.Workspace == workflow.WorkspaceWorktree {
		in.Item.Workdir, _ = p.worktreeOf(in)
	}
}

// itemsBase makes the commit a map step's items branch from, as the step
// begins: a snapshot of the project's work tree, so that the items see
// what earlier steps changed and did not commit (gitwork.Snapshot, kept by
// the ref refs/cadence/RUN/STEP/base). It is recorded with the step, and a
// resume branches from it again. from says what it is, for the line that
// announces the items.
//
// A step that merges its items' branches back into the current branch
// refuses a work tree with uncommitted changes: the merges would carry
// those changes as commits onto a branch whose work tree still holds them
// uncommitted, and git refuses to merge over them.
func (p *project) itemsBase(ctx context.Context, in *attempt.Instance) (base, from string, err error) {
	runID, ws := in.Run.ID, in.Step
	repo := p.repo()
	snap, dirty, err := repo.Snapshot(ctx, "refs/cadence/"+runID+"/"+ws.ID+"/base",
		fmt.Sprintf("cadence: the work tree as step %s of run %s began", ws.ID, runID), CadenceDir)
	if err != nil {
		return "", "", itemsErrorf("step %s works in git worktrees: %v", ws.ID, err)
	}
	if !dirty {
		return snap, ", from HEAD " + shortCommit(snap), nil
	}
	if ws.Map.Merge {
		files, _ := repo.Changed(ctx, snap)
		return "", "", itemsErrorf("step %s merges its items' branches into the current branch (merge: true), "+
			"but the work tree has uncommitted changes (%s): commit them first, or set merge: false to keep the items' work on their branches only",
			ws.ID, listSome(files, 5))
	}
	return snap, ", from the work tree with its uncommitted changes (commit " + shortCommit(snap) + ")", nil
}

func shortCommit(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}

// listSome lists up to n names and says how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// baseCommit returns the commit a map step's items branch from.
func (p *project) baseCommit(ctx context.Context, runID, stepID string) (string, error) {
	st, err := stepRow(ctx, p.store, runID, stepID)
	if err != nil {
		return "", err
	}
	if st.BaseCommit == "" {
		return "", fmt.Errorf("step %s works in git worktrees but recorded no commit to branch from", stepID)
	}
	return st.BaseCommit, nil
}

// finishWorktree commits what a succeeded item's agent changed in its
// worktree on the item's branch and removes the worktree; the branch stays.
// It runs after the success is committed, and again on a resume while the
// worktree is still there, so a crash at any point loses nothing.
func (p *project) finishWorktree(ctx context.Context, in *attempt.Instance) error {
	runID, ws, it := in.Run.ID, in.Step, in.Item
	if ws.Map.Workspace != workflow.WorkspaceWorktree {
		return nil
	}
	path, branch := p.worktreeOf(in)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	wctx := context.WithoutCancel(ctx)
	repo := p.repo()
	if _, err := repo.CommitAll(wctx, path, fmt.Sprintf("cadence: run %s, step %s, item %s", runID, ws.ID, it.Key)); err != nil {
		return fmt.Errorf("commit the work of %s on %s: %w", in.Label(), branch, err)
	}
	if err := repo.Remove(wctx, path); err != nil {
		return fmt.Errorf("remove the worktree of %s: %w", in.Label(), err)
	}
	return nil
}

// mergeItems merges the branch of every succeeded item that is not dead
// into the project's current branch, one at a time in key order. A conflict
// aborts that merge and sends the item to the dead-letter queue with class
// merge_conflict; it returns how many did. Merging an already merged branch
// changes nothing, so a resume merges again safely.
func (p *project) mergeItems(ctx context.Context, in *attempt.Instance, items []*attempt.Item) (int, error) {
	runID, ws := in.Run.ID, in.Step
	state, err := itemStates(ctx, p.store, runID, ws.ID)
	if err != nil {
		return 0, err
	}
	deadKeys := map[string]bool{}
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		list, err := tx.DeadLetters(runID)
		for _, d := range list {
			if d.StepID == ws.ID {
				deadKeys[d.ItemKey] = true
			}
		}
		return err
	}); err != nil {
		return 0, err
	}
	sorted := append([]*attempt.Item(nil), items...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	conflicts := 0
	repo := p.repo()
	wctx := context.WithoutCancel(ctx)
	for _, it := range sorted {
		if state[it.Key] != checkpoint.StepSucceeded || deadKeys[it.Key] {
			continue
		}
		_, branch := p.worktreeOf(in.WithItem(it))
		res, err := repo.Merge(wctx, branch, fmt.Sprintf("cadence: merge item %s of step %s (run %s)", it.Key, ws.ID, runID))
		if err != nil {
			return conflicts, fmt.Errorf("merge the branch of %s: %w", in.WithItem(it).Label(), err)
		}
		if res == gitwork.Conflict {
			msg := fmt.Sprintf("merging branch %s conflicts", branch)
			if files := repo.Conflicts(wctx, branch); len(files) > 0 {
				msg += " on " + strings.Join(files, ", ")
			}
			msg += "; the merge was aborted and the branch kept"
			if err := p.deadLetter(ctx, in.WithItem(it), checkpoint.DeadMergeConflict, msg); err != nil {
				return conflicts, err
			}
			conflicts++
		}
	}
	return conflicts, nil
}
