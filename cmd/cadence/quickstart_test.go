package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's quick start has exactly two commands, the demo and the test
// command; .ci/run ends by running that same test command; and the test
// command installs what it needs before anything else, so that it passes on
// a fresh clone and not only in CI.
func TestQuickStartIsWhatCIRuns(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Quick start.*?```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no sh block under ## Quick start")
	}
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(string(block[1])), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	if want := []string{"go run ./cmd/cadence run examples/demo", "make test"}; strings.Join(commands, "\n") != strings.Join(want, "\n") {
		t.Fatalf("quick start commands = %q, want %q", commands, want)
	}

	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if last := lines[len(lines)-1]; last != "make test" {
		t.Errorf(".ci/run ends with %q, want the README's test command", last)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(makefile)))
	var prereqs []string
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "test:"); ok {
			prereqs = strings.Fields(rest)
		}
	}
	if len(prereqs) == 0 || prereqs[0] != "deps" {
		t.Errorf("make test's prerequisites are %q: the first must be deps, which installs what a fresh machine lacks", prereqs)
	}
}

// scripts/test-deps, run on a machine that lacks npm, Chromium,
// chromedriver and the PostgreSQL server, installs exactly those with
// apt-get; on a machine that has them all it installs nothing.
func TestTestDepsInstallsWhatIsMissing(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "test-deps"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "apt.log")
	fake := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake("apt-get", `echo "apt-get $*" >>"$APT_LOG"`+"\n")
	fake("sudo", `exec "$@"`+"\n")
	fake("make", "exit 0\n")
	// The shell's own tools the script uses, and nothing else from PATH.
	for _, tool := range []string{"bash", "env", "id"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(extra ...string) (string, string) {
		t.Helper()
		_ = os.Remove(log)
		cmd := exec.Command(script)
		cmd.Env = append([]string{"PATH=" + bin, "APT_LOG=" + log}, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("test-deps: %v\n%s", err, out)
		}
		got, _ := os.ReadFile(log)
		return string(got), string(out)
	}

	got, out := run("CHROMIUM=/nonexistent/chromium", "CHROMEDRIVER=/nonexistent/chromedriver", "PG_BIN_GLOB=/nonexistent/*/pg_ctl")
	want := "apt-get update -qq\napt-get install -y -qq nodejs npm chromium chromium-driver bubblewrap postgresql\n"
	if got != want {
		t.Errorf("with nothing installed, apt-get ran:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, "nodejs npm chromium chromium-driver bubblewrap postgresql") {
		t.Errorf("test-deps did not say what it installs: %q", out)
	}

	fake("npm", "exit 0\n")
	fake("initdb", "exit 0\n")
	fake("pg_ctl", "exit 0\n")
	fake("chromium", "exit 0\n")
	fake("chromedriver", "exit 0\n")
	fake("bwrap", "exit 0\n")
	got, _ = run("CHROMIUM="+filepath.Join(bin, "chromium"), "CHROMEDRIVER="+filepath.Join(bin, "chromedriver"))
	if got != "" {
		t.Errorf("with everything installed, apt-get ran: %s", got)
	}
}

// TestExamplesIgnoreTheirState: every example's .cadence/.gitignore is the
// one cadence init writes, so that what a run of an example leaves
// (state.db, attempts/, reports/, worktrees/ …) is never committed.
func TestExamplesIgnoreTheirState(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", ".cadence"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 5 {
		t.Fatalf("found %d examples, want at least 5: %v", len(dirs), dirs)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ".gitignore"))
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if string(b) != gitignore {
			t.Errorf("%s/.gitignore differs from what cadence init writes:\n%s", d, b)
		}
	}
}
