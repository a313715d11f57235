package gitwork

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
