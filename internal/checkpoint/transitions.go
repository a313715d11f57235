package checkpoint

import (
	"errors"
	"fmt"
	"time"
)

// RunStatus is the status of a run. A Run's status field is unexported:
// outside this package it is read with Run.Status and changed only by the
// named transitions below.
type RunStatus string

// Run statuses.
const (
	RunRunning     RunStatus = "running"
	RunSucceeded   RunStatus = "succeeded"
	RunFailed      RunStatus = "failed"
	RunInterrupted RunStatus = "interrupted"
	RunAbandoned   RunStatus = "abandoned"
	// RunCancelled: ended for good by `cadence cancel`; never resumed.
	RunCancelled RunStatus = "cancelled"
)

// StepStatus is the status of a step or of an item of a map step. A
// Step's status field is unexported: outside this package it is read with
// Step.Status and changed only by the named transitions below.
type StepStatus string

// Step statuses.
const (
	StepPending   StepStatus = "pending"
	StepRunning   StepStatus = "running"
	StepWaiting   StepStatus = "waiting" // in a backoff or waiting for an open circuit
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	// StepSkipped: its when was false, or a step it needs was skipped
	// (SPEC §16.4). Final, like succeeded.
	StepSkipped StepStatus = "skipped"
)

// AttemptStatus is the status of an attempt. An Attempt's status field is
// unexported: outside this package it is read with Attempt.Status and
// changed only by the named transitions below.
type AttemptStatus string

// Attempt statuses.
const (
	AttemptRunning     AttemptStatus = "running"
	AttemptSucceeded   AttemptStatus = "succeeded"
	AttemptFailed      AttemptStatus = "failed"
	AttemptInterrupted AttemptStatus = "interrupted"
	AttemptAdopted     AttemptStatus = "adopted" // settled after a crash from a valid handoff (G5)
)

// Attempt kinds: how the attempt's prompt and session were chosen.
const (
	KindInitial  = "initial"  // the step's first attempt
	KindFollowup = "followup" // continues the session with a follow-up prompt
	KindFresh    = "fresh"    // a new session with the original prompt
	KindHelp     = "help"     // an on_help advisor round
	// KindFallback is the first attempt on a fallback agent entry: a new
	// session, on another CLI or account, with the original prompt and
	// the diagnosis so far (SPEC §17).
	KindFallback = "fallback"
)

// ErrInvalidTransition is returned (wrapped, naming the row and both
// statuses) when a status change is not in the tables below.
var ErrInvalidTransition = errors.New("invalid status transition")

// runTransitions lists, for each run status, the statuses it may move to.
// A failed run reopens only through `resume --retry-failed`; succeeded,
// abandoned and cancelled runs are final.
var runTransitions = map[RunStatus][]RunStatus{
	RunRunning:     {RunRunning, RunSucceeded, RunFailed, RunInterrupted, RunAbandoned, RunCancelled},
	RunInterrupted: {RunRunning, RunAbandoned, RunCancelled},
	RunFailed:      {RunRunning},
	RunSucceeded:   nil,
	RunAbandoned:   nil,
	RunCancelled:   nil,
}

// stepTransitions lists, for each step status, the statuses it may move to.
// pending→succeeded is the adoption of a handoff found after a crash;
// pending→waiting and waiting→succeeded are an approval gate reached and
// answered (SPEC §16.6); failed→pending is `resume --retry-failed`. A succeeded step is final (G2).
// Same-status moves of live steps let callers update the other fields.
var stepTransitions = map[StepStatus][]StepStatus{
	StepPending:   {StepPending, StepRunning, StepWaiting, StepFailed, StepSucceeded, StepSkipped},
	StepRunning:   {StepRunning, StepWaiting, StepSucceeded, StepFailed, StepPending},
	StepWaiting:   {StepWaiting, StepRunning, StepSucceeded, StepFailed},
	StepFailed:    {StepPending},
	StepSucceeded: nil,
	StepSkipped:   nil,
}

// attemptTransitions lists, for each attempt status, the statuses it may move
// to. Only a running attempt changes: running→running records its pid and
// session id as they become known; every other status is final.
var attemptTransitions = map[AttemptStatus][]AttemptStatus{
	AttemptRunning:     {AttemptRunning, AttemptSucceeded, AttemptFailed, AttemptInterrupted, AttemptAdopted},
	AttemptSucceeded:   nil,
	AttemptFailed:      nil,
	AttemptInterrupted: nil,
	AttemptAdopted:     nil,
}

var attemptKinds = map[string]bool{KindInitial: true, KindFollowup: true, KindFresh: true, KindHelp: true, KindFallback: true}

// RunTransition reports whether a run may move from one status to another,
// returning a wrapped ErrInvalidTransition when it may not.
func RunTransition(from, to RunStatus) error { return checkTransition(runTransitions, from, to) }

// StepTransition reports whether a step may move from one status to another,
// returning a wrapped ErrInvalidTransition when it may not.
func StepTransition(from, to StepStatus) error { return checkTransition(stepTransitions, from, to) }

// AttemptTransition reports whether an attempt may move from one status to
// another, returning a wrapped ErrInvalidTransition when it may not.
func AttemptTransition(from, to AttemptStatus) error {
	return checkTransition(attemptTransitions, from, to)
}

func checkTransition[S ~string](table map[S][]S, from, to S) error {
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
func knownStatus[S ~string](table map[S][]S, status S) bool {
	_, ok := table[status]
	return ok
}

// The named state changes of runs, steps (and map items) and attempts.
// Each writes one transition, and every path that makes it calls it: the
// run loop, settling after a crash, a help round, a budget stop, the
// commands that reopen a run. No status is assigned anywhere else, so a
// transition means the same thing whoever takes it (the way a job queue's
// recoverer calls the very Retry and Archive its processor does).
//
// The compiler holds that rule: a status is a value of RunStatus,
// StepStatus or AttemptStatus, and the rows keep it in an unexported
// field that only this package sets (the transitions below, NewRun and
// NewStep, the scanning of stored rows); other packages read it with
// Status(). What the compiler cannot say is tested instead: that each
// table names every status of its type (TestTransitionTablesComplete) and
// that no code outside this package converts a string into a status
// (TestNoStatusMadeUp in internal/attempt).
//
// A step transition changes the row in memory and writes it: the caller
// has read it in the same transaction and may have set other fields of
// the step (usage, session) that the transition writes along.

// StartAttempt inserts attempt a as running: committed before its agent
// starts (G1).
func (t *Tx) StartAttempt(a *Attempt) error {
	a.status = AttemptRunning
	return t.InsertAttempt(*a)
}

// AttemptSucceeded ends a running attempt with its handoff accepted; an
// attempt a crash left running is adopted instead (G5).
func (t *Tx) AttemptSucceeded(a *Attempt, adopted bool) error {
	a.status = AttemptSucceeded
	if adopted {
		a.status = AttemptAdopted
	}
	return t.UpdateAttempt(*a)
}

// AttemptFailed ends a running attempt with its class and error set.
func (t *Tx) AttemptFailed(a *Attempt) error {
	a.status = AttemptFailed
	return t.UpdateAttempt(*a)
}

// AttemptInterrupted ends a running attempt that cadence stopped, or that
// a crash left running and no handoff of which landed.
func (t *Tx) AttemptInterrupted(a *Attempt) error {
	a.status = AttemptInterrupted
	return t.UpdateAttempt(*a)
}

// StepRunning marks a step, or an item, running: an attempt of it began,
// or, for a map step, its items did.
func (t *Tx) StepRunning(s *Step, now time.Time) error {
	s.status = StepRunning
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepWaiting marks a step waiting for its next attempt at next, after the
// delay drawn (G4: the deadline is absolute and committed).
func (t *Tx) StepWaiting(s *Step, next *time.Time, delayMS *int64, now time.Time) error {
	s.status = StepWaiting
	s.NextRetryAt, s.DelayMS = next, delayMS
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepSucceeded marks a step or an item succeeded with the envelope of
// its accepted handoff, and releases its lease when the transaction runs
// under WithEndingLease.
func (t *Tx) StepSucceeded(s *Step, envelope []byte, now time.Time) error {
	s.status = StepSucceeded
	s.NextRetryAt, s.DelayMS = nil, nil
	s.HandoffJSON = envelope
	s.UpdatedAt = now
	if err := t.UpdateStep(*s); err != nil {
		return err
	}
	return t.endLease(s, true)
}

// StepDecided records a step's decision (its when evaluated true) on the
// pending step, committed before anything that depends on it, so that a
// resume never takes it again.
func (t *Tx) StepDecided(s *Step, decision []byte, now time.Time) error {
	s.DecisionJSON = decision
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepSkipped marks a pending step skipped, with the decision that
// skipped it: its when evaluated false, or a need that was skipped.
func (t *Tx) StepSkipped(s *Step, decision []byte, now time.Time) error {
	s.status = StepSkipped
	s.DecisionJSON = decision
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepFailed marks a step failed for good: no retry is scheduled. It
// releases the step's lease when the transaction runs under
// WithEndingLease.
func (t *Tx) StepFailed(s *Step, now time.Time) error {
	s.status = StepFailed
	s.NextRetryAt, s.DelayMS = nil, nil
	s.UpdatedAt = now
	if err := t.UpdateStep(*s); err != nil {
		return err
	}
	return t.endLease(s, false)
}

// StepInterrupted puts a running step back to pending when its attempt was
// interrupted: it runs again when the run does, after the retry deadline
// it already had, if any. A step in another state only has its other
// fields written.
func (t *Tx) StepInterrupted(s *Step, now time.Time) error {
	if s.status == StepRunning {
		s.status = StepPending
	}
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepFellBack moves a step's next attempt to the fallback agent entry
// named (SPEC §17): it runs at once, in a fresh session, since a session
// cannot move between CLIs or accounts. The wait the step had on its old
// entry (a usage limit, a circuit) no longer applies. A step another
// transition left pending or waiting stays so.
func (t *Tx) StepFellBack(s *Step, agent string, now time.Time) error {
	s.Agent = agent
	s.FreshSession = true
	s.NextRetryAt, s.DelayMS = nil, nil
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// StepReopened makes a finished step or item pending again, with no retry
// scheduled: `resume --retry-failed`, `--budget`, `dlq retry`, a changed
// workflow.
func (t *Tx) StepReopened(s *Step, now time.Time) error {
	s.status = StepPending
	s.NextRetryAt, s.DelayMS = nil, nil
	s.UpdatedAt = now
	return t.UpdateStep(*s)
}

// NewRun is a run that starts now: running, unfinished.
func NewRun(r Run, now time.Time) Run {
	r.status = RunRunning
	r.StartedAt, r.UpdatedAt, r.FinishedAt = now, now, nil
	return r
}

// NewStep is a step, or a map item, that has not run yet.
func NewStep(s Step, now time.Time) Step {
	s.status = StepPending
	s.UpdatedAt = now
	return s
}

// RunResumed marks a run running again.
func (t *Tx) RunResumed(r *Run, now time.Time) error {
	r.status = RunRunning
	r.FinishedAt = nil
	r.UpdatedAt = now
	return t.UpdateRun(*r)
}

// RunEnded records how this process leaves a run: succeeded, failed or
// abandoned end it; interrupted leaves it resumable, unfinished.
func (t *Tx) RunEnded(r *Run, status RunStatus, now time.Time) error {
	r.status = status
	r.UpdatedAt = now
	if status != RunInterrupted {
		r.FinishedAt = &now
	}
	return t.UpdateRun(*r)
}
