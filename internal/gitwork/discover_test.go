package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countingGit puts first on the test's PATH (where exec looks git up) a
// git that records each start in a file and then runs the real git, and
// returns the file.
func countingGit(t *testing.T) string {
	t.Helper()
	real, err := lookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "starts")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return log
}

func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + " not on PATH")
}

func starts(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// Whether a directory is in a work tree is told without a git process
// when no .git is above it and the environment names none; in every other
// case git is asked, and its answer is the one given.
func TestHeadAsksGitOnlyWhereARepositoryCanBe(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	sub := filepath.Join(repo.Dir, "deep", "er")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	git(t, repo, bare, "init", "--quiet", "--bare")
	plain := t.TempDir()

	cases := []struct {
		name       string
		dir        string
		extraEnv   []string
		wantRepo   bool
		wantStarts bool
	}{
		{"a plain directory", plain, nil, false, false},
		{"the top of a repository", repo.Dir, nil, true, true},
		{"a directory deep in a repository", sub, nil, true, true},
		{"inside the .git directory", filepath.Join(repo.Dir, ".git"), nil, false, true},
		{"a bare repository (no work tree, no .git)", bare, nil, false, false},
		{"a plain directory with GIT_DIR naming a repository", plain,
			[]string{"GIT_DIR=" + filepath.Join(repo.Dir, ".git"), "GIT_WORK_TREE=" + repo.Dir}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := countingGit(t)
			env := append(append([]string(nil), repo.Env...), c.extraEnv...)
			_, err := Repo{Dir: c.dir, Env: env}.Head(ctx)
			if gotRepo := err == nil; gotRepo != c.wantRepo {
				t.Errorf("Head: %v, want a repository: %v", err, c.wantRepo)
			}
			if !c.wantRepo && !errors.Is(err, ErrNotRepo) {
				t.Errorf("Head: %v, want ErrNotRepo", err)
			}
			if n := starts(t, log); (n > 0) != c.wantStarts {
				t.Errorf("git started %d times, want started: %v", n, c.wantStarts)
			}
		})
	}
}
