package gitwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Restore puts back what an attempt changed after a snapshot: a tracked
// file edited and one deleted, a file untracked at the snapshot and
// deleted, files and a directory added; ignored files and .cadence stay as
// they are, and so do the index, HEAD and the status of every file the
// snapshot recorded. A second restore changes nothing.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	dir := r.Dir
	write(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	write(t, filepath.Join(dir, "b.txt"), "bee\n")
	git(t, r, dir, "add", ".gitignore", "b.txt")
	git(t, r, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "second")
	head := git(t, r, dir, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "a.txt"), "edited before the attempt\n")
	write(t, filepath.Join(dir, "notes.txt"), "untracked before the attempt\n")
	if err := os.MkdirAll(filepath.Join(dir, ".cadence"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".cadence", "state.db"), "cadence's state before\n")
	statusBefore := git(t, r, dir, "status", "--porcelain")
	indexBefore := git(t, r, dir, "ls-files", "--stage")

	snap, _, err := r.Snapshot(ctx, "", "cadence: before attempt 1", ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	// The attempt's damage.
	write(t, filepath.Join(dir, "a.txt"), "broken by the attempt\n")
	for _, f := range []string{"b.txt", "notes.txt"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "gen", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "gen", "deep", "out.go"), "package gen\n")
	write(t, filepath.Join(dir, "new file.txt"), "added\n")
	write(t, filepath.Join(dir, "build.log"), "ignored, made by the attempt\n")
	write(t, filepath.Join(dir, ".cadence", "state.db"), "cadence's own\n")

	changed, err := r.Restore(ctx, snap, ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	if want := []string{"a.txt", "b.txt", "gen/deep/out.go", "new file.txt", "notes.txt"}; !slices.Equal(changed, want) {
		t.Errorf("restored %q, want %q", changed, want)
	}
	for file, want := range map[string]string{
		"a.txt":             "edited before the attempt\n",
		"b.txt":             "bee\n",
		"notes.txt":         "untracked before the attempt\n",
		"build.log":         "ignored, made by the attempt\n",
		".cadence/state.db": "cadence's own\n",
	} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	for _, gone := range []string{"new file.txt", "gen"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (stat: %v)", gone, err)
		}
	}
	if got := git(t, r, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if got := git(t, r, dir, "ls-files", "--stage"); got != indexBefore {
		t.Errorf("index changed:\n%s\nwant\n%s", got, indexBefore)
	}
	if got := git(t, r, dir, "status", "--porcelain"); got != statusBefore {
		t.Errorf("status:\n%s\nwant\n%s", got, statusBefore)
	}
	again, err := r.Restore(ctx, snap, ".cadence")
	if err != nil || len(again) != 0 {
		t.Errorf("a second restore changed %q (%v), want nothing", again, err)
	}
}

// Diff and ChangedBetween tell what changed between two snapshots, in a
// linked worktree as in the main one.
func TestDiffBetweenSnapshots(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	head := git(t, r, r.Dir, "rev-parse", "HEAD")
	wt := filepath.Join(t.TempDir(), "item")
	if err := r.Worktree(ctx, wt, "cadence/r/s/item", head); err != nil {
		t.Fatal(err)
	}
	w := Repo{Dir: wt, Env: r.Env}
	before, _, err := w.Snapshot(ctx, "", "before", ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "a.txt"), "one\n2\nthree\n")
	write(t, filepath.Join(wt, "c.txt"), "sea\n")
	after, _, err := w.Snapshot(ctx, "", "after", ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	files, err := w.ChangedBetween(ctx, before, after)
	if err != nil || !slices.Equal(files, []string{"a.txt", "c.txt"}) {
		t.Errorf("ChangedBetween = %q, %v", files, err)
	}
	d, err := w.Diff(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"diff --git a/a.txt b/a.txt", "-two", "+2", "diff --git a/c.txt b/c.txt", "new file mode 100644", "+sea"} {
		if !slices.Contains(strings.Split(d, "\n"), line) {
			t.Errorf("diff lacks the line %q:\n%s", line, d)
		}
	}
	if none, err := w.Diff(ctx, before, before); err != nil || none != "" {
		t.Errorf("Diff of a snapshot with itself = %q, %v", none, err)
	}
}

// An attempt that hides the file it added behind a .gitignore line it
// added does not keep it: the restored .gitignore no longer ignores it,
// and the next pass removes it.
func TestRestoreAfterAnEditedGitignore(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, ".gitignore"), "*.log\n")
	git(t, r, r.Dir, "add", ".gitignore")
	git(t, r, r.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "ignore logs")
	snap, _, err := r.Snapshot(ctx, "", "before", ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, ".gitignore"), "*.log\nhidden.txt\n")
	write(t, filepath.Join(r.Dir, "hidden.txt"), "kept behind the edited rules\n")
	write(t, filepath.Join(r.Dir, "build.log"), "ignored before and after\n")
	changed, err := r.Restore(ctx, snap, ".cadence")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	if want := []string{".gitignore", "hidden.txt"}; !slices.Equal(changed, want) {
		t.Errorf("restored %q, want %q", changed, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "hidden.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hidden.txt survived the restore (stat: %v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "build.log")); err != nil || string(b) != "ignored before and after\n" {
		t.Errorf("build.log = %q, %v; an ignored file must be left alone", b, err)
	}
}
