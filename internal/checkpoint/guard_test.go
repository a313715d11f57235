package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// The guard of a change to a status names exactly the statuses the
// transition table lets a row move to it from, and no guard exists for a
// status the table does not know.
func TestGuardToNamesTheAllowedStatuses(t *testing.T) {
	check := func(t *testing.T, name string, statuses []string, allowed func(from, to string) bool, guard func(to string) (statusGuard, bool)) {
		for _, to := range append(slices.Clone(statuses), "unknown") {
			var want []string
			for _, from := range statuses {
				if allowed(from, to) {
					want = append(want, from)
				}
			}
			g, ok := guard(to)
			if len(want) == 0 {
				if ok {
					t.Errorf("%s → %s: guard %+v, want none (nothing may move there)", name, to, g)
				}
				continue
			}
			if !ok {
				t.Errorf("%s → %s: no guard, want one of %v", name, to, want)
				continue
			}
			got := []string{g.From1, g.From2, g.From3, g.From4, g.From5, g.From6}
			slices.Sort(got)
			got = slices.Compact(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s → %s: guard names %v, want %v", name, to, got, want)
			}
		}
	}
	t.Run("step", func(t *testing.T) {
		check(t, "step", stepStatuses, func(from, to string) bool { return allowedStepMoves[from+">"+to] },
			func(to string) (statusGuard, bool) { return guardTo(stepTransitions, StepStatus(to)) })
	})
	t.Run("attempt", func(t *testing.T) {
		check(t, "attempt", attemptStatuses, func(from, to string) bool { return allowedAttemptMoves[from+">"+to] },
			func(to string) (statusGuard, bool) { return guardTo(attemptTransitions, AttemptStatus(to)) })
	})
}

// A change that more statuses may lead to than a guard holds gets no
// guard; UpdateStep and UpdateAttempt then write it under a guard of the
// status they read (execOnceMore), which writes the row when the status
// is the one read, and is an error, writing nothing, when it is not.
func TestGuardBeyondItsSize(t *testing.T) {
	type st string
	table := map[st][]st{"z": nil}
	for i := range guardSize + 1 {
		table[st(fmt.Sprintf("s%d", i))] = []st{"z"}
	}
	if g, ok := guardTo(table, "z"); ok {
		t.Errorf("a change from %d statuses got guard %+v, want none", guardSize+1, g)
	}
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cases := []struct {
			name, guard string
			wantWrite   bool
		}{
			{"the status read", "pending", true},
			{"another status", "failed", false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := e.newStore(t)
				seedRun(t, s, "r", t0, "s")
				err := s.Update(context.Background(), func(tx *Tx) error {
					st, err := tx.Step("r", "s")
					if err != nil {
						return err
					}
					st.status = StepRunning
					return tx.execOnceMore("step r/s", updateStepQuery, guardedStepRow{stepToRow(*st), guardOf(tc.guard)}, tc.guard, string(StepRunning))
				})
				if (err == nil) != tc.wantWrite {
					t.Fatalf("write under a guard of %s: %v, want written %v", tc.guard, err, tc.wantWrite)
				}
				want := StepPending
				if tc.wantWrite {
					want = StepRunning
				}
				view(t, s, func(tx *Tx) error {
					st, err := tx.Step("r", "s")
					if err == nil && st.Status() != want {
						t.Errorf("step %s after the write, want %s", st.Status(), want)
					}
					return err
				})
			})
		}
	})
}
