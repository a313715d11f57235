package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/projectid"
	"github.com/cadence-dev/cadence/internal/workflow"
)

type initCmd struct {
	Dir string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
}

// gitignore keeps cadence's state out of version control while the workflow
// and the project's id stay tracked.
const gitignore = `# cadence state: recreated by every run; keep workflow.yaml and project (the
# project's id on a shared state) under version control.
state.db
state.db-*
lock
lock-*
attempts/
failed_handoffs/
handoffs/
outputs/
out/
worktrees/
reports/
pruning/
`

func (c *initCmd) Run(e *env) error {
	cdir := filepath.Join(c.Dir, ".cadence")
	wf := filepath.Join(cdir, "workflow.yaml")
	if _, err := os.Stat(wf); err == nil {
		return withCode(exitUsage, fmt.Errorf("%s already exists; not overwriting it", wf))
	} else if !errors.Is(err, os.ErrNotExist) {
		return withCode(exitUsage, err)
	}
	files := workflow.StarterFiles()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var wrote, kept []string
	for _, name := range names {
		path := filepath.Join(c.Dir, filepath.FromSlash(name))
		if _, err := os.Stat(path); err == nil {
			kept = append(kept, path) // keep a user's file of the same name
			continue
		}
		if err := checkpoint.WriteFileAtomic(path, files[name], 0o644); err != nil {
			return err
		}
		wrote = append(wrote, path)
	}
	ignore := filepath.Join(cdir, ".gitignore")
	if err := checkpoint.WriteFileAtomic(ignore, []byte(gitignore), 0o644); err != nil {
		return err
	}
	wrote = append(wrote, ignore)
	if _, err := os.Stat(projectid.Path(c.Dir)); errors.Is(err, os.ErrNotExist) {
		if _, err := projectid.Ensure(c.Dir); err != nil {
			return err
		}
		wrote = append(wrote, projectid.Path(c.Dir))
	}
	fmt.Fprintln(e.stdout, "wrote:")
	for _, p := range wrote {
		fmt.Fprintf(e.stdout, "  %s\n", p)
	}
	for _, p := range kept {
		fmt.Fprintf(e.stdout, "kept the existing %s\n", p)
	}
	fmt.Fprintf(e.stdout, "check it with: cadence check %s\nrun it with:   cadence run %s\n", c.Dir, c.Dir)
	return nil
}
