package history

import (
	"context"
	"errors"
	"fmt"

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
