package gitwork

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// newRepo makes a repository with one commit of a.txt, and no identity of
// its own (git's global config is kept away), as on a fresh machine.
func newRepo(t *testing.T) Repo {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	r := Repo{Dir: dir, Env: env}
	git(t, r, dir, "init", "--quiet", "--initial-branch=main")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	git(t, r, dir, "add", "a.txt")
	git(t, r, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "first")
	return r
}

func git(t *testing.T, r Repo, dir string, args ...string) string {
	t.Helper()
	out, err := r.run(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHeadOutsideARepository(t *testing.T) {
	if _, err := (Repo{Dir: t.TempDir()}).Head(context.Background()); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Head of a plain directory: %v, want ErrNotRepo", err)
	}
	r := newRepo(t)
	git(t, r, r.Dir, "checkout", "--quiet", "--orphan", "empty")
	git(t, r, r.Dir, "rm", "--quiet", "-rf", ".")
	if _, err := r.Head(context.Background()); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Head of a branch with no commit: %v, want ErrNotRepo", err)
	}
}

// An item's worktree: created on its branch from the base, reused as it is
// on a second call (a resume), its changes committed on the branch, removed
// with the branch kept, and the branch merged back.
func TestWorktreeLifecycle(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	base, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(r.Dir, ".cadence", "worktrees", "run", "fix", "a")
	branch := "cadence/run/fix/a"
	if err := r.Worktree(ctx, wt, branch, base); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "new.txt"), "made by the agent\n")
	if err := r.Worktree(ctx, wt, branch, base); err != nil {
		t.Fatalf("reusing the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wt, "new.txt")); err != nil {
		t.Fatalf("reusing the worktree lost the agent's file: %v", err)
	}
	changed, err := r.CommitAll(ctx, wt, "cadence: item a")
	if err != nil || !changed {
		t.Fatalf("CommitAll = %v, %v; want a commit", changed, err)
	}
	if changed, err := r.CommitAll(ctx, wt, "again"); err != nil || changed {
		t.Errorf("CommitAll with nothing to commit = %v, %v", changed, err)
	}
	if err := r.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, wt); err != nil {
		t.Errorf("removing a removed worktree: %v", err)
	}
	if !r.branchExists(ctx, branch) {
		t.Fatal("the branch went with its worktree")
	}
	// Checked out again from the kept branch, with its commit.
	if err := r.Worktree(ctx, wt, branch, base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt, "new.txt")); err != nil {
		t.Errorf("the branch's commit is not in its new worktree: %v", err)
	}
	if err := r.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second merge finds it merged already
		res, err := r.Merge(ctx, branch, "merge item a")
		if err != nil || res != Merged {
			t.Fatalf("merge #%d = %v, %v", i+1, res, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "new.txt")); err != nil || string(b) != "made by the agent\n" {
		t.Errorf("after the merge new.txt = %q, %v", b, err)
	}
	if log := git(t, r, r.Dir, "log", "--oneline"); strings.Count(log, "\n")+1 != 3 {
		t.Errorf("history after one merge:\n%s\nwant first, the item's commit and one merge commit", log)
	}
}

// Two items that change the same line: the first merges, the second
// conflicts, and its merge is aborted with the work tree as before.
func TestMergeConflictIsAborted(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	base, _ := r.Head(ctx)
	for _, k := range []string{"a", "b"} {
		wt := filepath.Join(t.TempDir(), k)
		if err := r.Worktree(ctx, wt, "cadence/r/s/"+k, base); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "a.txt"), "one\nchanged by "+k+"\nthree\n")
		if _, err := r.CommitAll(ctx, wt, "item "+k); err != nil {
			t.Fatal(err)
		}
		if err := r.Remove(ctx, wt); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := r.Merge(ctx, "cadence/r/s/a", "merge a"); err != nil || res != Merged {
		t.Fatalf("merge a = %v, %v", res, err)
	}
	res, err := r.Merge(ctx, "cadence/r/s/b", "merge b")
	if err != nil || res != Conflict {
		t.Fatalf("merge b = %v, %v; want Conflict", res, err)
	}
	if st := git(t, r, r.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("after the aborted merge the work tree is not clean:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, ".git", "MERGE_HEAD")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MERGE_HEAD left behind: %v", err)
	}
	if files := r.Conflicts(ctx, "cadence/r/s/b"); len(files) != 1 || files[0] != "a.txt" {
		t.Errorf("Conflicts = %q, want [a.txt]", files)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir, "a.txt")); !strings.Contains(string(b), "changed by a") {
		t.Errorf("a.txt after the aborted merge: %q", b)
	}
}

func TestGitIsRunWithoutAShell(t *testing.T) {
	// A branch name with shell metacharacters is one argv word to git,
	// which refuses it as a ref name: nothing is expanded.
	ctx := context.Background()
	r := newRepo(t)
	base, _ := r.Head(ctx)
	marker := filepath.Join(t.TempDir(), "pwned")
	err := r.Worktree(ctx, filepath.Join(t.TempDir(), "w"), "x;touch "+marker, base)
	if err == nil {
		t.Fatal("an invalid branch name was accepted")
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a shell ran the branch name")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal(err)
	}
}

// A snapshot is a commit of the work tree: tracked changes, staged or
// not, deletions and untracked files that are not ignored, on top of HEAD;
// the excluded directory as HEAD has it. The user's index, HEAD and branch
// are untouched, and a clean tree gives HEAD itself.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "b.txt"), "bee\n")
	write(t, filepath.Join(r.Dir, ".gitignore"), "*.log\n")
	git(t, r, r.Dir, "add", "b.txt", ".gitignore")
	git(t, r, r.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "second")
	head := git(t, r, r.Dir, "rev-parse", "HEAD")

	same, dirty, err := r.Snapshot(ctx, "", "snap")
	if err != nil || same != head || dirty {
		t.Fatalf("Snapshot of a clean tree = %s, %v, %v; want HEAD %s, false", same, dirty, err, head)
	}

	write(t, filepath.Join(r.Dir, "a.txt"), "changed, unstaged\n")
	write(t, filepath.Join(r.Dir, "staged.txt"), "staged\n")
	git(t, r, r.Dir, "add", "staged.txt")
	write(t, filepath.Join(r.Dir, "new.txt"), "untracked\n")
	write(t, filepath.Join(r.Dir, "noise.log"), "ignored\n")
	if err := os.Remove(filepath.Join(r.Dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, ".cadence"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, ".cadence", "state.db"), "state\n")
	statusBefore := git(t, r, r.Dir, "status", "--porcelain")
	indexBefore := git(t, r, r.Dir, "ls-files", "--stage")

	snap, dirty, err := r.Snapshot(ctx, "refs/cadence/test/base", "cadence: snapshot", ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	if !dirty || snap == head {
		t.Fatalf("Snapshot of a dirty tree = %s, dirty %v; want a new commit", snap, dirty)
	}
	if parent := git(t, r, r.Dir, "rev-parse", snap+"^"); parent != head {
		t.Errorf("snapshot's parent %s, want HEAD %s", parent, head)
	}
	files := git(t, r, r.Dir, "ls-tree", "-r", "--name-only", snap)
	for _, want := range []string{"a.txt", "staged.txt", "new.txt", ".gitignore"} {
		if !strings.Contains("\n"+files+"\n", "\n"+want+"\n") {
			t.Errorf("snapshot lacks %s: %q", want, files)
		}
	}
	for _, absent := range []string{"b.txt", "noise.log", ".cadence/state.db"} {
		if strings.Contains("\n"+files+"\n", "\n"+absent+"\n") {
			t.Errorf("snapshot has %s: %q", absent, files)
		}
	}
	if got := git(t, r, r.Dir, "show", snap+":a.txt"); got != "changed, unstaged" {
		t.Errorf("a.txt in the snapshot = %q", got)
	}
	if ref := git(t, r, r.Dir, "rev-parse", "refs/cadence/test/base"); ref != snap {
		t.Errorf("ref = %s, want %s", ref, snap)
	}
	if got := git(t, r, r.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if got := git(t, r, r.Dir, "status", "--porcelain"); got != statusBefore {
		t.Errorf("status changed:\n%s\nwant\n%s", got, statusBefore)
	}
	if got := git(t, r, r.Dir, "ls-files", "--stage"); got != indexBefore {
		t.Errorf("index changed:\n%s\nwant\n%s", got, indexBefore)
	}
	if branches := git(t, r, r.Dir, "branch", "--list"); branches != "* main" {
		t.Errorf("branches: %q", branches)
	}
}

// DeleteRunRefs deletes one run's branches and refs, and nothing of
// another run's; a branch checked out in a worktree is kept and named.
func TestDeleteRunRefs(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	for _, b := range []string{"cadence/R1/fix/a", "cadence/R1/fix/b", "cadence/R10/fix/a", "cadence/R2/fix/a"} {
		git(t, r, r.Dir, "branch", b)
	}
	git(t, r, r.Dir, "update-ref", "refs/cadence/R1/fix/base", "HEAD")
	git(t, r, r.Dir, "update-ref", "refs/cadence/R2/fix/base", "HEAD")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, r, r.Dir, "worktree", "add", "--quiet", wt, "cadence/R1/fix/b")

	deleted, err := r.DeleteRunRefs(ctx, "R1")
	if err == nil || !strings.Contains(err.Error(), "cadence/R1/fix/b") {
		t.Errorf("DeleteRunRefs: %v, want an error naming the checked-out branch", err)
	}
	if strings.Join(deleted, " ") != "cadence/R1/fix/a" {
		t.Errorf("deleted %v, want [cadence/R1/fix/a]", deleted)
	}
	got := git(t, r, r.Dir, "for-each-ref", "--format=%(refname)", "refs/heads/cadence/", "refs/cadence/")
	want := "refs/cadence/R2/fix/base\nrefs/heads/cadence/R1/fix/b\nrefs/heads/cadence/R10/fix/a\nrefs/heads/cadence/R2/fix/a"
	if got != want {
		t.Errorf("refs left:\n%s\nwant\n%s", got, want)
	}
	if _, err := (Repo{Dir: t.TempDir()}).DeleteRunRefs(ctx, "R1"); !errors.Is(err, ErrNotRepo) {
		t.Errorf("outside a repository: %v, want ErrNotRepo", err)
	}
}

// Items of a map step add and remove their worktrees at the same time:
// none may fail because another's `git worktree prune` removed the record
// of a worktree still being added.
func TestConcurrentWorktrees(t *testing.T) {
	r := newRepo(t)
	base := git(t, r, r.Dir, "rev-parse", "HEAD")
	ctx := context.Background()
	const n = 8
	for round := range 5 {
		errs := make(chan error, n)
		for i := range n {
			go func() {
				path := filepath.Join(r.Dir, ".cadence", "worktrees", "run", strconv.Itoa(round), strconv.Itoa(i))
				branch := "cadence/run/" + strconv.Itoa(round) + "/" + strconv.Itoa(i)
				if err := r.Worktree(ctx, path, branch, base); err != nil {
					errs <- err
					return
				}
				errs <- r.Remove(ctx, path)
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
