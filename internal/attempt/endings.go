package attempt

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
)

// end is how an attempt ends, as its outcome records it: the one list
// every path that ends an attempt names its ending from (the normal path
// through the decisions after an attempt, decide; an attempt a crash left
// running, settled on resume; an advisor's help round), so that the
// outcome's transaction (try.ending) is chosen by one switch over the same
// names, and what the step does next and what the run is told by switches
// over them.
type end int

const (
	// endSucceeded: the handoff (and its checks) passed; the attempt and
	// the step succeed.
	endSucceeded end = iota
	// endRetry: a counted failure; the step waits for its next attempt
	// until the backoff's deadline.
	endRetry
	// endUsageLimit: a usage limit with a reset time; the failure does not
	// count, and the step waits for the reset.
	endUsageLimit
	// endHelp: the agent asked for help; the step waits for the advisor's
	// round.
	endHelp
	// endFailed: no retry; the attempt fails and so does the step.
	endFailed
	// endLoginNeeded: the agent's login failed; the failure does not
	// count, and the run stops, resumable, until someone logs in (or a
	// fallback serves).
	endLoginNeeded
	// endStopped: cadence stopped the attempt itself; it does not count,
	// and the step runs again when the run does.
	endStopped
	// endAdopted: a crash left the attempt running after its handoff had
	// landed (G5); it succeeds, adopted, with no new execution, and so
	// does the step.
	endAdopted
	// endInterrupted: a crash left the attempt running and no handoff of
	// it landed (G5); it counts, a half-open circuit trial it held fails,
	// and the step runs again when the run does.
	endInterrupted
	// endAdvised: an advisor's help round answered; its advice is stored
	// on the step for the next attempt, which continues the session.
	endAdvised
)

var endNames = [...]string{"succeeded", "retry", "usage_limit", "help", "failed", "login_needed", "stopped",
	"adopted", "interrupted", "advised"}

func (e end) String() string {
	if e < 0 || int(e) >= len(endNames) {
		return fmt.Sprintf("end(%d)", int(e))
	}
	return endNames[e]
}

// endOf is the ending a decision gives an attempt.
func endOf(d Decision) end {
	switch d {
	case Succeed:
		return endSucceeded
	case RetryFollowup, RetryInSession, RetryFresh:
		return endRetry
	case WaitUsageLimit:
		return endUsageLimit
	case HelpRound:
		return endHelp
	case Stop:
		return endStopped
	case WaitLogin:
		return endLoginNeeded
	}
	return endFailed
}

// stepWaits reports whether the step, after an attempt that ended so,
// waits for a next attempt of its own (its row's next_retry_at): a
// retry, a usage limit or a help round.
func (e end) stepWaits() bool { return e == endRetry || e == endUsageLimit || e == endHelp }

// ending is how an attempt's outcome is written, in one transaction: the
// attempt's named transition, what it tells its agent's circuit, and the
// step's named transition. try.ending builds it from the attempt's end;
// finish writes it.
type ending struct {
	attempt func(tx *checkpoint.Tx, a *checkpoint.Attempt) error
	// outcome is what the attempt tells the circuit. crashed says the
	// attempt was cut short by a crash: a half-open trial it held fails,
	// and nothing else changes (outcome is ignored).
	outcome circuit.Outcome
	crashed bool
	// noCircuit says the attempt tells no circuit: an advisor's round
	// says nothing of the step's agent.
	noCircuit bool
	// resetAt, when set, keeps the circuit open until a usage limit
	// resets.
	resetAt time.Time
	// usage adds the attempt's usage to the step, and, unless keepSession,
	// the session the agent reported: the one the step continues.
	usage, keepSession bool
	step               func(tx *checkpoint.Tx, s *checkpoint.Step) error
	// row is the unit's row as its transaction read it, when it did:
	// finish reads it otherwise.
	row *checkpoint.Step
}

// endFacts is what the transaction of an ending needs besides its name.
type endFacts struct {
	class    string    // the attempt's class: what it tells its agent's circuit
	envelope []byte    // endSucceeded, endAdopted: the accepted handoff's envelope
	resetAt  time.Time // a usage limit's reset: its agent's circuit stays open until then
	fresh    bool      // a failed attempt's step starts its next session afresh
	advice   string    // endAdvised: the advisor's answer
	// row is the unit's row, read in the ending's transaction before
	// anything in it was written (nil: finish reads it).
	row *checkpoint.Step
}

// ending is the transaction of the attempt's end e at now: the one switch
// over the endings through which every path that ends an attempt commits
// it (finish).
func (t *try) ending(e end, f endFacts, now time.Time) ending {
	// An advisor's round being run keeps the step's session and its
	// agent's circuit as they are.
	advisor := t.round > 0
	x := ending{outcome: circuit.OutcomeFor(f.class), usage: true, noCircuit: advisor, keepSession: advisor, row: f.row}
	switch e {
	case endSucceeded, endAdopted:
		adopted := e == endAdopted || t.settling
		x.attempt = func(tx *checkpoint.Tx, a *checkpoint.Attempt) error { return tx.AttemptSucceeded(a, adopted) }
		// An adopted attempt's usage was never reported.
		x.outcome, x.usage = circuit.Success, e == endSucceeded
		x.step = func(tx *checkpoint.Tx, s *checkpoint.Step) error { return tx.StepSucceeded(s, f.envelope, now) }
	case endAdvised:
		x.attempt = func(tx *checkpoint.Tx, a *checkpoint.Attempt) error { return tx.AttemptSucceeded(a, false) }
		x.step = func(tx *checkpoint.Tx, s *checkpoint.Step) error {
			s.Advice = f.advice
			s.HelpRounds++
			return tx.UpdateStep(*s)
		}
	case endStopped, endInterrupted:
		x.attempt = (*checkpoint.Tx).AttemptInterrupted
		// A crash's attempt reported no usage.
		x.crashed, x.usage = e == endInterrupted, e == endStopped
		x.step = func(tx *checkpoint.Tx, s *checkpoint.Step) error { return tx.StepInterrupted(s, now) }
	case endRetry, endUsageLimit, endHelp, endFailed, endLoginNeeded:
		x.attempt, x.resetAt = (*checkpoint.Tx).AttemptFailed, f.resetAt
		x.step = func(tx *checkpoint.Tx, s *checkpoint.Step) error {
			if !advisor {
				s.FreshSession = f.fresh
			}
			switch {
			case e.stepWaits():
				return tx.StepWaiting(s, t.row.NextRetryAt, t.row.DelayMS, now)
			case e == endLoginNeeded:
				return tx.StepInterrupted(s, now)
			}
			return tx.StepFailed(s, now)
		}
	default:
		fail := func() error { return fmt.Errorf("attempt %d: no transaction ends an attempt %s", t.row.N, e) }
		x.attempt = func(*checkpoint.Tx, *checkpoint.Attempt) error { return fail() }
		x.step = func(*checkpoint.Tx, *checkpoint.Step) error { return fail() }
	}
	return x
}

// finish writes an attempt's ending in the caller's transaction.
func (r *Runner) finish(tx *checkpoint.Tx, t *try, e ending, now time.Time) error {
	a, agentName := t.row, t.plan.agent
	if err := e.attempt(tx, a); err != nil {
		return err
	}
	if agentName != "" && !e.noCircuit { // a command step has no agent and no circuit
		if err := t.recordCircuit(tx, e, now); err != nil {
			return err
		}
	}
	s := e.row
	if s == nil {
		var err error
		if s, err = tx.Unit(t.in.Unit()); err != nil {
			return err
		}
	}
	if e.usage {
		addUsage(s, a)
		if a.SessionID != "" && !e.keepSession {
			s.SessionID = a.SessionID
		}
	}
	s.UpdatedAt = now
	return e.step(tx, s)
}

// recordCircuit applies the attempt's ending to its agent's breaker.
func (t *try) recordCircuit(tx *checkpoint.Tx, e ending, now time.Time) error {
	r, a, agentName := t.r, t.row, t.plan.agent
	b, err := r.agentBreaker(tx, agentName, now)
	if err != nil {
		return err
	}
	outcome := e.outcome
	if e.crashed {
		outcome = circuit.Neutral
		if b.State == circuit.HalfOpen && b.Generation == a.CircuitGen {
			outcome = circuit.Failure
		}
	}
	next := circuit.Record(b.Breaker, r.circuitConfig(agentName), a.CircuitGen, outcome, now)
	if !e.resetAt.IsZero() && e.resetAt.After(now) {
		next = circuit.OpenUntilTime(next, e.resetAt, now)
	}
	return putBreaker(tx, b, next, now)
}
