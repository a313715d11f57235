package checkpoint

import "time"

// Run is one execution of a workflow, from `cadence run` to its end, across
// every `cadence resume` that continued it.
type Run struct {
	ID             string
	status         RunStatus // set by the named transitions only; read with Status
	WorkflowPath   string
	WorkflowSHA256 string
	WorkflowYAML   []byte // the workflow as it was when the run started (G8)
	// WorkflowFiles are the files the workflow names, path to sha256, as
	// they were when the run started (or was last resumed with a changed
	// workflow); nil for a run an older cadence stored, whose
	// WorkflowSHA256 is that of WorkflowYAML alone.
	WorkflowFiles map[string]string
	BudgetUSD     *float64
	StartedAt     time.Time
	FinishedAt    *time.Time
	UpdatedAt     time.Time
	// InputsJSON holds the values of the workflow's inputs the run was
	// started with (SPEC §16.1), as a JSON object; nil for a workflow
	// without inputs. A resume uses them.
	InputsJSON []byte
}

// Status is the run's status, one of the Run* constants.
func (r Run) Status() RunStatus { return r.status }

// Step is the state of one workflow step within a run, or of one item of a
// map step (ItemKey not ""): an item has the whole state of a step of its
// own.
type Step struct {
	RunID      string
	ID         string
	ItemKey    string // "" for a step; the item's key for an item of a map step
	Idx        int    // position in the workflow, from 0
	ItemIdx    int    // an item's position in its step's frozen list, from 1; 0 for a step
	ItemJSON   []byte // the item's value as frozen when the step started; nil for a step
	BaseCommit string // a map step in git worktrees: the commit its items' branches start at
	// DecisionJSON is the step's decision, committed once and never taken
	// again (SPEC §16.4): its when evaluated, or why it was skipped, as a
	// JSON object; nil until one is taken.
	DecisionJSON []byte
	// CachedTokens is the part of InputTokens served from a cache.
	CachedTokens int64
	// Agent is the agent entry the step's next attempt runs on: the
	// workflow's agent of the step until a fallback replaces it (SPEC §17).
	Agent        string
	status       StepStatus // set by the named transitions only; read with Status
	MaxAttempts  int
	NextRetryAt  *time.Time // absolute deadline of the pending backoff (G4, G10)
	DelayMS      *int64     // the drawn backoff delay, stored so resume never redraws
	SessionID    string     // agent session the next attempt continues
	FreshSession bool       // the next attempt starts a new session
	HandoffJSON  []byte     // accepted handoff envelope; nil until the step succeeds
	HelpRounds   int
	Advice       string // advisor's guidance for the next attempt
	CostUSD      float64
	CostKnown    bool
	Turns        int
	InputTokens  int64
	OutputTokens int64
	UpdatedAt    time.Time
}

// Status is the step's status, one of the Step* constants.
func (s Step) Status() StepStatus { return s.status }

// Attempt is one execution of a step's agent (or of its help advisor, kind
// help). N counts every attempt row of the step, help rounds included.
type Attempt struct {
	RunID         string
	StepID        string
	ItemKey       string // "" for a step's own attempts
	N             int
	Kind          string        // one of the Kind* constants
	status        AttemptStatus // set by the named transitions only; read with Status
	Class         string        // failure class (see the handoff package); "" on success
	Error         string
	DetailsJSON   []byte // structured diagnosis; nil when there is none
	Prompt        string
	StartedAt     time.Time
	FinishedAt    *time.Time
	PID           *int // nil until the agent process started
	ExitCode      *int
	SessionID     string
	CircuitGen    int64 // circuit generation the attempt ran under
	DelayMS       *int64
	NextRetryAt   *time.Time
	RetryAfterMS  *int64
	Repairs       []string // names of the repairs applied; nil when none recorded
	OutputFile    string
	FailedHandoff string
	CostUSD       *float64 // nil when the agent did not report a cost
	Turns         int
	InputTokens   int64
	OutputTokens  int64
	HelpContext   string
	// Uncounted marks an attempt that does not count against max_attempts:
	// a budget stop, or a usage limit the provider will lift at a known time.
	Uncounted bool
	// Warning says what was wrong with an attempt that succeeded anyway:
	// an agent that exited non-zero after printing a valid handoff.
	Warning string
	// CachedTokens is the part of InputTokens the provider served from a
	// cache (InputTokens counts all input, cached included, for every
	// agent alike).
	CachedTokens int64
	// Agent is the agent entry that ran the attempt: the step's agent, or
	// one of its fallbacks (kind fallback and after). "" on a row written
	// before attempts recorded it, and for a help round (its advisor is
	// the step's on_help agent) or a command step.
	Agent string
	// Provenance is where the attempt's handoff was found (output,
	// fence_json, file, prose), or where the value refused as one was
	// (code_span, code_fence, prose); "" when no value was found, and on
	// a row written before attempts recorded it.
	Provenance string
	// Snapshot is the commit object that recorded the step's work tree
	// (tracked and untracked files, ignored ones left out) before the
	// attempt ran; SnapshotAfter the one that recorded it after, before
	// the outcome was committed. "" when not recorded (no git repository,
	// an attempt cut short, a row written before snapshots).
	Snapshot, SnapshotAfter string
}

// Status is the attempt's status, one of the Attempt* constants.
func (a Attempt) Status() AttemptStatus { return a.status }

// Circuit is the persisted state of one agent's circuit breaker. Circuits are
// project-wide: one per agent name, shared by every run.
type Circuit struct {
	Agent      string
	State      string // closed, open or half_open (see the circuit package)
	Failures   int
	Generation int64
	OpenedAt   *time.Time
	OpenUntil  *time.Time
	Trials     int
	Successes  int
	UpdatedAt  time.Time
	// ConfigHash identifies the agent's configuration the breaker was
	// recorded under ("" when unknown: recorded by an older cadence).
	ConfigHash string
}

// Event is one entry of the audit log, such as "circuit_reset",
// "run_abandoned" or "workflow_changed_allowed". RunID is "" for an event
// that concerns the whole project.
type Event struct {
	ID     int64 // assigned by AddEvent
	RunID  string
	At     time.Time
	Kind   string
	Detail string
}

// Check is one run of a check command for an attempt (SPEC §11). Seq
// numbers the check runs of the attempt, from 1.
type Check struct {
	RunID      string
	StepID     string
	ItemKey    string // "" for a step's own attempts
	N          int    // the attempt
	Seq        int
	Name       string
	Command    string
	Status     string // one of the Check* constants
	ExitCode   *int   // nil while running, or when it was killed by a signal
	Signal     string // the signal that ended it, if one did
	TimedOut   bool   // killed by its timeout
	PID        *int
	StartedAt  time.Time
	FinishedAt *time.Time
	OutputFile string
	// Tail is the end of its output, as quoted in the follow-up prompt.
	Tail string
}

// Duration is how long the check ran, or 0 while it runs.
func (c Check) Duration() time.Duration {
	if c.FinishedAt == nil {
		return 0
	}
	return c.FinishedAt.Sub(c.StartedAt)
}

// Unit names what attempts belong to: a step of a run, or one item of a map
// step. Attempt numbers, retry counts, sessions and backoff are per unit.
type Unit struct {
	RunID  string
	StepID string
	Item   string // "" for a step itself
}

// String names the unit as RUN/STEP or RUN/STEP/ITEM, as errors and
// idempotency keys do.
func (u Unit) String() string {
	if u.Item == "" {
		return u.RunID + "/" + u.StepID
	}
	return u.RunID + "/" + u.StepID + "/" + u.Item
}

// Unit returns the unit whose state the row holds.
func (s Step) Unit() Unit { return Unit{RunID: s.RunID, StepID: s.ID, Item: s.ItemKey} }

// Unit returns the unit the attempt belongs to.
func (a Attempt) Unit() Unit { return Unit{RunID: a.RunID, StepID: a.StepID, Item: a.ItemKey} }

// DeadLetter is an item of a map step that ended failed: it exhausted its
// attempts or failed with a class that is not retried (SPEC §12).
type DeadLetter struct {
	RunID   string
	StepID  string
	ItemKey string
	Class   string
	Error   string
	// Signature groups alike failures: the class and the error text with
	// its varying parts (numbers, quoted values, paths) normalised.
	Signature string
	Attempts  int // attempts the item used
	FirstAt   time.Time
	LastAt    time.Time
	DeadAt    time.Time
}
