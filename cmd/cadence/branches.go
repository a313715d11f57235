package main

import (
	"errors"
	"fmt"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type cleanBranchesCmd struct {
	Dir   string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID string `name:"run" help:"Run id (default: the latest run)."`
	Force bool   `help:"Delete the branches of a failed run too, which resume --retry-failed could still merge."`
	stateFlag
}

func (c *cleanBranchesCmd) Run(e *env) error {
	runID, deleted, err := orchestrator.CleanBranches(e.ctx, c.Dir, c.State, c.RunID, c.Force)
	if errors.Is(err, history.ErrNoRuns) {
		return withCode(exitUsage, fmt.Errorf("no runs in %s yet", c.Dir))
	}
	var ue *orchestrator.UsageError
	if errors.As(err, &ue) {
		return withCode(exitUsage, err)
	}
	for _, b := range deleted {
		fmt.Fprintf(e.stdout, "deleted branch %s\n", b)
	}
	if err != nil {
		return withCode(exitFailed, err)
	}
	if len(deleted) == 0 {
		fmt.Fprintf(e.stdout, "run %s left no branches\n", runID)
		return nil
	}
	fmt.Fprintf(e.stdout, "deleted the %d branches of run %s\n", len(deleted), runID)
	return nil
}
