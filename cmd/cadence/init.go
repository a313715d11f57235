package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

type initCmd struct {
	Dir string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
}

// gitignore keeps cadence's state out of version control while the workflow
// itself stays tracked.
const gitignore = `# cadence state: recreated by every run; keep workflow.yaml under version control.
state.db
state.db-*
lock
attempts/
failed_handoffs/
handoffs/
out/
worktrees/
reports/
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
	for name, data := range files {
		path := filepath.Join(c.Dir, filepath.FromSlash(name))
		if _, err := os.Stat(path); err == nil {
			continue // keep a user's file of the same name
		}
		if err := checkpoint.WriteFileAtomic(path, data, 0o644); err != nil {
			return err
		}
	}
	if err := checkpoint.WriteFileAtomic(filepath.Join(cdir, ".gitignore"), []byte(gitignore), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s\nrun it with: cadence run %s\n", wf, c.Dir)
	return nil
}
