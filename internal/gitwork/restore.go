package gitwork

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Restore puts the work tree back as commit snap (a Snapshot) records it:
// every file that differs between snap and the tree now, tracked or
// untracked, is rewritten from snap, and every file snap does not have is
// removed. Ignored files and the exclude paths (relative to r.Dir, as for
// Snapshot) are left alone; the user's index, HEAD and branch are
// untouched (the tree now is read through a temporary index, and git
// restore writes the work tree only).
//
// It is safe to repeat: a second call finds nothing to change. It returns
// the paths it changed, relative to the repository's top.
//
// An attempt that edited a .gitignore to hide a file it added would keep
// that file after one pass (the tree is read under the edited rules): the
// restore goes on while a pass changes something, so the next pass, under
// the restored rules, removes it.
func (r Repo) Restore(ctx context.Context, snap string, exclude ...string) ([]string, error) {
	var all []string
	for pass := 0; pass < maxRestorePasses; pass++ {
		changed, err := r.restoreOnce(ctx, snap, exclude)
		if err != nil {
			return nil, err
		}
		if len(changed) == 0 {
			return all, nil
		}
		for _, c := range changed {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	return nil, fmt.Errorf("restore the work tree to %s: still changing after %d passes", snap, maxRestorePasses)
}

// maxRestorePasses bounds Restore's passes: each one after the first
// happens only when ignore rules were restored, and a third settles them.
const maxRestorePasses = 4

// restoreOnce is one pass of Restore.
func (r Repo) restoreOnce(ctx context.Context, snap string, exclude []string) ([]string, error) {
	now, _, err := r.Snapshot(ctx, "", "cadence: the work tree before a restore", exclude...)
	if err != nil {
		return nil, fmt.Errorf("restore the work tree to %s: %w", snap, err)
	}
	top, err := r.run(ctx, r.Dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	out, err := r.run(ctx, top, "diff-tree", "-r", "-z", "--no-renames", "--name-status", snap, now)
	if err != nil {
		return nil, fmt.Errorf("restore the work tree to %s: %w", snap, err)
	}
	var back, gone []string // rewritten from snap; removed
	fields := strings.Split(strings.Trim(out, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		if status == "A" {
			gone = append(gone, path)
		} else {
			back = append(back, path)
		}
	}
	for _, p := range gone {
		full := filepath.Join(top, filepath.FromSlash(p))
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("restore the work tree to %s: %w", snap, err)
		}
		removeEmptyParents(top, filepath.Dir(full))
	}
	if len(back) > 0 {
		if err := r.restorePaths(ctx, top, snap, back); err != nil {
			return nil, err
		}
	}
	return append(back, gone...), nil
}

// restorePaths rewrites paths (relative to top) from commit snap in the
// work tree only, whatever the index says of them.
func (r Repo) restorePaths(ctx context.Context, top, snap string, paths []string) error {
	gitDir, err := r.run(ctx, r.Dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(gitDir, "cadence-restore-")
	if err != nil {
		return fmt.Errorf("restore the work tree to %s: %w", snap, err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(strings.Join(paths, "\x00") + "\x00")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore the work tree to %s: %w", snap, err)
	}
	if _, err := r.run(ctx, top, "--literal-pathspecs", "restore", "--source="+snap, "--worktree",
		"--pathspec-from-file="+f.Name(), "--pathspec-file-nul"); err != nil {
		return fmt.Errorf("restore the work tree to %s: %w", snap, err)
	}
	return nil
}

// removeEmptyParents removes dir and its parents up to top (excluded)
// while they are empty: a directory the attempt created for the files it
// added goes with them.
func removeEmptyParents(top, dir string) {
	for dir != top && strings.HasPrefix(dir, top+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// Diff returns the change from commit from to commit to, as git diff
// prints it (binary files included, paths relative to the repository's
// top).
func (r Repo) Diff(ctx context.Context, from, to string) (string, error) {
	out, err := r.run(ctx, r.Dir, "diff", "--no-color", "--no-ext-diff", "--binary", from, to)
	if err != nil {
		return "", err
	}
	if out != "" {
		out += "\n"
	}
	return out, nil
}

// ChangedBetween lists the files that differ between commits from and
// to, relative to the repository's top.
func (r Repo) ChangedBetween(ctx context.Context, from, to string) ([]string, error) {
	out, err := r.run(ctx, r.Dir, "diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to)
	if err != nil {
		return nil, err
	}
	out = strings.Trim(out, "\x00")
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\x00"), nil
}

// Keep points ref at commit, so that git's garbage collection keeps the
// commit (a snapshot no branch reaches) as long as the ref exists.
func (r Repo) Keep(ctx context.Context, ref, commit string) error {
	_, err := r.run(ctx, r.Dir, "update-ref", ref, commit)
	return err
}
