package attempt

import (
	"testing"
	"time"

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
	if len(seen) != len(endNames) {
		t.Errorf("%d endings reached from the decisions, %d named: an ending no decision leads to", len(seen), len(endNames))
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
