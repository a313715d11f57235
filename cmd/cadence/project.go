package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// findProject returns the project directory a command given dir works on:
// dir itself when it has a .cadence directory, else the nearest directory
// above it that has one, the way git finds .git. When none has, dir is
// returned unchanged, so that the command's message about a missing
// .cadence names the directory the user gave.
func findProject(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		if fi, err := os.Stat(filepath.Join(d, orchestrator.CadenceDir)); err == nil && fi.IsDir() {
			if d == abs {
				return dir
			}
			if rel, err := filepath.Rel(mustGetwd(), d); err == nil && len(rel) < len(d) {
				return rel
			}
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// mustGetwd is the working directory, or "/" when it cannot be found (a
// relative path is then not shorter than the absolute one).
func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// isProject reports whether dir has a .cadence directory.
func isProject(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, orchestrator.CadenceDir))
	return err == nil && fi.IsDir()
}

// noRuns is the error of a command that reads runs in a project that has
// none: it tells a directory without .cadence (not a project) from a
// project without runs yet.
func noRuns(dir string) error {
	if !isProject(dir) {
		return withCode(exitUsage, fmt.Errorf("%s is not a cadence project (no .cadence directory in it or above it); create one with `cadence init %s`", dir, dir))
	}
	return withCode(exitUsage, fmt.Errorf("no runs in %s yet; start one with `cadence run %s`", dir, dir))
}
