package history

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// ErrNoAttempts is returned by UnitAttempts for a step (or item) of a run
// that has no attempt.
var ErrNoAttempts = errors.New("no attempts")

// UnitAttempts reads the attempts of one step instance of a run (the
// latest run when runID is ""), in order, with the snapshots of the work
// tree recorded around each (SPEC §19). step is the step's path as
// inspect shows it (an inner step of a loop: LOOP/ITERATION/STEP); item
// the key of a map step's item, "" for a step that runs once.
func UnitAttempts(ctx context.Context, dir, state, runID, step, item string) (string, []checkpoint.Attempt, error) {
	var list []checkpoint.Attempt
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		if runID == "" {
			run, err := tx.LatestRun()
			if errors.Is(err, checkpoint.ErrNotFound) {
				return ErrNoRuns
			}
			if err != nil {
				return err
			}
			runID = run.ID
		}
		var err error
		list, err = tx.UnitAttempts(checkpoint.Unit{RunID: runID, StepID: step, Item: item})
		return err
	})
	if err != nil {
		return runID, nil, err
	}
	if len(list) == 0 {
		what := "step " + step
		if item != "" {
			what += " item " + item
		}
		return runID, nil, fmt.Errorf("%w of %s in run %s", ErrNoAttempts, what, runID)
	}
	return runID, list, nil
}

// ChangedSummary says which files an attempt changed, the first ten by
// name: "no file", "1 file: a.go", "12 files: a.go, …"; files nil (git
// could not compare the snapshots) says so.
func ChangedSummary(files []string) string {
	const most = 10
	switch {
	case files == nil:
		return "unknown: git cannot compare the snapshots"
	case len(files) == 0:
		return "no file"
	case len(files) > most:
		return fmt.Sprintf("%d files: %s, …", len(files), strings.Join(files[:most], ", "))
	case len(files) == 1:
		return "1 file: " + files[0]
	}
	return fmt.Sprintf("%d files: %s", len(files), strings.Join(files, ", "))
}
