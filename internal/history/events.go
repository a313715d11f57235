package history

import (
	"strconv"
	"strings"
	"time"
)

// Event is one transition of a run, shown by the human view and printed as a
// JSON line by --json. Field names are stable; new ones may be added.
type Event struct {
	Time        time.Time  `json:"time"`
	Type        string     `json:"event"`
	RunID       string     `json:"run_id"`
	Step        string     `json:"step,omitempty"`
	Item        string     `json:"item,omitempty"` // the map item's key, for an event of one item
	Agent       string     `json:"agent,omitempty"`
	Attempt     int        `json:"attempt,omitempty"`      // the attempt's number in the step's history (inspect's n, CADENCE_ATTEMPT)
	Counted     int        `json:"counted,omitempty"`      // how many attempts count against max_attempts with this one
	MaxAttempts int        `json:"max_attempts,omitempty"` // the step's max_attempts
	HelpRound   int        `json:"help_round,omitempty"`   // for kind help: which advisor round
	Uncounted   bool       `json:"uncounted,omitempty"`    // the attempt does not use up one of max_attempts
	Warning     string     `json:"warning,omitempty"`      // what was wrong with an attempt accepted anyway
	Kind        string     `json:"kind,omitempty"`
	Status      string     `json:"status,omitempty"`
	Class       string     `json:"class,omitempty"`
	Error       string     `json:"error,omitempty"`
	Repairs     []string   `json:"repairs,omitempty"`
	Provenance  string     `json:"provenance,omitempty"` // where a finished attempt's handoff was found (SPEC §18)
	PID         int        `json:"pid,omitempty"`
	SessionID   string     `json:"session_id,omitempty"`
	Until       *time.Time `json:"until,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	Elapsed     float64    `json:"elapsed_s,omitempty"`
	CostUSD     float64    `json:"cost_usd,omitempty"`
	Message     string     `json:"message,omitempty"`
	Check       string     `json:"check,omitempty"`     // the check of a check_started or check_finished event
	ExitCode    *int       `json:"exit_code,omitempty"` // a finished check's exit code
	// Stderr is the last non-empty line of the agent's stderr, for an
	// attempt that failed because the agent exited with an error: usually
	// why it did. Agent output, as written: a view must clean it.
	Stderr string `json:"stderr,omitempty"`
	// Tail is a failed command step's last output lines, stderr's then
	// stdout's, each part headed by its stream's name: where a build or a
	// test run says what went wrong. Command output, as written: a view
	// must clean it.
	Tail string `json:"tail,omitempty"`
}

// Kinds of the audit log's events that the statistics read: the run was
// stopped (interrupted) and resumed.
const (
	EventKindRunStopped = "run_stopped"
	EventKindRunResumed = "run_resumed"
)

// Event types.
const (
	EventRunStarted     = "run_started"
	EventRunResumed     = "run_resumed"
	EventAttemptSettled = "attempt_settled"
	// EventStepAlreadyDone: the step had succeeded before this process
	// and is not run again.
	EventStepAlreadyDone = "step_already_done"
	// EventStepSkipped: the step's when was false, or a step it needs was
	// skipped (SPEC §16.4); Message says which.
	EventStepSkipped = "step_skipped"
	// EventIterationStarted: a loop began an iteration (Attempt holds
	// its number); EventIterationEnded: its until was evaluated (Status
	// says what it gave; Message says so).
	EventIterationStarted = "iteration_started"
	EventIterationEnded   = "iteration_ended"
	// EventGateWaiting: an approval gate waits for a person; Message is
	// its prompt. EventGateDecided: a person answered it (Status approved
	// or rejected, Message the comment and who).
	EventGateWaiting     = "gate_waiting"
	EventGateDecided     = "gate_decided"
	EventAttemptStarted  = "attempt_started"
	EventAttemptFinished = "attempt_finished"
	EventCheckStarted    = "check_started"
	EventCheckFinished   = "check_finished"
	EventWaiting         = "waiting"
	EventStepSucceeded   = "step_succeeded"
	EventStepFailed      = "step_failed"
	EventRunFinished     = "run_finished"
	EventRunInterrupted  = "run_interrupted"
	// EventItemsFrozen reports the items a map step stored when it started.
	EventItemsFrozen = "items_frozen"
	// EventItemDead reports a map item that went to the dead-letter queue.
	EventItemDead = "item_dead"
	// EventLeaseLost reports that this process lost the lease of an item
	// (or its run) to another process: it stopped the item's agent and
	// records nothing more of it.
	EventLeaseLost = "lease_lost"
	// EventItemTakenOver reports an item this process claimed after its
	// previous holder's lease expired; Message names that holder.
	EventItemTakenOver = "item_taken_over"
	// EventFallback reports that a step's agent entry could not serve and
	// its next attempt moves to Agent, a fallback (SPEC §17); Message
	// says from which.
	EventFallback = "fallback"
)

// Sink receives the events of a run as they happen. Implementations must not
// block for long: the run loop calls them inline.
type Sink interface {
	Emit(Event)
	// Tick reports the time left in a wait, or the elapsed time of a running
	// attempt, for a live status line. Sinks without one ignore it.
	Tick(step, what string, d time.Duration)
}

// Discard is a Sink that drops every event.
type Discard struct{}

func (Discard) Emit(Event)                         {}
func (Discard) Tick(string, string, time.Duration) {}

// count is "1 item" or "2 items", for messages.
// Count is n with the singular or the plural noun: "1 item", "3 items".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// ResetHint is how a user ends the wait for an agent's open circuit at
// once, named wherever cadence waits for one.
func ResetHint(agent string) string {
	return "close it now with: cadence circuit reset " + agent
}

// Decision is a step's decision as committed with it (SPEC §16.4): its
// when evaluated, with the value it had and what it read, or the skipped
// steps it was skipped for when it has no when of its own.
type Decision struct {
	When string `json:"when,omitempty"`
	// Until is a loop's until, evaluated after one iteration (SPEC
	// §16.5): the decision of an iteration row.
	Until string `json:"until,omitempty"`
	Value *bool  `json:"value,omitempty"`
	// Read are the values the expression read: inputs.NAME, and
	// steps.ID.status for the steps it named.
	Read           map[string]any `json:"read,omitempty"`
	SkippedBecause []string       `json:"skipped_because,omitempty"`
	At             time.Time      `json:"at"`
}

// Skipped reports whether the decision skips its step.
func (d Decision) Skipped() bool {
	return d.Value != nil && !*d.Value || len(d.SkippedBecause) > 0
}

// Why says why the decision skipped its step.
func (d Decision) Why() string {
	if len(d.SkippedBecause) > 0 {
		return "it needs " + strings.Join(d.SkippedBecause, ", ") + ", skipped"
	}
	return "when " + d.When + " is false"
}
