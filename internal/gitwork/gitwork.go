// Package gitwork gives each item of a map step a git worktree and branch
// of its own, commits what its agent changed there, and merges the
// succeeded branches back (SPEC §12, workspace: worktree).
//
// Every operation runs the git binary with an argv, never through a shell,
// and is safe to repeat: a resumed run calls them again after a crash at
// any point.
package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotRepo reports a directory that is not inside a git work tree.
var ErrNotRepo = errors.New("not inside a git repository")

// Repo is the git repository of a project directory.
type Repo struct {
	Dir string   // the project directory, inside the repository's work tree
	Env []string // the environment git runs with; nil means os.Environ()
}

// run runs git in dir and returns its trimmed stdout.
func (r Repo) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string(nil), r.env()...)
	// Never wait for a credential or editor prompt.
	cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "GIT_MERGE_AUTOEDIT=no")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return strings.TrimSpace(out.String()), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// mayBeInWorkTree reports whether git could find a work tree holding the
// directory: false only when the environment names no git directory or
// work tree and neither the directory nor any directory above it has a
// .git entry, which is where git's own discovery looks. It is asked before
// a git process is started, so that a project outside git (every attempt
// of every step asks for a snapshot) costs a few stat calls instead of a
// process start. True says only "ask git": git decides.
func (r Repo) mayBeInWorkTree() bool {
	for _, kv := range r.env() {
		if v, ok := strings.CutPrefix(kv, "GIT_DIR="); ok && v != "" {
			return true
		}
		if v, ok := strings.CutPrefix(kv, "GIT_WORK_TREE="); ok && v != "" {
			return true
		}
	}
	dir, err := filepath.Abs(r.Dir)
	if err != nil {
		return true
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true // found, or it cannot be told: git decides
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// insideWorkTree is nil when the directory is inside a git work tree, and
// ErrNotRepo (wrapped with the directory) when it is not.
func (r Repo) insideWorkTree(ctx context.Context) error {
	if !r.mayBeInWorkTree() {
		return fmt.Errorf("%s: %w", r.Dir, ErrNotRepo)
	}
	if out, err := r.run(ctx, r.Dir, "rev-parse", "--is-inside-work-tree"); err != nil || out != "true" {
		return fmt.Errorf("%s: %w", r.Dir, ErrNotRepo)
	}
	return nil
}

// Head returns the commit the project's work tree is at; ErrNotRepo when
// the directory is not in a git work tree, or the repository has no
// commit yet.
func (r Repo) Head(ctx context.Context) (string, error) {
	if err := r.insideWorkTree(ctx); err != nil {
		return "", err
	}
	head, err := r.run(ctx, r.Dir, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s: the repository has no commit yet: %w", r.Dir, ErrNotRepo)
	}
	return head, nil
}

// location is where a work tree's repository is, as one git process
// tells it.
type location struct {
	top, gitDir    string // the work tree's top and the git directory, absolute
	head, headTree string // the commit HEAD is at, and its tree
}

// locate finds the directory's work tree, git directory and HEAD with one
// git process (a snapshot is taken before and after every attempt); the
// errors are Head's.
func (r Repo) locate(ctx context.Context) (location, error) {
	if !r.mayBeInWorkTree() {
		return location{}, fmt.Errorf("%s: %w", r.Dir, ErrNotRepo)
	}
	out, err := r.run(ctx, r.Dir, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--absolute-git-dir", "HEAD^{commit}", "HEAD^{tree}")
	if lines := strings.Split(out, "\n"); err == nil && len(lines) == 5 && lines[0] == "true" {
		return location{top: lines[1], gitDir: lines[2], head: lines[3], headTree: lines[4]}, nil
	}
	if _, herr := r.Head(ctx); herr != nil {
		return location{}, herr // not a work tree, or no commit: Head says which
	}
	if err == nil {
		err = fmt.Errorf("git rev-parse in %s printed %q", r.Dir, out)
	}
	return location{}, err
}

// Snapshot returns a commit of the work tree as it is now, for a map
// step's items to branch from: HEAD's tree with every change to a tracked
// file, staged or not, and every untracked file that is not ignored, as a
// child of HEAD. It is built in a temporary index and never touches the
// user's index, HEAD or branch. Paths under exclude (relative to the
// project directory, such as cadence's own .cadence directory) are left
// as HEAD has them. When nothing differs from HEAD, it returns HEAD itself
// and dirty false.
//
// The commit is kept from garbage collection by ref, which Snapshot
// creates (refs/cadence/…, never a branch).
func (r Repo) Snapshot(ctx context.Context, ref, msg string, exclude ...string) (commit string, dirty bool, err error) {
	loc, err := r.locate(ctx)
	if err != nil {
		return "", false, err
	}
	head, top, headTree := loc.head, loc.top, loc.headTree
	// The temporary index lives in the git directory: anywhere in the work
	// tree it would be part of the snapshot.
	gitDir := loc.gitDir
	tmp, err := os.MkdirTemp(gitDir, "cadence-index-")
	if err != nil {
		return "", false, fmt.Errorf("snapshot the work tree: %w", err)
	}
	defer os.RemoveAll(tmp)
	idx := r
	idx.Env = append(append([]string(nil), r.env()...), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	if !r.copyIndex(ctx, filepath.Join(tmp, "index")) {
		if _, err := idx.run(ctx, top, "read-tree", head); err != nil {
			return "", false, err
		}
	}
	args := []string{"add", "--all", "--", "."}
	for _, x := range exclude {
		rel, err := filepath.Rel(top, filepath.Join(r.Dir, x))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if _, err := r.run(ctx, top, "check-ignore", "--quiet", rel); err == nil {
			continue // ignored already, and git refuses to name it
		}
		args = append(args, ":(exclude)"+filepath.ToSlash(rel))
	}
	if _, err := idx.run(ctx, top, args...); err != nil {
		return "", false, err
	}
	tree, err := idx.run(ctx, top, "write-tree")
	if err != nil {
		return "", false, err
	}
	commit = head
	if tree != headTree {
		ct := []string{"commit-tree", tree, "-p", head, "-m", msg}
		if email, _ := r.run(ctx, top, "config", "user.email"); email == "" {
			ct = append([]string{"-c", "user.name=cadence", "-c", "user.email=cadence@localhost"}, ct...)
		}
		if commit, err = r.run(ctx, top, ct...); err != nil {
			return "", false, err
		}
	}
	if ref != "" {
		if _, err := r.run(ctx, top, "update-ref", ref, commit); err != nil {
			return "", false, err
		}
	}
	return commit, tree != headTree, nil
}

// Changed lists the files a commit changes from its first parent, relative
// to the repository's top.
func (r Repo) Changed(ctx context.Context, commit string) ([]string, error) {
	out, err := r.run(ctx, r.Dir, "diff-tree", "--no-commit-id", "--name-only", "-r", commit+"^", commit)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

// DeleteRunRefs deletes what the map steps of a run left in the
// repository: its branches cadence/RUN/… and its refs refs/cadence/RUN/….
// A branch still checked out in a worktree is kept and reported in the
// error. It returns the branches it deleted.
func (r Repo) DeleteRunRefs(ctx context.Context, runID string) ([]string, error) {
	if err := r.insideWorkTree(ctx); err != nil {
		return nil, err
	}
	out, err := r.run(ctx, r.Dir, "for-each-ref", "--format=%(refname)", "refs/heads/cadence/"+runID+"/", "refs/cadence/"+runID+"/")
	if err != nil {
		return nil, err
	}
	var deleted, kept []string
	for _, ref := range strings.Fields(out) {
		if branch, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			if _, err := r.run(ctx, r.Dir, "branch", "--quiet", "-D", branch); err != nil {
				kept = append(kept, branch)
				continue
			}
			deleted = append(deleted, branch)
			continue
		}
		if _, err := r.run(ctx, r.Dir, "update-ref", "-d", ref); err != nil {
			return deleted, err
		}
	}
	if len(kept) > 0 {
		return deleted, fmt.Errorf("branches still checked out in a worktree were kept: %s", strings.Join(kept, ", "))
	}
	return deleted, nil
}

// env is the environment git runs with.
func (r Repo) env() []string {
	if r.Env == nil {
		return os.Environ()
	}
	return r.Env
}

// branchExists reports whether refs/heads/branch exists.
func (r Repo) branchExists(ctx context.Context, branch string) bool {
	_, err := r.run(ctx, r.Dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// lockWorktrees holds an exclusive lock on the repository's git directory
// until the returned function is called. Adding, pruning and removing
// worktrees change one list that git itself does not lock: a `git worktree
// prune` run while another `git worktree add` is still writing its record
// removes that record, and the add fails ("failed to read
// .git/worktrees/NAME/commondir"). The items of a map step, and any other
// cadence process in the same repository, take turns here. flock on the
// directory leaves no file behind, and the kernel releases it when its
// holder dies.
func (r Repo) lockWorktrees(ctx context.Context) (func(), error) {
	dir, err := r.run(ctx, r.Dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock the worktrees of %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the worktrees of %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// Worktree makes sure path is a worktree of branch: an existing worktree
// there is reused as it is (a resume), an existing branch is checked out
// with its commits, and a new branch starts at base.
func (r Repo) Worktree(ctx context.Context, path, branch, base string) error {
	if top, err := r.run(ctx, path, "rev-parse", "--show-toplevel"); err == nil && samePath(top, path) {
		cur, err := r.run(ctx, path, "symbolic-ref", "--short", "HEAD")
		if err == nil && cur == branch {
			return nil
		}
		return fmt.Errorf("%s is a worktree of %q, not of branch %s", path, cur, branch)
	}
	unlock, err := r.lockWorktrees(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// A directory left by an interrupted `git worktree add` is not a
	// worktree yet: prune the stale record and add it again.
	if _, err := r.run(ctx, r.Dir, "worktree", "prune"); err != nil {
		return err
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("clear %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if r.branchExists(ctx, branch) {
		_, err := r.run(ctx, r.Dir, "worktree", "add", "--quiet", path, branch)
		return err
	}
	_, err = r.run(ctx, r.Dir, "worktree", "add", "--quiet", "-b", branch, path, base)
	return err
}

// CommitAll commits every change in the worktree at path, untracked files
// included, with msg; it reports whether there was anything to commit. An
// identity is supplied only when the repository has none configured.
func (r Repo) CommitAll(ctx context.Context, path, msg string) (bool, error) {
	if _, err := r.run(ctx, path, "add", "--all"); err != nil {
		return false, err
	}
	if _, err := r.run(ctx, path, "diff", "--cached", "--quiet"); err == nil {
		return false, nil
	}
	args := []string{"commit", "--quiet", "--no-verify", "-m", msg}
	if email, _ := r.run(ctx, path, "config", "user.email"); email == "" {
		args = append([]string{"-c", "user.name=cadence", "-c", "user.email=cadence@localhost"}, args...)
	}
	if _, err := r.run(ctx, path, args...); err != nil {
		return false, err
	}
	return true, nil
}

// Remove removes the worktree at path; its branch stays. A path that is no
// longer a worktree is not an error.
func (r Repo) Remove(ctx context.Context, path string) error {
	unlock, err := r.lockWorktrees(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		_, err := r.run(ctx, r.Dir, "worktree", "prune")
		return err
	}
	_, err = r.run(ctx, r.Dir, "worktree", "remove", "--force", path)
	return err
}

// PruneWorktrees makes git forget the worktrees whose directories were
// removed, so that their branches may be deleted.
func (r Repo) PruneWorktrees(ctx context.Context) error {
	unlock, err := r.lockWorktrees(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = r.run(ctx, r.Dir, "worktree", "prune")
	return err
}

// MergeResult is how a merge of an item's branch ended.
type MergeResult int

const (
	Merged   MergeResult = iota // merged, or already merged
	Conflict                    // conflicted; the merge was aborted and the work tree left as before
)

// Merge merges branch into the project's current branch with a merge
// commit. A conflict is aborted, leaving the work tree as it was. Merging a
// branch that is already merged changes nothing, so a resumed run may merge
// again what it merged before a crash.
func (r Repo) Merge(ctx context.Context, branch, msg string) (MergeResult, error) {
	args := []string{"merge", "--no-ff", "--no-edit", "-m", msg, branch}
	if email, _ := r.run(ctx, r.Dir, "config", "user.email"); email == "" {
		args = append([]string{"-c", "user.name=cadence", "-c", "user.email=cadence@localhost"}, args...)
	}
	_, err := r.run(ctx, r.Dir, args...)
	if err == nil {
		return Merged, nil
	}
	// A conflict leaves unmerged paths and MERGE_HEAD; anything else (a
	// dirty work tree, say) is an error to report as it is.
	if unmerged, _ := r.run(ctx, r.Dir, "diff", "--name-only", "--diff-filter=U"); unmerged != "" {
		if _, aerr := r.run(ctx, r.Dir, "merge", "--abort"); aerr != nil {
			return Conflict, fmt.Errorf("abort the conflicted merge of %s: %w", branch, aerr)
		}
		return Conflict, nil
	}
	return Merged, err
}

// Conflicts lists the files a merge of branch would conflict on, for the
// dead letter of an item whose merge was aborted.
func (r Repo) Conflicts(ctx context.Context, branch string) []string {
	out, err := r.run(ctx, r.Dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", branch)
	if err == nil {
		return nil
	}
	lines := strings.Split(out, "\n")
	if len(lines) <= 1 {
		return nil
	}
	var files []string
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(l); l != "" {
			files = append(files, l)
		}
	}
	return files
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// copyIndex copies the work tree's own index to path, for a snapshot to
// start from: its entries carry the files' stat data, so git add hashes
// only the files that changed since, not every file of the tree (as it
// must after read-tree). git replaces an index by renaming a new one over
// it, so the copy is one whole version. Paths outside the snapshot (the
// excluded ones) keep what the index says of them, staged changes
// included. It reports false when there is no index to copy.
func (r Repo) copyIndex(ctx context.Context, path string) bool {
	src, err := r.run(ctx, r.Dir, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return false
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return false
	}
	return os.WriteFile(path, b, 0o644) == nil
}
