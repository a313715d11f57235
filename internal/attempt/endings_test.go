package attempt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Every decision has its ending, and the endings are the SPEC's: a
// success, a retry (three kinds of next attempt, one ending), a wait for a
// usage limit's reset, a help round, a failure, a login needed, a stop.
func TestEndOf(t *testing.T) {
	want := map[Decision]end{
		Succeed:        endSucceeded,
		RetryFollowup:  endRetry,
		RetryInSession: endRetry,
		RetryFresh:     endRetry,
		HelpRound:      endHelp,
		WaitUsageLimit: endUsageLimit,
		Fail:           endFailed,
		Stop:           endStopped,
		WaitLogin:      endLoginNeeded,
	}
	if len(want) != len(decisionNames) {
		t.Fatalf("the table has %d decisions, decide has %d: a decision without its ending", len(want), len(decisionNames))
	}
	seen := map[end]bool{}
	for d, e := range want {
		if got := endOf(d); got != e {
			t.Errorf("endOf(%s) = %s, want %s", d, got, e)
		}
		seen[e] = true
	}
	// The other endings are those of an attempt a crash left running and
	// of an advisor's round.
	for _, e := range []end{endAdopted, endInterrupted, endAdvised} {
		if seen[e] {
			t.Errorf("decision leads to %s, an ending of settling or of a help round", e)
		}
		seen[e] = true
	}
	if len(seen) != len(endNames) {
		t.Errorf("%d endings reached, %d named: an ending no path leads to", len(seen), len(endNames))
	}
}

// TestEndingTransaction commits each ending, through the one switch
// (try.ending) and finish, on a running attempt in a real state file, and
// reads back the attempt's and the step's status, the session the step
// continues and whether the agent's circuit was told. The statuses are
// SPEC §7's (adopted, interrupted) and §6's; an advisor's round tells the
// step's agent's circuit nothing and leaves the step's session alone.
func TestEndingTransaction(t *testing.T) {
	for _, tt := range []struct {
		e       end
		from    checkpoint.StepStatus // the step's status before
		attempt checkpoint.AttemptStatus
		step    checkpoint.StepStatus
		session string // the step's session after ("s-1" before, "s-2" the attempt's)
		circuit bool   // the circuit's row was written
		helpRnd int
	}{
		{endSucceeded, checkpoint.StepRunning, checkpoint.AttemptSucceeded, checkpoint.StepSucceeded, "s-2", true, 0},
		{endRetry, checkpoint.StepRunning, checkpoint.AttemptFailed, checkpoint.StepWaiting, "s-2", true, 0},
		{endUsageLimit, checkpoint.StepRunning, checkpoint.AttemptFailed, checkpoint.StepWaiting, "s-2", true, 0},
		{endHelp, checkpoint.StepRunning, checkpoint.AttemptFailed, checkpoint.StepWaiting, "s-2", true, 0},
		{endFailed, checkpoint.StepRunning, checkpoint.AttemptFailed, checkpoint.StepFailed, "s-2", true, 0},
		{endLoginNeeded, checkpoint.StepRunning, checkpoint.AttemptFailed, checkpoint.StepPending, "s-2", true, 0},
		{endStopped, checkpoint.StepRunning, checkpoint.AttemptInterrupted, checkpoint.StepPending, "s-2", true, 0},
		{endAdopted, checkpoint.StepRunning, checkpoint.AttemptAdopted, checkpoint.StepSucceeded, "s-1", true, 0},
		{endInterrupted, checkpoint.StepRunning, checkpoint.AttemptInterrupted, checkpoint.StepPending, "s-1", true, 0},
		{endAdvised, checkpoint.StepWaiting, checkpoint.AttemptSucceeded, checkpoint.StepWaiting, "s-1", false, 1},
	} {
		t.Run(tt.e.String(), func(t *testing.T) {
			ws := judgeStep(t, &workflow.OnHelp{Agent: "advisor", MaxRounds: 2}, false)
			kind := checkpoint.KindInitial
			if tt.e == endAdvised {
				kind = checkpoint.KindHelp
			}
			f := newOutcomeFixture(t, ws, tt.from, nil, kind)
			tr := f.try(t)
			tr.round = tt.helpRnd
			f.row.SessionID, f.row.FinishedAt = "s-2", &f.now
			err := f.r.Store.Update(t.Context(), func(tx *checkpoint.Tx) error {
				return f.r.finish(tx, tr, tr.ending(tt.e, endFacts{class: "schema", envelope: []byte(`{"data": {"ok": true}}`), advice: "use sqlite"}, f.now), f.now)
			})
			if err != nil {
				t.Fatalf("%s: %v", tt.e, err)
			}
			got, s := f.committed(t)
			if got.attempt != tt.attempt || got.step != tt.step || s.SessionID != tt.session {
				t.Errorf("attempt %s, step %s, session %s; want %s, %s, %s", got.attempt, got.step, s.SessionID, tt.attempt, tt.step, tt.session)
			}
			if s.HelpRounds != tt.helpRnd || (tt.e == endAdvised) != (s.Advice == "use sqlite") {
				t.Errorf("%d help rounds, advice %q", s.HelpRounds, s.Advice)
			}
			err = f.r.Store.View(t.Context(), func(tx *checkpoint.Tx) error {
				_, err := tx.Circuit("a")
				return err
			})
			if told := err == nil; told != tt.circuit || (err != nil && !errors.Is(err, checkpoint.ErrNotFound)) {
				t.Errorf("circuit told %v (%v), want %v", told, err, tt.circuit)
			}
		})
	}
	// An end no transaction is written for is an error, never a panic.
	f := newOutcomeFixture(t, judgeStep(t, nil, false), checkpoint.StepRunning, nil, checkpoint.KindInitial)
	tr := f.try(t)
	err := f.r.Store.Update(t.Context(), func(tx *checkpoint.Tx) error {
		return f.r.finish(tx, tr, tr.ending(end(len(endNames)), endFacts{}, f.now), f.now)
	})
	if err == nil || !strings.Contains(err.Error(), "no transaction ends an attempt") {
		t.Errorf("an unknown end committed: %v", err)
	}
}

// From the judged verdict to the ending, through decide: whether the
// attempt counts, whether the step waits for a next attempt of its own
// (with a deadline) or ends or stops. The cases are the ones a run meets.
func TestVerdictToEnding(t *testing.T) {
	now := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	reset := now.Add(2 * time.Hour)
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 1}
	for _, tt := range []struct {
		name      string
		onHelp    *workflow.OnHelp
		v         verdict
		want      end
		uncounted bool
	}{
		{name: "accepted", v: verdict{ok: true, used: 1, maxAttempts: 3}, want: endSucceeded},
		{name: "accepted on the last attempt", v: verdict{ok: true, used: 3, maxAttempts: 3}, want: endSucceeded},
		{name: "off its schema, attempts left", v: verdict{class: handoff.ClassSchema, used: 1, maxAttempts: 3}, want: endRetry},
		{name: "off its schema, the last attempt", v: verdict{class: handoff.ClassSchema, used: 3, maxAttempts: 3}, want: endFailed},
		{name: "timed out: a fresh session next", v: verdict{class: handoff.ClassTimeout, fresh: true, used: 1, maxAttempts: 3}, want: endRetry},
		{name: "a permanent failure", v: verdict{class: handoff.ClassExitNonzero, permanent: true, used: 1, maxAttempts: 3}, want: endFailed},
		{name: "a class not retried", v: verdict{class: handoff.ClassConfig, used: 1, maxAttempts: 3}, want: endFailed},
		{name: "a usage limit with its reset, even on the last attempt",
			v: verdict{class: handoff.ClassTransient, resetAt: reset, used: 3, maxAttempts: 3, now: now}, want: endUsageLimit, uncounted: true},
		{name: "help asked, a round left", onHelp: help, v: verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3}, want: endHelp},
		{name: "help asked, no round left", onHelp: help, v: verdict{class: handoff.ClassHelp, helpRounds: 1, used: 1, maxAttempts: 3}, want: endFailed},
		{name: "help asked without on_help", v: verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3}, want: endFailed},
		{name: "the login failed", v: verdict{class: handoff.ClassAuth, permanent: true, used: 1, maxAttempts: 3}, want: endLoginNeeded, uncounted: true},
		{name: "stopped by the operator", v: verdict{class: handoff.ClassInterrupted, used: 3, maxAttempts: 3}, want: endStopped, uncounted: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(testStep(tt.onHelp), tt.v)
			e := endOf(d.Decision)
			if e != tt.want {
				t.Fatalf("decision %s ends the attempt %s, want %s", d.Decision, e, tt.want)
			}
			if d.uncounted != tt.uncounted {
				t.Errorf("uncounted = %v, want %v", d.uncounted, tt.uncounted)
			}
			// A step that waits has the deadline it waits for; one that
			// does not has none.
			if e.stepWaits() != (d.next != nil) && e != endHelp {
				t.Errorf("%s: step waits %v, deadline %v", e, e.stepWaits(), d.next)
			}
		})
	}
}
