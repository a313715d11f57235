package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// att is an attempt for the circuit tests: unit, n, generation, start and
// end in seconds from epoch, status and class.
func att(unit string, n int, gen int64, from, to float64, status checkpoint.AttemptStatus, class string) unitAttempt {
	sec := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	end := sec(to)
	return unitAttempt{unit: unit, agent: "sim", a: &history.AttemptReport{N: n, Kind: "initial", Status: status, Class: class,
		CircuitGen: gen, StartedAt: sec(from), FinishedAt: &end}}
}

// spellString shows spells as "from-to cause trial" in seconds.
func spellString(spells []openSpell) string {
	var parts []string
	for _, s := range spells {
		p := fmt.Sprintf("%s %g-%g", s.agent, s.from.Sub(epoch).Seconds(), s.to.Sub(epoch).Seconds())
		if s.cause != nil {
			p += fmt.Sprintf(" by %s#%d", s.cause.unit, s.cause.a.N)
		}
		if s.trial != nil {
			p += fmt.Sprintf(" trial %s#%d", s.trial.unit, s.trial.a.N)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// TestInferOpenSpells reconstructs circuit openings from the breaker
// generations attempts were admitted under: closed→open→half-open is two
// generations, so a jump of two or more after a counting failure is an
// opening that the jumping attempt, the half-open trial, ended.
func TestInferOpenSpells(t *testing.T) {
	t1 := epoch.Add(time.Hour)
	opened := epoch.Add(3 * time.Second)
	until := epoch.Add(60 * time.Second)
	tests := []struct {
		name     string
		attempts []unitAttempt
		circuits []history.CircuitReport
		want     string
	}{
		{
			name: "no failure, no opening",
			attempts: []unitAttempt{
				att("plan", 1, 0, 0, 1, "succeeded", ""),
				att("build", 1, 0, 2, 3, "succeeded", ""),
			},
		},
		{
			name: "a transient failure opens it, the next step's first attempt is the trial",
			attempts: []unitAttempt{
				att("plan", 1, 0, 0, 1, "succeeded", ""),
				att("plan", 2, 0, 2, 3, "failed", "transient"),
				att("build", 1, 2, 8, 9, "succeeded", ""),
			},
			want: "sim 3-8 by plan#2 trial build#1",
		},
		{
			name: "a schema failure does not count against the circuit",
			attempts: []unitAttempt{
				att("plan", 1, 0, 0, 1, "failed", "schema"),
				att("plan", 2, 2, 5, 6, "succeeded", ""),
			},
		},
		{
			name: "map items: a failure that ends after the opening is stale",
			attempts: []unitAttempt{
				att("fix[a]", 1, 0, 0, 1, "failed", "transient"),
				att("fix[b]", 1, 0, 0.5, 3, "failed", "exit_nonzero"),
				att("fix[c]", 1, 2, 5, 6, "succeeded", ""),
				att("fix[a]", 2, 3, 6, 7, "succeeded", ""),
			},
			want: "sim 1-5 by fix[a]#1 trial fix[c]#1",
		},
		{
			name: "a failed trial opens it again",
			attempts: []unitAttempt{
				att("x", 1, 0, 0, 1, "failed", "timeout"),
				att("x", 2, 2, 5, 6, "failed", "stuck"),
				att("x", 3, 4, 10, 11, "succeeded", ""),
			},
			want: "sim 1-5 by x#1 trial x#2; sim 6-10 by x#2 trial x#3",
		},
		{
			name: "resets by hand move generations without an opening",
			attempts: []unitAttempt{
				att("x", 1, 0, 0, 1, "succeeded", ""),
				att("x", 2, 2, 5, 6, "succeeded", ""),
			},
		},
		{
			name: "an advisor's help round is not admitted by the breaker",
			attempts: []unitAttempt{
				att("x", 1, 3, 0, 1, "failed", "help"),
				func() unitAttempt { a := att("x", 2, 0, 1, 2, "succeeded", ""); a.a.Kind = "help"; return a }(),
				att("x", 3, 3, 2, 3, "succeeded", ""),
			},
		},
		{
			name: "a circuit still open: its stored opening, with the failure before it",
			attempts: []unitAttempt{
				att("x", 1, 0, 0, 3, "failed", "transient"),
			},
			circuits: []history.CircuitReport{{Agent: "sim", State: "open", OpenedAt: &opened, OpenUntil: &until}},
			want:     "sim 3-60 by x#1",
		},
		{
			name: "a circuit opened before this run is not this run's",
			attempts: []unitAttempt{
				att("x", 1, 0, 0, 3, "succeeded", ""),
			},
			circuits: []history.CircuitReport{{Agent: "sim", State: "open",
				OpenedAt: ptr(epoch.Add(-2 * time.Hour)), OpenUntil: ptr(epoch.Add(-time.Hour))}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := spellString(inferOpenSpells(tc.attempts, tc.circuits, epoch, t1))
			if got != tc.want {
				t.Errorf("spells %q, want %q", got, tc.want)
			}
		})
	}
}
