package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The allowed transitions, written out independently of the tables in
// transitions.go. Every pair of statuses not listed here must be refused.
var (
	runStatuses     = []string{RunRunning, RunSucceeded, RunFailed, RunInterrupted, RunAbandoned}
	allowedRunMoves = set(
		"running>running", "running>succeeded", "running>failed", "running>interrupted", "running>abandoned",
		"interrupted>running", "interrupted>abandoned",
		"failed>running",
	)
	stepStatuses     = []string{StepPending, StepRunning, StepWaiting, StepSucceeded, StepFailed}
	allowedStepMoves = set(
		"pending>pending", "pending>running", "pending>failed", "pending>succeeded",
		"pending>waiting", // an approval gate reached
		"running>running", "running>waiting", "running>succeeded", "running>failed", "running>pending",
		"waiting>waiting", "waiting>running", "waiting>failed",
		"waiting>succeeded", // an approval gate answered
		"failed>pending",
	)
	attemptStatuses     = []string{AttemptRunning, AttemptSucceeded, AttemptFailed, AttemptInterrupted, AttemptAdopted}
	allowedAttemptMoves = set(
		"running>running", "running>succeeded", "running>failed", "running>interrupted", "running>adopted",
	)
	checkStatuses     = []string{CheckRunning, CheckPassed, CheckFailed, CheckInterrupted}
	allowedCheckMoves = set("running>running", "running>passed", "running>failed", "running>interrupted")
)

func set(moves ...string) map[string]bool {
	m := make(map[string]bool, len(moves))
	for _, mv := range moves {
		m[mv] = true
	}
	return m
}

func TestTransitionTables(t *testing.T) {
	machines := []struct {
		name     string
		statuses []string
		allowed  map[string]bool
		check    func(from, to string) error
	}{
		{"run", runStatuses, allowedRunMoves, RunTransition},
		{"step", stepStatuses, allowedStepMoves, StepTransition},
		{"attempt", attemptStatuses, allowedAttemptMoves, AttemptTransition},
		{"check", checkStatuses, allowedCheckMoves, CheckTransition},
	}
	for _, m := range machines {
		// Every pair, plus unknown and empty statuses on either side.
		all := append(append([]string{}, m.statuses...), "bogus", "")
		for _, from := range all {
			for _, to := range all {
				err := m.check(from, to)
				if m.allowed[from+">"+to] {
					if err != nil {
						t.Errorf("%s %q → %q: %v, want allowed", m.name, from, to, err)
					}
					continue
				}
				if !errors.Is(err, ErrInvalidTransition) {
					t.Errorf("%s %q → %q: %v, want ErrInvalidTransition", m.name, from, to, err)
				}
			}
		}
	}
}

// The Tx update methods enforce the same tables on stored rows, name the row
// in their error and leave a refused row unchanged.
func TestUpdatesEnforceTransitions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		s := e.newStore(t)

		type machine struct {
			name     string
			statuses []string
			allowed  map[string]bool
			// seed stores a row in status from under key; move tries to set to;
			// status reads the stored status back.
			seed   func(tx *Tx, key, from string) error
			move   func(tx *Tx, key, to string) error
			status func(tx *Tx, key string) (string, error)
			row    func(key string) string
		}
		machines := []machine{
			{
				name: "run", statuses: runStatuses, allowed: allowedRunMoves,
				seed: func(tx *Tx, key, from string) error {
					r := sampleRun(key, t0)
					r.Status = from
					return tx.CreateRun(r, nil)
				},
				move: func(tx *Tx, key, to string) error {
					r, err := tx.Run(key)
					if err != nil {
						return err
					}
					r.Status = to
					return tx.UpdateRun(*r)
				},
				status: func(tx *Tx, key string) (string, error) {
					r, err := tx.Run(key)
					if err != nil {
						return "", err
					}
					return r.Status, nil
				},
				row: func(key string) string { return "run " + key },
			},
			{
				name: "step", statuses: stepStatuses, allowed: allowedStepMoves,
				seed: func(tx *Tx, key, from string) error {
					st := sampleStep(key, "s", 0)
					st.Status = from
					return tx.CreateRun(sampleRun(key, t0), []Step{st})
				},
				move: func(tx *Tx, key, to string) error {
					st, err := tx.Step(key, "s")
					if err != nil {
						return err
					}
					st.Status = to
					return tx.UpdateStep(*st)
				},
				status: func(tx *Tx, key string) (string, error) {
					st, err := tx.Step(key, "s")
					if err != nil {
						return "", err
					}
					return st.Status, nil
				},
				row: func(key string) string { return "step " + key + "/s" },
			},
			{
				name: "attempt", statuses: attemptStatuses, allowed: allowedAttemptMoves,
				seed: func(tx *Tx, key, from string) error {
					if err := tx.CreateRun(sampleRun(key, t0), []Step{sampleStep(key, "s", 0)}); err != nil {
						return err
					}
					a := sampleAttempt(key, "s", 1)
					a.Status = from
					return tx.InsertAttempt(a)
				},
				move: func(tx *Tx, key, to string) error {
					a, err := tx.Attempt(key, "s", 1)
					if err != nil {
						return err
					}
					a.Status = to
					return tx.UpdateAttempt(*a)
				},
				status: func(tx *Tx, key string) (string, error) {
					a, err := tx.Attempt(key, "s", 1)
					if err != nil {
						return "", err
					}
					return a.Status, nil
				},
				row: func(key string) string { return "attempt " + key + "/s/1" },
			},
		}
		for _, m := range machines {
			for _, from := range m.statuses {
				for _, to := range m.statuses {
					key := fmt.Sprintf("%s-%s-%s", m.name, from, to)
					update(t, s, func(tx *Tx) error { return m.seed(tx, key, from) })
					err := s.Update(ctx, func(tx *Tx) error { return m.move(tx, key, to) })
					want := from
					if m.allowed[from+">"+to] {
						if err != nil {
							t.Errorf("%s: %v, want allowed", key, err)
						}
						want = to
					} else if !errors.Is(err, ErrInvalidTransition) ||
						!strings.Contains(err.Error(), m.row(key)) || !strings.Contains(err.Error(), from+" → "+to) {
						t.Errorf("%s: error %v, want ErrInvalidTransition naming %q and %s → %s", key, err, m.row(key), from, to)
					}
					view(t, s, func(tx *Tx) error {
						got, err := m.status(tx, key)
						if err == nil && got != want {
							t.Errorf("%s: stored status %q, want %q", key, got, want)
						}
						return err
					})
				}
			}
		}
	})
}

func TestCreateRefusesUnknownStatus(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		ctx := context.Background()
		badRun := sampleRun("r1", t0)
		badRun.Status = "paused"
		badStep := sampleStep("r2", "s", 0)
		badStep.Status = "done"
		badAttempt := sampleAttempt("r3", "s", 1)
		badAttempt.Status = "ok"
		badKind := sampleAttempt("r3", "s", 1)
		badKind.Kind = "retry"
		tests := []struct {
			name string
			fn   func(tx *Tx) error
			want error
		}{
			{"run status", func(tx *Tx) error { return tx.CreateRun(badRun, nil) }, ErrInvalidTransition},
			{"step status", func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), []Step{badStep}) }, ErrInvalidTransition},
			{"attempt status", func(tx *Tx) error {
				if err := tx.CreateRun(sampleRun("r3", t0), []Step{sampleStep("r3", "s", 0)}); err != nil {
					return err
				}
				return tx.InsertAttempt(badAttempt)
			}, ErrInvalidTransition},
			{"attempt kind", func(tx *Tx) error {
				if err := tx.CreateRun(sampleRun("r3", t0), []Step{sampleStep("r3", "s", 0)}); err != nil {
					return err
				}
				return tx.InsertAttempt(badKind)
			}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := s.Update(ctx, tt.fn)
				if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
					t.Fatalf("got %v, want an error (%v)", err, tt.want)
				}
			})
		}
		view(t, s, func(tx *Tx) error {
			runs, err := tx.Runs()
			if len(runs) != 0 {
				t.Errorf("refused creates left %d runs behind", len(runs))
			}
			return err
		})
	})
}
