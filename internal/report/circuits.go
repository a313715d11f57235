package report

import (
	"sort"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/history"
)

// unitAttempt is one attempt with the unit (step or map item) it belongs
// to: the circuit of an agent is shared by every unit that runs on it.
type unitAttempt struct {
	unit  string // "plan" or "fix[a]"
	agent string
	a     *history.AttemptReport
}

// openSpell is one time an agent's circuit was open, as far as the
// attempts show it.
type openSpell struct {
	agent string
	from  time.Time
	to    time.Time
	// cause is the failed attempt that opened the circuit, nil when only
	// the breaker's stored state shows the opening.
	cause *unitAttempt
	// trial is the half-open trial that ended the spell, nil while the
	// circuit is still open.
	trial *unitAttempt
}

// inferOpenSpells reconstructs when each agent's circuit was open during a
// run. The state database keeps only each breaker's current state, but
// every attempt records the breaker's generation it was admitted under, and
// a generation changes with every transition: closed→open→half-open takes
// two. So an attempt admitted two or more generations after the one before
// it on the same agent is a half-open trial, and the circuit opened when a
// failure that counts against it (transient, exit_nonzero, timeout, stuck,
// a usage limit) ended an attempt of the older generation. No admission
// happens under a generation once the breaker has left it, so the opening
// came after the last attempt of that generation started; the earliest
// counting failure from then on is taken as the one that opened it (exact
// when attempts run one at a time, and for a threshold of one failure).
// A breaker still open now adds the spell its stored state gives.
func inferOpenSpells(attempts []unitAttempt, circuits []history.CircuitReport, t0, t1 time.Time) []openSpell {
	byAgent := map[string][]unitAttempt{}
	var agents []string
	for _, ua := range attempts {
		if ua.a.Kind == checkpoint.KindHelp {
			continue // an advisor's round is not admitted by the step agent's breaker
		}
		if _, ok := byAgent[ua.agent]; !ok {
			agents = append(agents, ua.agent)
		}
		byAgent[ua.agent] = append(byAgent[ua.agent], ua)
	}
	var spells []openSpell
	for _, ag := range agents {
		list := byAgent[ag]
		sort.SliceStable(list, func(i, j int) bool { return list[i].a.StartedAt.Before(list[j].a.StartedAt) })
		spells = append(spells, agentSpells(ag, list)...)
	}
	for _, c := range circuits {
		if c.State != string(circuit.Open) || c.OpenedAt == nil || c.OpenUntil == nil {
			continue
		}
		if c.OpenedAt.After(t1) || c.OpenUntil.Before(t0) {
			continue // an opening that belongs to another run
		}
		if covered(spells, c.Agent, *c.OpenedAt) {
			continue
		}
		spells = append(spells, openSpell{agent: c.Agent, from: *c.OpenedAt, to: *c.OpenUntil,
			cause: lastFailureBefore(byAgent[c.Agent], *c.OpenedAt)})
	}
	return spells
}

// agentSpells finds the open spells of one agent from its attempts in order
// of start.
func agentSpells(agent string, list []unitAttempt) []openSpell {
	var out []openSpell
	for i := 1; i < len(list); i++ {
		prev, cur := list[i-1].a.CircuitGen, list[i].a.CircuitGen
		if cur < prev+2 {
			continue
		}
		// The older generation's attempts: all admitted before the
		// breaker left it.
		var lastStart time.Time
		for _, ua := range list[:i] {
			if ua.a.CircuitGen == prev && ua.a.StartedAt.After(lastStart) {
				lastStart = ua.a.StartedAt
			}
		}
		var cause *unitAttempt
		for j := range list[:i] {
			ua := &list[j]
			a := ua.a
			if a.CircuitGen != prev || a.FinishedAt == nil || !countsAgainst(a) {
				continue
			}
			if a.FinishedAt.Before(lastStart) || a.FinishedAt.After(list[i].a.StartedAt) {
				continue
			}
			if cause == nil || a.FinishedAt.Before(*cause.a.FinishedAt) {
				cause = ua
			}
		}
		if cause == nil {
			continue // the generations moved by hand (circuit reset), not by an opening
		}
		trial := list[i]
		out = append(out, openSpell{agent: agent, from: *cause.a.FinishedAt, to: trial.a.StartedAt, cause: cause, trial: &trial})
	}
	return out
}

// countsAgainst reports whether an attempt's outcome counts as a failure
// for its agent's circuit.
func countsAgainst(a *history.AttemptReport) bool {
	return (a.Status == checkpoint.AttemptFailed || a.Status == checkpoint.AttemptInterrupted) &&
		circuit.OutcomeFor(a.Class) == circuit.Failure
}

// covered reports whether a spell of agent already contains t.
func covered(spells []openSpell, agent string, t time.Time) bool {
	for _, s := range spells {
		if s.agent == agent && !t.Before(s.from) && !t.After(s.to) {
			return true
		}
	}
	return false
}

// lastFailureBefore returns the last counting failure that ended at or
// before t, or nil.
func lastFailureBefore(list []unitAttempt, t time.Time) *unitAttempt {
	var out *unitAttempt
	for j := range list {
		a := list[j].a
		if a.FinishedAt == nil || a.FinishedAt.After(t) || !countsAgainst(a) {
			continue
		}
		if out == nil || a.FinishedAt.After(*out.a.FinishedAt) {
			out = &list[j]
		}
	}
	return out
}
