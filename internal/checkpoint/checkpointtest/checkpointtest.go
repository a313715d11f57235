// Package checkpointtest gives tests of other packages rows of package
// checkpoint in a given status. A row's status is unexported and only
// checkpoint's named transitions change it, so a test that needs, say, a
// failed attempt to judge gets it here: the row is stored in a real state
// file in a temporary directory and taken to the status through the same
// transitions the run loop takes, then read back. The other fields of the
// row returned are the caller's.
package checkpointtest

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// States is a state file that rows are taken to their statuses in. Each
// row gets a run of its own, so rows never constrain each other.
type States struct {
	t     testing.TB
	store *checkpoint.Store
	runs  int
	now   time.Time
}

// New opens a state file in a temporary directory of t, closed when t
// ends.
func New(t testing.TB) *States {
	t.Helper()
	store, err := checkpoint.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("open state file: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	return &States{t: t, store: store, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Attempt returns a in status: a row started by StartAttempt and ended by
// the transition that ends an attempt so (an adopted attempt is one
// AttemptSucceeded adopted).
func (s *States) Attempt(a checkpoint.Attempt, status checkpoint.AttemptStatus) checkpoint.Attempt {
	s.t.Helper()
	run, step := s.newRun()
	row := checkpoint.Attempt{RunID: run.ID, StepID: step.ID, N: 1, Kind: checkpoint.KindInitial, StartedAt: s.now}
	s.update("attempt "+string(status), func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
			return err
		}
		if err := tx.StartAttempt(&row); err != nil {
			return err
		}
		return EndAttempt(tx, &row, status)
	})
	s.read("attempt", func(tx *checkpoint.Tx) (string, error) {
		got, err := tx.Attempt(row.RunID, row.StepID, row.N)
		if err != nil {
			return "", err
		}
		return string(got.Status()), nil
	}, string(status))
	return withFields(row, a)
}

// Run returns r in status: a new (running) run, ended by RunEnded when
// status is another.
func (s *States) Run(r checkpoint.Run, status checkpoint.RunStatus) checkpoint.Run {
	s.t.Helper()
	row, _ := s.newRun()
	s.update("run "+string(status), func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(row, nil); err != nil {
			return err
		}
		if status == checkpoint.RunRunning {
			return nil
		}
		return tx.RunEnded(&row, status, s.now)
	})
	s.read("run", func(tx *checkpoint.Tx) (string, error) {
		got, err := tx.Run(row.ID)
		if err != nil {
			return "", err
		}
		return string(got.Status()), nil
	}, string(status))
	return withFields(row, r)
}

// Step returns st in status: a new (pending) step taken there by the
// named transitions a run takes.
func (s *States) Step(st checkpoint.Step, status checkpoint.StepStatus) checkpoint.Step {
	s.t.Helper()
	run, row := s.newRun()
	s.update("step "+string(status), func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(run, []checkpoint.Step{row}); err != nil {
			return err
		}
		return TakeStep(tx, &row, status, s.now)
	})
	s.read("step", func(tx *checkpoint.Tx) (string, error) {
		got, err := tx.Unit(row.Unit())
		if err != nil {
			return "", err
		}
		return string(got.Status()), nil
	}, string(status))
	return withFields(row, st)
}

// TakeStep takes the pending step (or item) s to status through the
// named transitions a run takes to get there, and writes it: running for
// an attempt begun, waiting for a retry at s.NextRetryAt, succeeded with
// s.HandoffJSON and failed after running, skipped with s.DecisionJSON.
// Pending leaves it as it is.
func TakeStep(tx *checkpoint.Tx, s *checkpoint.Step, status checkpoint.StepStatus, now time.Time) error {
	switch status {
	case checkpoint.StepPending:
		return nil
	case checkpoint.StepRunning:
		return tx.StepRunning(s, now)
	case checkpoint.StepWaiting:
		return tx.StepWaiting(s, s.NextRetryAt, s.DelayMS, now)
	case checkpoint.StepSkipped:
		return tx.StepSkipped(s, s.DecisionJSON, now)
	case checkpoint.StepSucceeded, checkpoint.StepFailed:
		if err := tx.StepRunning(s, now); err != nil {
			return err
		}
		if status == checkpoint.StepSucceeded {
			return tx.StepSucceeded(s, s.HandoffJSON, now)
		}
		return tx.StepFailed(s, now)
	}
	return fmt.Errorf("no transition takes a pending step to %q", status)
}

// EndAttempt takes the running attempt a to status through the named
// transition that ends an attempt so, and writes it; running leaves it
// as it is.
func EndAttempt(tx *checkpoint.Tx, a *checkpoint.Attempt, status checkpoint.AttemptStatus) error {
	switch status {
	case checkpoint.AttemptRunning:
		return nil
	case checkpoint.AttemptSucceeded, checkpoint.AttemptAdopted:
		return tx.AttemptSucceeded(a, status == checkpoint.AttemptAdopted)
	case checkpoint.AttemptFailed:
		return tx.AttemptFailed(a)
	case checkpoint.AttemptInterrupted:
		return tx.AttemptInterrupted(a)
	}
	return fmt.Errorf("no transition ends an attempt %q", status)
}

// newRun is a new run, running, with one pending step, not yet stored.
func (s *States) newRun() (checkpoint.Run, checkpoint.Step) {
	s.runs++
	id := "r" + strconv.Itoa(s.runs)
	run := checkpoint.NewRun(checkpoint.Run{ID: id, WorkflowPath: "workflow.yaml", WorkflowSHA256: "0", WorkflowYAML: []byte("version: 1\n")}, s.now)
	step := checkpoint.NewStep(checkpoint.Step{RunID: id, ID: "s", Agent: "a", MaxAttempts: 1}, s.now)
	return run, step
}

func (s *States) update(what string, fn func(tx *checkpoint.Tx) error) {
	s.t.Helper()
	if err := s.store.Update(context.Background(), fn); err != nil {
		s.t.Fatalf("take %s: %v", what, err)
	}
}

// read fails the test unless status reads back the status want.
func (s *States) read(what string, status func(tx *checkpoint.Tx) (string, error), want string) {
	s.t.Helper()
	var got string
	err := s.store.View(context.Background(), func(tx *checkpoint.Tx) error {
		var err error
		got, err = status(tx)
		return err
	})
	if err != nil {
		s.t.Fatalf("read %s back: %v", what, err)
	}
	if got != want {
		s.t.Fatalf("%s stored %q, want %q", what, got, want)
	}
}

// withFields is row with every exported field of fields: the status of
// row, which the transitions set, and the rest of the caller's.
func withFields[T any](row, fields T) T {
	dst, src := reflect.ValueOf(&row).Elem(), reflect.ValueOf(fields)
	for i := range dst.NumField() {
		if dst.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return row
}
