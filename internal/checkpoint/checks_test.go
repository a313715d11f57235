package checkpoint

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestChecksRoundTrip writes check runs of two attempts, updates them and
// reads them back: every field survives, runs come back in order, and the
// sequence and the status changes are enforced.
func TestChecksRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		started := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		seedRun(t, s, "r1", started, "impl")
		update(t, s, func(tx *Tx) error {
			for n := 1; n <= 2; n++ {
				if err := tx.InsertAttempt(sampleAttempt("r1", "impl", n)); err != nil {
					return err
				}
			}
			return nil
		})
		run := Check{RunID: "r1", StepID: "impl", N: 1, Seq: 1, Name: "tests", Command: "go test ./...",
			Status: CheckRunning, StartedAt: started}
		update(t, s, func(tx *Tx) error { return tx.InsertCheck(run) })

		done := run
		done.Status, done.ExitCode, done.PID = CheckFailed, ptr(1), ptr(4242)
		done.FinishedAt = ptr(started.Add(1500 * time.Millisecond))
		done.OutputFile, done.Tail = ".cadence/attempts/r1/impl/1.check-tests.out", "--- FAIL: TestAdd\nFAIL"
		vet := Check{RunID: "r1", StepID: "impl", N: 1, Seq: 2, Name: "vet", Command: "go vet ./...",
			Status: CheckRunning, StartedAt: started.Add(2 * time.Second)}
		other := Check{RunID: "r1", StepID: "impl", N: 2, Seq: 1, Name: "tests", Command: "go test ./...",
			Status: CheckRunning, StartedAt: started.Add(time.Minute)}
		update(t, s, func(tx *Tx) error {
			return errors.Join(tx.UpdateCheck(done), tx.InsertCheck(vet), tx.InsertCheck(other))
		})
		timedOut := vet
		timedOut.Status, timedOut.TimedOut, timedOut.Signal = CheckFailed, true, "killed"
		timedOut.FinishedAt = ptr(started.Add(12 * time.Second))
		update(t, s, func(tx *Tx) error { return tx.UpdateCheck(timedOut) })

		view(t, s, func(tx *Tx) error {
			got, err := tx.Checks("r1", "impl", "", 1)
			if err != nil {
				return err
			}
			if want := []Check{done, timedOut}; !reflect.DeepEqual(utc(got), utc(want)) {
				t.Errorf("Checks:\n got %+v\nwant %+v", got, want)
			}
			if d := got[0].Duration(); d != 1500*time.Millisecond {
				t.Errorf("Duration = %v", d)
			}
			all, err := tx.RunChecks("r1")
			if err != nil {
				return err
			}
			if len(all) != 3 || all[2].N != 2 {
				t.Errorf("RunChecks = %+v", all)
			}
			return nil
		})

		bad := []struct {
			name string
			fn   func(tx *Tx) error
			want error
		}{
			{"a gap in the sequence", func(tx *Tx) error {
				c := other
				c.Seq = 3
				return tx.InsertCheck(c)
			}, ErrAttemptNumber},
			{"a seq used twice", func(tx *Tx) error { return tx.InsertCheck(vet) }, ErrAttemptNumber},
			{"inserted finished", func(tx *Tx) error {
				c := other
				c.Seq, c.Status = 2, CheckPassed
				return tx.InsertCheck(c)
			}, ErrInvalidTransition},
			{"a final result changed", func(tx *Tx) error {
				c := done
				c.Status = CheckPassed
				return tx.UpdateCheck(c)
			}, ErrInvalidTransition},
			{"no such check", func(tx *Tx) error {
				c := other
				c.Seq = 9
				return tx.UpdateCheck(c)
			}, ErrNotFound},
		}
		for _, b := range bad {
			t.Run(b.name, func(t *testing.T) {
				err := s.Update(t.Context(), b.fn)
				if !errors.Is(err, b.want) {
					t.Fatalf("error %v, want %v", err, b.want)
				}
			})
		}
	})
}
