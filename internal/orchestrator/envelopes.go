package orchestrator

import (
	"log/slog"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// succeededUnits returns the rows among steps of workflow wf, and among
// the items of its map steps, that succeeded with an envelope: the units
// whose envelope files restoreEnvelopes checks.
func succeededUnits(tx *checkpoint.Tx, wf *workflow.Workflow, steps []checkpoint.Step) ([]checkpoint.Step, error) {
	var out []checkpoint.Step
	for _, s := range steps {
		if ws, _ := wf.AtPath(s.ID); ws != nil && ws.Map != nil {
			items, err := tx.Items(s.RunID, s.ID)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if it.Status() == checkpoint.StepSucceeded && len(it.HandoffJSON) > 0 {
					out = append(out, it)
				}
			}
		}
		if s.Status() == checkpoint.StepSucceeded && len(s.HandoffJSON) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

// restoreEnvelopes makes the envelope file of each succeeded unit in the
// project directory dir hold the envelope its row committed. The files
// are written without an fsync (attempt.Runner.WriteEnvelope): after a
// power cut the newest may be missing or empty, and the run that resumes
// rewrites them from the state.
func restoreEnvelopes(log *slog.Logger, dir string, units []checkpoint.Step) error {
	restored := 0
	for _, s := range units {
		ok, err := attempt.RestoreEnvelope(dir, s.Unit(), s.HandoffJSON)
		if err != nil {
			return err
		}
		if ok {
			restored++
		}
	}
	if restored > 0 {
		log.Info("rewrote envelope files from the state", "files", restored)
	}
	return nil
}
