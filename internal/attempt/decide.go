package attempt

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// The decisions, before and after an attempt, are pure functions of the
// committed state and the judged outcome: no I/O, no clock, no random
// source of their own, so that every path that takes one (the run loop, a
// resume after a crash, a worker on another machine) takes the same, and a
// table of cases tests each.

// nextKind is what an instance does next, decided before an attempt.
type nextKind int

const (
	nextAttempt  nextKind = iota // run an attempt now
	nextDone                     // it succeeded
	nextFailed                   // it failed, already recorded
	nextFail                     // it fails now, for the reason given
	nextHelp                     // run the advisor's help round
	nextWait                     // wait for the committed deadline first
	nextFallback                 // move to the fallback agent entry named
)

// next is the decision before an attempt.
type next struct {
	kind   nextKind
	why    string    // nextFail
	until  time.Time // nextWait
	reason string    // nextWait: "backoff" or "usage limit"
	agent  string    // nextFallback
}

// nextAction decides what an instance does next from its committed state.
func nextAction(ws *workflow.Step, s unitState, now time.Time) next {
	switch s.step.Status() {
	case checkpoint.StepSucceeded:
		return next{kind: nextDone}
	case checkpoint.StepFailed:
		return next{kind: nextFailed}
	}
	last := s.last
	failed := last != nil && last.Status() == checkpoint.AttemptFailed
	askedHelp := failed && last.Class == string(handoff.ClassHelp)
	switch {
	case askedHelp && ws.OnHelp == nil:
		return next{kind: nextFail, why: "the agent asked for help and the step has no on_help"}
	case askedHelp && s.needsAdvice && s.step.HelpRounds >= ws.OnHelp.MaxRounds:
		return next{kind: nextFail, why: fmt.Sprintf("the agent asked for help again after all %d help rounds", ws.OnHelp.MaxRounds)}
	case !askedHelp && failed && last.Class != string(handoff.ClassBudget) && last.Class != string(handoff.ClassAuth) &&
		!policyFor(ws.Retry).Retryable(last.Class):
		// A budget stop is decided again, against the budget now in
		// force; a failed login is tried again once someone logged in.
		return next{kind: nextFail, why: fmt.Sprintf("class %s is not retried", last.Class)}
	case s.used >= s.step.MaxAttempts:
		return next{kind: nextFail, why: fmt.Sprintf("all %d attempts used", s.step.MaxAttempts)}
	case askedHelp && s.needsAdvice:
		return next{kind: nextHelp}
	}
	limited := last != nil && last.Uncounted && last.Class == string(handoff.ClassTransient)
	if to := fallbackTo(ws, s, limited, now); to != "" {
		return next{kind: nextFallback, agent: to}
	}
	if s.step.NextRetryAt != nil && now.Before(*s.step.NextRetryAt) {
		reason := "backoff"
		if limited {
			reason = "usage limit"
		}
		return next{kind: nextWait, until: *s.step.NextRetryAt, reason: reason}
	}
	return next{kind: nextAttempt}
}

// entries is what the committed state says of the agent entries a step
// may run on: which one its next attempt runs on, and which cannot serve.
type entries struct {
	// current is the entry the step's next attempt runs on (its row's
	// agent); "" for a command step.
	current string
	// openUntil holds, for each entry whose circuit is open, when it
	// closes; a usage limit keeps an entry's circuit open until its reset.
	openUntil map[string]time.Time
	// loggedOut names the entries whose latest attempt of the instance
	// failed its login (class auth).
	loggedOut map[string]bool
}

// fallbackTo names the entry the step's next attempt moves to because the
// current one cannot serve (SPEC §17), or "" when it stays. The current
// entry cannot serve when its login failed, or when it is blocked (its
// circuit open, or the step waiting for its usage limit to reset, limited)
// for longer than the step's fallback_after. It moves to the first entry
// that can serve of the current entry's fallback list, then of the step's
// own agent and its list: a step whose fallback is blocked in turn may go
// on down the list, or back to its own agent once that can serve again.
func fallbackTo(ws *workflow.Step, s unitState, limited bool, now time.Time) string {
	e := s.entries
	if e.current == "" {
		return ""
	}
	last := s.last
	authFailed := last != nil && last.Status() == checkpoint.AttemptFailed && last.Class == string(handoff.ClassAuth) &&
		attemptAgent(last, ws) == e.current
	var blocked time.Time
	if until, open := e.openUntil[e.current]; open {
		blocked = until
	}
	if limited && s.step.NextRetryAt != nil && s.step.NextRetryAt.After(blocked) {
		blocked = *s.step.NextRetryAt
	}
	if !authFailed && !e.loggedOut[e.current] && !blocked.After(now.Add(ws.FallbackAfter)) {
		return ""
	}
	for _, name := range s.candidates {
		if name == e.current || e.loggedOut[name] {
			continue
		}
		if until, open := e.openUntil[name]; open && until.After(now) {
			continue
		}
		return name
	}
	return ""
}

// fallbackCandidates lists the entries a step whose next attempt runs on
// current may move to, in order: current's fallback list, then the step's
// own agent and its list, each once.
func fallbackCandidates(w *workflow.Workflow, ws *workflow.Step, current string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] && w.Agents[name] != nil {
			seen[name] = true
			out = append(out, name)
		}
	}
	if ag := w.Agents[current]; ag != nil {
		for _, f := range ag.Fallback {
			add(f)
		}
	}
	add(ws.Agent)
	if ag := w.Agents[ws.Agent]; ag != nil {
		for _, f := range ag.Fallback {
			add(f)
		}
	}
	return out
}

// attemptAgent is the agent entry that ran attempt a of step ws: the one
// recorded, or the step's own for a row written before attempts recorded
// it.
func attemptAgent(a *checkpoint.Attempt, ws *workflow.Step) string {
	if a.Agent != "" {
		return a.Agent
	}
	return ws.Agent
}

// Decision is what follows a finished attempt.
type Decision int

const (
	// Succeed: the handoff (and its checks) passed; the step succeeds.
	Succeed Decision = iota
	// RetryFollowup: the agent answered badly; after a delay the next
	// attempt continues its session with a follow-up saying what to fix.
	RetryFollowup
	// RetryInSession: the attempt failed without an answer (an error, a
	// non-zero exit); after a delay the next attempt asks the task again
	// in the same session.
	RetryInSession
	// RetryFresh: the session is lost or unusable (timeout, stuck, not
	// found, not saved); after a delay the next attempt starts a fresh
	// session with the original task.
	RetryFresh
	// HelpRound: the agent asked for help; the advisor runs next.
	HelpRound
	// WaitUsageLimit: a usage limit with a reset time; the attempt does
	// not count, and the next one starts after the reset.
	WaitUsageLimit
	// Fail: no retry; the step fails.
	Fail
	// Stop: cadence stopped the attempt itself (SIGINT, SIGTERM); it does
	// not count, and the step runs again when the run does.
	Stop
	// WaitLogin: the agent's login failed (class auth). Retrying would
	// fail the same way: the attempt does not count, and the run stops,
	// resumable, until someone logs in (SPEC §17).
	WaitLogin
)

var decisionNames = [...]string{"succeed", "retry_followup", "retry_in_session", "retry_fresh", "help_round", "wait_usage_limit", "fail", "stop", "wait_login"}

func (d Decision) String() string { return decisionNames[d] }

// verdict is the judged outcome of an attempt and the committed counts
// the decision is taken against.
type verdict struct {
	ok         bool
	class      handoff.Class
	permanent  bool          // the agent reported a failure no retry can fix
	fresh      bool          // the session cannot be continued
	retryAfter time.Duration // the agent asked for at least this delay
	resetAt    time.Time     // a usage limit resets then
	// used counts the attempts against max_attempts with this one.
	used, maxAttempts int
	helpRounds        int
	// prevNext is the step's committed retry deadline, which a new one
	// never moves earlier (G10).
	prevNext *time.Time
	now      time.Time
	jitter   float64 // the random draw for the backoff's jitter, in [0,1)
}

// decided is a Decision with what it schedules.
type decided struct {
	Decision
	uncounted bool          // the attempt does not count against max_attempts
	delay     time.Duration // before the next attempt
	next      *time.Time    // the next attempt's earliest start
	fresh     bool          // the next attempt starts a fresh session
}

// decide decides what follows an attempt judged v, for the step ws.
func decide(ws *workflow.Step, v verdict) decided {
	switch {
	case v.ok:
		return decided{Decision: Succeed}
	case v.class == handoff.ClassInterrupted:
		return decided{Decision: Stop, uncounted: true}
	case v.class == handoff.ClassAuth:
		return decided{Decision: WaitLogin, uncounted: true}
	}
	policy := policyFor(ws.Retry)
	d := decided{fresh: v.fresh}
	used := v.used
	if !v.resetAt.IsZero() {
		// A usage limit with a reset time: cadence waits for the reset
		// instead of burning an attempt on it.
		d.uncounted = true
		used--
	}
	helpRetry := v.class == handoff.ClassHelp && ws.OnHelp != nil && v.helpRounds < ws.OnHelp.MaxRounds
	if !(policy.Retryable(string(v.class)) || helpRetry) || v.permanent || used >= v.maxAttempts {
		d.Decision = Fail
		return d
	}
	if helpRetry {
		d.Decision = HelpRound
		return d
	}
	retryAfter := v.retryAfter
	if !v.resetAt.IsZero() {
		retryAfter = max(retryAfter, v.resetAt.Sub(v.now))
	}
	drawn := policy.Delay(used, func() float64 { return v.jitter })
	delay, at := retrystate.Schedule(v.now, drawn, retryAfter)
	if v.prevNext != nil {
		at = retrystate.Later(*v.prevNext, at)
	}
	d.delay, d.next = delay, &at
	switch {
	case !v.resetAt.IsZero():
		d.Decision = WaitUsageLimit
	case v.fresh:
		d.Decision = RetryFresh
	case v.class.IsAnswerFailure():
		d.Decision = RetryFollowup
	default:
		d.Decision = RetryInSession
	}
	return d
}

// failMessage says why the step failed after an attempt judged v whose
// error is errText, when decide said Fail.
func failMessage(ws *workflow.Step, v verdict, errText string) string {
	used := v.used
	if !v.resetAt.IsZero() {
		used--
	}
	switch {
	case v.permanent:
		return errText + " (not retried: the agent reported a permanent failure)"
	case v.class == handoff.ClassHelp && ws.OnHelp != nil && used < v.maxAttempts:
		return fmt.Sprintf("%s (all %d help rounds used)", errText, ws.OnHelp.MaxRounds)
	case v.class == handoff.ClassHelp && ws.OnHelp == nil:
		return errText
	case !policyFor(ws.Retry).Retryable(string(v.class)):
		return fmt.Sprintf("%s (class %s is not retried)", errText, v.class)
	}
	return fmt.Sprintf("%s after %d of %d attempts", errText, used, v.maxAttempts)
}
