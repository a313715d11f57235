package attempt

import (
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// testStep retries up to 3 attempts, 10 s then 20 s apart, with jitter
// "full": the delay is the base delay times the draw.
func testStep(onHelp *workflow.OnHelp) *workflow.Step {
	return &workflow.Step{ID: "fix", Agent: "a", OnHelp: onHelp,
		Retry: workflow.Retry{MaxAttempts: 3, Backoff: "exponential", Initial: 10 * time.Second, Multiplier: 2, Max: time.Minute, Jitter: "full"}}
}

// TestDecide has one case per decision that can follow an attempt, and
// the cases that turn a retry into a failure. The expected delays follow
// from the step's retry policy by hand: attempt 1 failed → 10 s × draw.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	later := now.Add(time.Hour)
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 2}
	for _, tt := range []struct {
		name      string
		step      *workflow.Step
		v         verdict
		want      Decision
		next      *time.Time
		uncounted bool
		fresh     bool
	}{
		{name: "a valid handoff succeeds", step: testStep(nil),
			v: verdict{ok: true, used: 1, maxAttempts: 3}, want: Succeed},
		{name: "a schema failure is followed up in the session after the backoff", step: testStep(nil),
			v: verdict{class: handoff.ClassSchema, used: 1, maxAttempts: 3, jitter: 0.5}, want: RetryFollowup, next: at(5 * time.Second)},
		{name: "a failed check is followed up too", step: testStep(nil),
			v: verdict{class: handoff.ClassCheck, used: 2, maxAttempts: 3, jitter: 1}, want: RetryFollowup, next: at(20 * time.Second)},
		{name: "a transient error asks the task again in the session", step: testStep(nil),
			v: verdict{class: handoff.ClassTransient, used: 1, maxAttempts: 3, jitter: 1}, want: RetryInSession, next: at(10 * time.Second)},
		{name: "a retry-after longer than the backoff wins", step: testStep(nil),
			v: verdict{class: handoff.ClassTransient, used: 1, maxAttempts: 3, jitter: 0, retryAfter: 30 * time.Second}, want: RetryInSession, next: at(30 * time.Second)},
		{name: "a timeout starts a fresh session", step: testStep(nil),
			v: verdict{class: handoff.ClassTimeout, fresh: true, used: 1, maxAttempts: 3, jitter: 1}, want: RetryFresh, next: at(10 * time.Second), fresh: true},
		{name: "a lost session after a schema failure starts a fresh one", step: testStep(nil),
			v: verdict{class: handoff.ClassSchema, fresh: true, used: 1, maxAttempts: 3, jitter: 1}, want: RetryFresh, next: at(10 * time.Second), fresh: true},
		{name: "a help request with rounds left runs the advisor, no delay", step: testStep(help),
			v: verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3, helpRounds: 1}, want: HelpRound},
		{name: "a usage limit waits for its reset, uncounted", step: testStep(nil),
			v:    verdict{class: handoff.ClassTransient, used: 3, maxAttempts: 3, resetAt: now.Add(2 * time.Hour), jitter: 1},
			want: WaitUsageLimit, next: at(2 * time.Hour), uncounted: true},
		{name: "the committed deadline is never moved earlier", step: testStep(nil),
			v: verdict{class: handoff.ClassSchema, used: 1, maxAttempts: 3, jitter: 1, prevNext: &later}, want: RetryFollowup, next: &later},
		{name: "interrupted by cadence is a stop, uncounted", step: testStep(nil),
			v: verdict{class: handoff.ClassInterrupted, used: 1, maxAttempts: 3}, want: Stop, uncounted: true},
		{name: "a failed login stops the run until someone logs in, uncounted", step: testStep(nil),
			v: verdict{class: handoff.ClassAuth, permanent: true, used: 1, maxAttempts: 3}, want: WaitLogin, uncounted: true},
		{name: "the last attempt failing fails the step", step: testStep(nil),
			v: verdict{class: handoff.ClassSchema, used: 3, maxAttempts: 3}, want: Fail},
		{name: "a permanent failure is not retried", step: testStep(nil),
			v: verdict{class: handoff.ClassExitNonzero, permanent: true, used: 1, maxAttempts: 3}, want: Fail},
		{name: "a class never retried fails at once", step: testStep(nil),
			v: verdict{class: handoff.ClassConfig, used: 1, maxAttempts: 3}, want: Fail},
		{name: "help without on_help fails", step: testStep(nil),
			v: verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3}, want: Fail},
		{name: "help after every round fails", step: testStep(help),
			v: verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3, helpRounds: 2}, want: Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.v.now = now
			d := decide(tt.step, tt.v)
			if d.Decision != tt.want || d.uncounted != tt.uncounted || d.fresh != tt.fresh {
				t.Fatalf("decide = %v (uncounted %v, fresh %v), want %v (uncounted %v, fresh %v)",
					d.Decision, d.uncounted, d.fresh, tt.want, tt.uncounted, tt.fresh)
			}
			switch {
			case tt.next == nil && d.next != nil:
				t.Fatalf("next attempt at %v, want none scheduled", d.next)
			case tt.next != nil && (d.next == nil || !d.next.Equal(*tt.next)):
				t.Fatalf("next attempt at %v, want %v", d.next, tt.next)
			}
		})
	}
}

// TestFailMessage says why a step failed, in the words of the step failed
// event.
func TestFailMessage(t *testing.T) {
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 2}
	for _, tt := range []struct {
		step *workflow.Step
		v    verdict
		want string
	}{
		{testStep(nil), verdict{class: handoff.ClassSchema, used: 3, maxAttempts: 3}, "E after 3 of 3 attempts"},
		{testStep(nil), verdict{class: handoff.ClassTransient, used: 3, maxAttempts: 3, resetAt: time.Unix(1, 0)}, "E after 2 of 3 attempts"},
		{testStep(nil), verdict{class: handoff.ClassExitNonzero, permanent: true, used: 1, maxAttempts: 3}, "E (not retried: the agent reported a permanent failure)"},
		{testStep(help), verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3, helpRounds: 2}, "E (all 2 help rounds used)"},
		{testStep(nil), verdict{class: handoff.ClassHelp, used: 1, maxAttempts: 3}, "E"},
		{testStep(nil), verdict{class: handoff.ClassConfig, used: 1, maxAttempts: 3}, "E (class config is not retried)"},
	} {
		if got := failMessage(tt.step, tt.v, "E"); got != tt.want {
			t.Errorf("failMessage(%+v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestNextAction has one case per thing an instance can do next.
func TestNextAction(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	soon, past := now.Add(time.Minute), now.Add(-time.Minute)
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 2}
	states := checkpointtest.New(t)
	failed := func(class string) *checkpoint.Attempt {
		return new(states.Attempt(checkpoint.Attempt{N: 1, Class: class}, checkpoint.AttemptFailed))
	}
	limit := new(states.Attempt(checkpoint.Attempt{N: 1, Class: string(handoff.ClassTransient), Uncounted: true}, checkpoint.AttemptFailed))
	step := func(status checkpoint.StepStatus, next *time.Time) *checkpoint.Step {
		return new(states.Step(checkpoint.Step{MaxAttempts: 3, NextRetryAt: next}, status))
	}
	for _, tt := range []struct {
		name   string
		ws     *workflow.Step
		s      unitState
		want   nextKind
		reason string
	}{
		{"a new step runs its first attempt", testStep(nil), unitState{step: step(checkpoint.StepPending, nil)}, nextAttempt, ""},
		{"a succeeded step is done", testStep(nil), unitState{step: step(checkpoint.StepSucceeded, nil)}, nextDone, ""},
		{"a failed step stays failed", testStep(nil), unitState{step: step(checkpoint.StepFailed, nil)}, nextFailed, ""},
		{"attempts used up fail the step", testStep(nil), unitState{step: step(checkpoint.StepWaiting, nil), last: failed("schema"), used: 3}, nextFail, ""},
		{"a class not retried fails the step", testStep(nil), unitState{step: step(checkpoint.StepWaiting, nil), last: failed("config"), used: 1}, nextFail, ""},
		{"a help request without on_help fails the step", testStep(nil), unitState{step: step(checkpoint.StepWaiting, nil), last: failed("help"), used: 1, needsAdvice: true}, nextFail, ""},
		{"a help request runs the advisor", testStep(help), unitState{step: step(checkpoint.StepWaiting, nil), last: failed("help"), used: 1, needsAdvice: true}, nextHelp, ""},
		{"a backoff not over is waited for", testStep(nil), unitState{step: step(checkpoint.StepWaiting, &soon), last: failed("schema"), used: 1}, nextWait, "backoff"},
		{"a usage limit not reset is waited for", testStep(nil), unitState{step: step(checkpoint.StepWaiting, &soon), last: limit, used: 0}, nextWait, "usage limit"},
		{"a backoff over runs the retry", testStep(nil), unitState{step: step(checkpoint.StepWaiting, &past), last: failed("schema"), used: 1}, nextAttempt, ""},
		{"a budget stop is decided again", testStep(nil), unitState{step: step(checkpoint.StepPending, nil), last: failed("budget"), used: 1}, nextAttempt, ""},
		{"a failed login is tried again on resume", testStep(nil), unitState{step: step(checkpoint.StepPending, nil), last: failed("auth"), used: 0}, nextAttempt, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := nextAction(tt.ws, tt.s, now)
			if got.kind != tt.want || got.reason != tt.reason {
				t.Fatalf("nextAction = %+v, want kind %d reason %q", got, tt.want, tt.reason)
			}
		})
	}
}

// TestNextActionFallback has one case per way the agent entry of a step
// ("a", whose fallback is "b") can or cannot serve, and per state of the
// fallback (SPEC §17).
func TestNextActionFallback(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	soon, later := now.Add(time.Minute), now.Add(time.Hour)
	ws := func(after time.Duration) *workflow.Step {
		s := testStep(nil)
		s.FallbackAfter = after
		return s
	}
	states := checkpointtest.New(t)
	on := func(agent, class string, uncounted bool) *checkpoint.Attempt {
		return new(states.Attempt(checkpoint.Attempt{N: 1, Agent: agent, Class: class, Uncounted: uncounted}, checkpoint.AttemptFailed))
	}
	limitA := on("a", string(handoff.ClassTransient), true)
	waiting := func(until *time.Time) *checkpoint.Step {
		return new(states.Step(checkpoint.Step{Agent: "a", MaxAttempts: 3, NextRetryAt: until}, checkpoint.StepWaiting))
	}
	pending := func(agent string) *checkpoint.Step {
		return new(states.Step(checkpoint.Step{Agent: agent, MaxAttempts: 3}, checkpoint.StepPending))
	}
	state := func(st *checkpoint.Step, last *checkpoint.Attempt, used int, e entries) unitState {
		if e.current == "" {
			e.current = st.Agent
		}
		return unitState{step: st, last: last, used: used, entries: e, candidates: []string{"a", "b"}}
	}
	open := func(name string, until time.Time) map[string]time.Time { return map[string]time.Time{name: until} }
	for _, tt := range []struct {
		name  string
		ws    *workflow.Step
		s     unitState
		want  nextKind
		agent string
	}{
		{"a usage limit moves to the fallback at once by default", ws(0),
			state(waiting(&soon), limitA, 0, entries{openUntil: open("a", soon)}), nextFallback, "b"},
		{"a usage limit shorter than fallback_after is waited for", ws(10 * time.Minute),
			state(waiting(&soon), limitA, 0, entries{openUntil: open("a", soon)}), nextWait, ""},
		{"a usage limit longer than fallback_after moves", ws(10 * time.Minute),
			state(waiting(&later), limitA, 0, entries{openUntil: open("a", later)}), nextFallback, "b"},
		{"a usage limit is waited for when the fallback's circuit is open", ws(0),
			state(waiting(&soon), limitA, 0, entries{openUntil: map[string]time.Time{"a": soon, "b": later}}), nextWait, ""},
		{"a failed login moves to the fallback", ws(0),
			state(pending("a"), on("a", "auth", true), 0,
				entries{loggedOut: map[string]bool{"a": true}}), nextFallback, "b"},
		{"a failed login is tried again when the fallback's failed too", ws(0),
			state(pending("a"), on("a", "auth", true), 0,
				entries{loggedOut: map[string]bool{"a": true, "b": true}}), nextAttempt, ""},
		{"an open circuit moves to the fallback", ws(0),
			state(waiting(&soon), on("a", "overloaded", false), 1, entries{openUntil: open("a", later)}), nextFallback, "b"},
		{"a backoff on a closed circuit is waited for", ws(0),
			state(waiting(&soon), on("a", "overloaded", false), 1, entries{}), nextWait, ""},
		{"a circuit open for less than fallback_after is waited for", ws(10 * time.Minute),
			state(waiting(nil), on("a", "overloaded", false), 1, entries{openUntil: open("a", soon)}), nextAttempt, ""},
		{"the step on its fallback runs there", ws(0),
			state(pending("b"), limitA, 0,
				entries{openUntil: open("a", later)}), nextAttempt, ""},
		{"the fallback limited in turn goes back to the agent once it can serve", ws(0),
			state(waiting(&soon), on("b", string(handoff.ClassTransient), true), 0,
				entries{current: "b", openUntil: open("b", soon)}), nextFallback, "a"},
		{"attempts used up fail the step before any fallback", ws(0),
			state(waiting(&soon), on("a", "overloaded", false), 3, entries{openUntil: open("a", later)}), nextFail, ""},
		{"a command step has no fallback", ws(0),
			unitState{step: waiting(&soon), last: limitA, entries: entries{openUntil: open("a", later)}}, nextWait, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := nextAction(tt.ws, tt.s, now)
			if got.kind != tt.want || got.agent != tt.agent {
				t.Fatalf("nextAction = %+v, want kind %d agent %q", got, tt.want, tt.agent)
			}
		})
	}
}

// TestFallbackCandidates: the current entry's list first, then the step's
// own agent and its list, each once, unknown names left out.
func TestFallbackCandidates(t *testing.T) {
	w := &workflow.Workflow{Agents: map[string]*workflow.Agent{
		"a": {Name: "a", Fallback: []string{"b", "c"}},
		"b": {Name: "b", Fallback: []string{"d", "a"}},
		"c": {Name: "c"},
		"d": {Name: "d"},
	}}
	ws := &workflow.Step{ID: "fix", Agent: "a"}
	for _, tt := range []struct {
		current string
		want    string
	}{
		{"a", "b c a"},
		{"b", "d a b c"},
		{"c", "a b c"},
	} {
		if got := strings.Join(fallbackCandidates(w, ws, tt.current), " "); got != tt.want {
			t.Errorf("fallbackCandidates(%s) = %q, want %q", tt.current, got, tt.want)
		}
	}
	if got := fallbackCandidates(w, &workflow.Step{ID: "cmd"}, ""); got != nil {
		t.Errorf("a command step: %v, want none", got)
	}
}

// TestCurrentAgent: the step row's entry is used when the step's agent
// reaches it through fallback lists; a row naming another entry (the
// workflow changed the step's agent since) or none runs on the step's own.
func TestCurrentAgent(t *testing.T) {
	w := &workflow.Workflow{Agents: map[string]*workflow.Agent{
		"a": {Name: "a", Fallback: []string{"b"}},
		"b": {Name: "b", Fallback: []string{"c"}},
		"c": {Name: "c"},
		"x": {Name: "x"},
	}}
	for _, tt := range []struct{ stepAgent, row, want string }{
		{"a", "a", "a"},
		{"a", "b", "b"},
		{"a", "c", "c"},
		{"a", "x", "a"},
		{"a", "", "a"},
		{"a", "gone", "a"},
		{"b", "a", "b"},
		{"", "a", ""},
	} {
		ws := &workflow.Step{ID: "s", Agent: tt.stepAgent}
		if got := currentAgent(w, ws, &checkpoint.Step{Agent: tt.row}); got != tt.want {
			t.Errorf("step agent %q, row %q: %q, want %q", tt.stepAgent, tt.row, got, tt.want)
		}
	}
}
