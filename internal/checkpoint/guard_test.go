package checkpoint

import (
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
