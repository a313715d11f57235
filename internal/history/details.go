package history

import (
	"context"
	"errors"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// AttemptRef names one attempt of a run: its step row (a path inside a
// loop), its map item ("" for the step's own attempts) and its number.
type AttemptRef struct {
	Step, Item string
	N          int
}

// AttemptDetails reads the stored diagnosis (the details JSON, as
// AttemptReport.Details holds it) of some attempts of a run: what a job
// summary shows of its failures, without reading every attempt's prompt
// as Inspect with prompts does. An attempt not found is left out.
func AttemptDetails(ctx context.Context, dir, state, runID string, refs []AttemptRef) (map[AttemptRef]string, error) {
	out := make(map[AttemptRef]string, len(refs))
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		for _, r := range refs {
			a, err := tx.UnitAttempt(checkpoint.Unit{RunID: runID, StepID: r.Step, Item: r.Item}, r.N)
			if errors.Is(err, checkpoint.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if len(a.DetailsJSON) > 0 {
				out[r] = string(a.DetailsJSON)
			}
		}
		return nil
	})
	return out, err
}
