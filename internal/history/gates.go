package history

import (
	"context"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// GateWaiting is an approval gate that waits for a person, for `cadence
// gates`. Field names are stable (`cadence gates --json`).
type GateWaiting struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"` // the run's workflow file, relative to the project
	Name     string `json:"name"`     // the workflow's name: key
	// Gate is the gate's row: its step id, or its path inside a loop
	// (implement/2/review); `cadence approve` takes either.
	Gate      string     `json:"gate"`
	Prompt    string     `json:"prompt"`
	Since     time.Time  `json:"since"`
	TimeoutAt *time.Time `json:"timeout_at"`
}

// WaitingGates returns the gates of the project's unfinished runs that no
// one has answered, oldest run first and, within a run, in the order they
// were reached. It reads without the project lock, like Inspect.
func WaitingGates(ctx context.Context, dir, state string) ([]GateWaiting, error) {
	out := []GateWaiting{}
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		runs, err := tx.UnfinishedRuns()
		if err != nil {
			return err
		}
		for _, r := range runs {
			gates, err := tx.Approvals(r.ID)
			if err != nil {
				return err
			}
			name := ""
			for _, g := range gates {
				if g.Decided() {
					continue
				}
				if name == "" {
					name = workflowName(r.WorkflowYAML)
				}
				out = append(out, GateWaiting{RunID: r.ID, Workflow: r.WorkflowPath, Name: name, Gate: g.Unit.StepID,
					Prompt: g.Prompt, Since: g.RequestedAt, TimeoutAt: g.TimeoutAt})
			}
		}
		return nil
	})
	return out, err
}
