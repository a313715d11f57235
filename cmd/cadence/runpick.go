package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// runOfWorkflow returns the id of the latest run of the workflow file
// --workflow names (for commands that show a run); "" when file is "",
// meaning the project's latest run.
func runOfWorkflow(e *env, dir, state, file string) (string, error) {
	if file == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", withCode(exitUsage, fmt.Errorf("project directory %s: %w", dir, err))
	}
	rel := checkpoint.RelPath(abs, file)
	runs, err := history.Runs(e.ctx, dir, state)
	if errors.Is(err, history.ErrNoRuns) {
		return "", noRuns(dir)
	}
	if err != nil {
		return "", withCode(exitUsage, stateHint(err))
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if filepath.Clean(runs[i].WorkflowPath) == filepath.Clean(rel) {
			return runs[i].ID, nil
		}
	}
	return "", withCode(exitUsage, fmt.Errorf("no run of %s in %s (see: cadence runs %s)", rel, dir, dir))
}
