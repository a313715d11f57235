package checkpointtest

import (
	"reflect"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// TestAttemptStatuses: every attempt status is reached, read back from the
// state file, and the row returned keeps every field the caller gave.
func TestAttemptStatuses(t *testing.T) {
	states := New(t)
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	cost := 0.25
	in := checkpoint.Attempt{RunID: "run-x", StepID: "plan", ItemKey: "i1", N: 4, Kind: checkpoint.KindFollowup, Class: "schema",
		Error: "bad", StartedAt: at, FinishedAt: &at, CostUSD: &cost, Repairs: []string{"prose"}, Uncounted: true}
	for _, status := range []checkpoint.AttemptStatus{checkpoint.AttemptRunning, checkpoint.AttemptSucceeded,
		checkpoint.AttemptFailed, checkpoint.AttemptInterrupted, checkpoint.AttemptAdopted} {
		got := states.Attempt(in, status)
		if got.Status() != status {
			t.Errorf("status %s: got %s", status, got.Status())
		}
		if !reflect.DeepEqual(withFields(in, got), in) || got.RunID != "run-x" || got.N != 4 || *got.CostUSD != 0.25 {
			t.Errorf("status %s: fields %+v, want the caller's %+v", status, got, in)
		}
	}
}

// TestEndAttemptRefusesAnUnknownStatus: a status no transition ends in is
// an error, and the attempt stays as it was.
func TestEndAttemptRefusesAnUnknownStatus(t *testing.T) {
	states := New(t)
	run, step := states.newRun()
	a := checkpoint.Attempt{RunID: run.ID, StepID: step.ID, N: 1, Kind: checkpoint.KindInitial, StartedAt: states.now}
	var endErr error
	states.update("attempt", func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
			return err
		}
		if err := tx.StartAttempt(&a); err != nil {
			return err
		}
		endErr = EndAttempt(tx, &a, checkpoint.AttemptStatus("paused"))
		return nil
	})
	if endErr == nil {
		t.Fatal("EndAttempt(paused) = nil, want an error")
	}
	states.read("attempt", func(tx *checkpoint.Tx) (string, error) {
		got, err := tx.Attempt(a.RunID, a.StepID, a.N)
		if err != nil {
			return "", err
		}
		return string(got.Status()), nil
	}, string(checkpoint.AttemptRunning))
}

// TestStepStatuses: every step status is reached, read back from the
// state file, and the row returned keeps every field the caller gave.
func TestStepStatuses(t *testing.T) {
	states := New(t)
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	delay := int64(1500)
	in := checkpoint.Step{RunID: "run-x", ID: "fix", ItemKey: "k", Idx: 2, ItemIdx: 3, Agent: "claude", MaxAttempts: 5,
		NextRetryAt: &at, DelayMS: &delay, SessionID: "s-1", HandoffJSON: []byte(`{}`), CostUSD: 0.5, UpdatedAt: at}
	for _, status := range []checkpoint.StepStatus{checkpoint.StepPending, checkpoint.StepRunning, checkpoint.StepWaiting,
		checkpoint.StepSucceeded, checkpoint.StepFailed, checkpoint.StepSkipped} {
		got := states.Step(in, status)
		if got.Status() != status {
			t.Errorf("status %s: got %s", status, got.Status())
		}
		if !reflect.DeepEqual(withFields(in, got), in) || got.ItemKey != "k" || *got.NextRetryAt != at {
			t.Errorf("status %s: fields %+v, want the caller's %+v", status, got, in)
		}
	}
}

// TestRunStatuses: every run status is reached, read back from the state
// file, and the row returned keeps every field the caller gave.
func TestRunStatuses(t *testing.T) {
	states := New(t)
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	budget := 3.5
	in := checkpoint.Run{ID: "run-x", WorkflowPath: "w.yaml", WorkflowYAML: []byte("version: 1\n"), BudgetUSD: &budget,
		StartedAt: at, FinishedAt: &at, UpdatedAt: at, InputsJSON: []byte(`{"n":1}`)}
	for _, status := range []checkpoint.RunStatus{checkpoint.RunRunning, checkpoint.RunSucceeded, checkpoint.RunFailed,
		checkpoint.RunInterrupted, checkpoint.RunAbandoned, checkpoint.RunCancelled} {
		got := states.Run(in, status)
		if got.Status() != status {
			t.Errorf("status %s: got %s", status, got.Status())
		}
		if !reflect.DeepEqual(withFields(in, got), in) || got.ID != "run-x" || *got.BudgetUSD != 3.5 {
			t.Errorf("status %s: fields %+v, want the caller's %+v", status, got, in)
		}
	}
}
