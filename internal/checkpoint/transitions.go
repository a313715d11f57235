package checkpoint

import (
	"errors"
	"fmt"
)

// Run statuses.
const (
	RunRunning     = "running"
	RunSucceeded   = "succeeded"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunAbandoned   = "abandoned"
)

// Step statuses.
const (
	StepPending   = "pending"
	StepRunning   = "running"
	StepWaiting   = "waiting" // in a backoff or waiting for an open circuit
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
)

// Attempt statuses.
const (
	AttemptRunning     = "running"
	AttemptSucceeded   = "succeeded"
	AttemptFailed      = "failed"
	AttemptInterrupted = "interrupted"
	AttemptAdopted     = "adopted" // settled after a crash from a valid handoff (G5)
)

// Attempt kinds: how the attempt's prompt and session were chosen.
const (
	KindInitial  = "initial"  // the step's first attempt
	KindFollowup = "followup" // continues the session with a follow-up prompt
	KindFresh    = "fresh"    // a new session with the original prompt
	KindHelp     = "help"     // an on_help advisor round
)

// ErrInvalidTransition is returned (wrapped, naming the row and both
// statuses) when a status change is not in the tables below.
var ErrInvalidTransition = errors.New("invalid status transition")

// runTransitions lists, for each run status, the statuses it may move to.
// A failed run reopens only through `resume --retry-failed`; succeeded and
// abandoned runs are final.
var runTransitions = map[string][]string{
	RunRunning:     {RunRunning, RunSucceeded, RunFailed, RunInterrupted, RunAbandoned},
	RunInterrupted: {RunRunning, RunAbandoned},
	RunFailed:      {RunRunning},
	RunSucceeded:   nil,
	RunAbandoned:   nil,
}

// stepTransitions lists, for each step status, the statuses it may move to.
// pending→succeeded is the adoption of a handoff found after a crash;
// failed→pending is `resume --retry-failed`. A succeeded step is final (G2).
// Same-status moves of live steps let callers update the other fields.
var stepTransitions = map[string][]string{
	StepPending:   {StepPending, StepRunning, StepFailed, StepSucceeded},
	StepRunning:   {StepRunning, StepWaiting, StepSucceeded, StepFailed, StepPending},
	StepWaiting:   {StepWaiting, StepRunning, StepFailed},
	StepFailed:    {StepPending},
	StepSucceeded: nil,
}

// attemptTransitions lists, for each attempt status, the statuses it may move
// to. Only a running attempt changes: running→running records its pid and
// session id as they become known; every other status is final.
var attemptTransitions = map[string][]string{
	AttemptRunning:     {AttemptRunning, AttemptSucceeded, AttemptFailed, AttemptInterrupted, AttemptAdopted},
	AttemptSucceeded:   nil,
	AttemptFailed:      nil,
	AttemptInterrupted: nil,
	AttemptAdopted:     nil,
}

var attemptKinds = map[string]bool{KindInitial: true, KindFollowup: true, KindFresh: true, KindHelp: true}

// RunTransition reports whether a run may move from one status to another,
// returning a wrapped ErrInvalidTransition when it may not.
func RunTransition(from, to string) error { return checkTransition(runTransitions, from, to) }

// StepTransition reports whether a step may move from one status to another,
// returning a wrapped ErrInvalidTransition when it may not.
func StepTransition(from, to string) error { return checkTransition(stepTransitions, from, to) }

// AttemptTransition reports whether an attempt may move from one status to
// another, returning a wrapped ErrInvalidTransition when it may not.
func AttemptTransition(from, to string) error {
	return checkTransition(attemptTransitions, from, to)
}

func checkTransition(table map[string][]string, from, to string) error {
	next, ok := table[from]
	if !ok {
		return fmt.Errorf("%w: unknown status %q", ErrInvalidTransition, from)
	}
	if _, ok := table[to]; !ok {
		return fmt.Errorf("%w: unknown status %q", ErrInvalidTransition, to)
	}
	for _, s := range next {
		if s == to {
			return nil
		}
	}
	return fmt.Errorf("%w: %s → %s", ErrInvalidTransition, from, to)
}

// knownStatus reports whether status is a key of table.
func knownStatus(table map[string][]string, status string) bool {
	_, ok := table[status]
	return ok
}
