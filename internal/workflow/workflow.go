package workflow

import (
	"text/template"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/handoff"
)

// DefaultPath is where a project's workflow lives, relative to its directory.
const DefaultPath = ".cadence/workflow.yaml"

// Defaults of a step's limits. docs/agents.md says why each is what it is.
const (
	DefaultTimeout     = 60 * time.Minute
	DefaultIdleTimeout = 15 * time.Minute
	// DefaultExitGrace is how long an agent may take to exit after its
	// final answer; MaxExitGrace bounds what a workflow may set.
	DefaultExitGrace = 5 * time.Second
	MaxExitGrace     = 10 * time.Minute

	DefaultMaxBytes           = 8 << 20
	DefaultMaxEventBytes      = 64 << 20
	DefaultTranscriptMaxBytes = 1 << 30
	DefaultMaxDepth           = 10000

	// DefaultCommandTimeout bounds a command step's attempt (SPEC 16.2).
	DefaultCommandTimeout = 30 * time.Minute
	// DefaultStartTimeout: an agent that sends no event and no output for
	// this long after it started is stuck (SPEC 17).
	DefaultStartTimeout = 2 * time.Minute
	// DefaultMaxParallelSteps is how many steps run at once when the
	// graph allows (SPEC 16.3).
	DefaultMaxParallelSteps = 4
	// DefaultNotifyAfter is how long a wait lasts before it is notified as
	// long_wait (SPEC 17).
	DefaultNotifyAfter = 10 * time.Minute
)

// Workflow is a loaded, checked workflow file. Every default has been
// applied: a Step carries its complete, effective configuration.
type Workflow struct {
	Path      string // as given (relative to Dir when it was)
	Dir       string // the project directory (absolute)
	Raw       []byte // the file's bytes
	RawSHA256 string // hex sha256 of Raw alone, the hash runs stored before Files existed
	// SHA256 is the workflow's hash, stored with each run (G8): of Raw
	// and of every file in Files. A workflow that names no file has
	// RawSHA256 as its hash.
	SHA256 string
	// Files are the files the workflow names and cadence reads as part of
	// it (prompt files, handoff schemas, sim scenarios): each path,
	// relative to Dir with forward slashes, to the hex sha256 of its
	// content when the workflow was loaded.
	Files      map[string]string
	Version    int               // always 1
	Name       string            // optional display name
	Agents     map[string]*Agent // by name
	Steps      []*Step           // in file order
	MaxCostUSD float64           // run budget from defaults.max_cost_usd (0 = none)
	// Inputs are the values a run is started with (SPEC 16.1), in file
	// order; ResolveInputs checks what a run is given against them.
	Inputs []*Input
	// MaxParallelSteps is how many steps run at once when their needs
	// allow it (default DefaultMaxParallelSteps).
	MaxParallelSteps int
	// Notify lists where the run's events are sent (SPEC 17).
	Notify []*NotifyTarget
	// Warnings are settings that load but will not do what they say (a
	// start_timeout the step's timeout ends first), for cadence check.
	Warnings Errors

	programs []programRef     // the programs agents and checks start, for CheckPrograms
	boxWrite []programRef     // the sandboxes' write: paths (prog), which must exist, for CheckPrograms
	byID     map[string]*Step // every step, inner steps included, by id; set at load, read only after
}

// Agent is one entry of the agents: mapping. Command, Args and ContinueArgs
// are text/template sources; they were parsed at load time.
type Agent struct {
	Name         string
	Preset       string            // claude | codex | gemini | qwen | opencode | pi | openai | exec | sim
	Command      []string          // templates; replaces the preset's program
	Args         []string          // templates; added after the preset's own flags
	Env          map[string]string // added to cadence's own environment
	PromptVia    string            // stdin | arg (exec; default stdin)
	Output       string            // text | claude-stream | codex-jsonl | gemini-stream | qwen-stream | opencode-json | pi-json (exec; default text)
	ContinueArgs []string          // exec: args added on a follow-up in the same session (templates, may use {{ .SessionID }})
	HelpMarker   string            // default ">>>HELP<<<"
	NativeSchema bool              // claude, qwen: pass --json-schema; codex: --output-schema
	Scenario     string            // sim: scenario file (absolute after load)
	BaseURL      string            // openai
	Model        string            // openai
	APIKeyEnv    string            // openai: the environment variable holding the key
	Circuit      Circuit
	// ConfigDir is the CLI's own configuration directory for this entry
	// (CLAUDE_CONFIG_DIR, CODEX_HOME, …), absolute, with ~ expanded; ""
	// leaves the CLI's default.
	ConfigDir string
	// MaxConcurrent caps the processes of this entry running at once; 0
	// is no cap.
	MaxConcurrent int
	// Fallback names the entries that take a step's next attempt, in
	// order, when this one cannot serve.
	Fallback []string
	// Sandbox is the box its processes run in (its sandbox: over
	// defaults'); nil runs them unboxed. Always nil for openai, which
	// runs no process.
	Sandbox *Sandbox
}

// Circuit configures an agent's circuit breaker (SPEC 6.4).
type Circuit struct {
	Failures      int           // consecutive transient failures that open it (default 3)
	OpenFor       time.Duration // how long it stays open before half-open (default 2m)
	HalfOpenCalls int           // trial attempts allowed while half-open (default 1)
}

// Kinds of step: what a step runs.
const (
	KindAgent    = "agent"    // an agent with a prompt
	KindCommand  = "command"  // run: a command, no agent (SPEC 16.2)
	KindLoop     = "loop"     // loop: inner steps run until a condition (SPEC 16.5)
	KindApproval = "approval" // approval: waits for a person (SPEC 16.6)
)

// Step is one step of the workflow with the defaults merged in.
//
// Step ids are unique in the whole file, the inner steps of loops
// included, so an id names one step wherever it is read from.
type Step struct {
	ID    string
	Index int // position among its siblings: in Workflow.Steps, or in its loop's Steps
	// Kind is KindAgent, KindCommand, KindLoop or KindApproval. Only an
	// agent step has an Agent and a Prompt; only a command step a Run;
	// and so on.
	Kind string
	// Parent is the id of the loop this step is an inner step of; "" for
	// a step at the top of the workflow.
	Parent string
	// Needs are the steps, among its siblings, that must be done before
	// this one starts: the needs: key as written, or the sibling before
	// it when the key is absent (none for the first), or none for
	// needs: []. Sorted by sibling position.
	Needs []string
	// Reads lists the steps whose outputs its templates, expressions or
	// map items read, each of them an ancestor (Workflow.Ancestors).
	Reads        []string
	When         *Expr // nil: the step always runs once its needs are done
	AllowFailure bool  // its failure does not fail the run; dependents still run
	Run          *Command
	Loop         *Loop
	Approval     *Approval
	// StartTimeout: an agent that sends no event and no output for this
	// long after it started is stuck (default DefaultStartTimeout).
	// StartTimeoutSet says the file set it (for the step or in defaults):
	// then it applies to every agent; the default applies only to the
	// stream protocols, whose CLIs print their first event at once.
	StartTimeout    time.Duration
	StartTimeoutSet bool
	// FallbackAfter: a usage-limit wait longer than this moves the step
	// to its agent's fallback (default 0: at once).
	FallbackAfter time.Duration
	Agent         string             // name of an entry in Workflow.Agents
	Prompt        string             // inline, or the content of PromptFile
	PromptFile    string             // as written, relative to the project directory; "" for inline prompts
	Template      *template.Template // Prompt parsed with Option("missingkey=error")
	Handoff       Handoff
	Retry         Retry
	Timeout       time.Duration // an attempt running longer is killed (default DefaultTimeout)
	// IdleTimeout: no output and no CPU used by the agent's processes for
	// this long, and the attempt is stuck (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ExitGrace: once the agent gave its final answer (a stream agent's
	// final event, the end of a text agent's stdout), how long it may
	// take to exit before its processes are stopped; the answer is judged
	// either way (default DefaultExitGrace).
	ExitGrace  time.Duration
	MaxCostUSD float64 // step budget (0 = none)
	OnHelp     *OnHelp // nil: a help request fails the attempt (class help)
	Checks     []Check // run in order once the handoff passed its schema
	// FailOnExitCode fails an attempt whose agent exited non-zero even
	// when it printed a valid handoff (class exit_nonzero); by default
	// such a handoff is accepted with a warning.
	FailOnExitCode bool
	Map            *Map // nil for a step that runs once
	// Sandbox is a command step's box (its sandbox: over defaults'); nil
	// runs it unboxed. An agent step's box is its agent's.
	Sandbox *Sandbox
	// RestoreOnRetry puts the work tree back to the snapshot taken
	// before the last attempt, before the next one (SPEC §19).
	RestoreOnRetry bool

	needsWritten bool // the file has a needs: key for the step
	at           at   // where the step was written
}

// Command is what a command step runs (SPEC 16.2).
type Command struct {
	// Argv is what runs: ["/bin/sh", "-c", Text] when the workflow gave a
	// string (Shell), else the list itself.
	Argv []string
	// Templates are the parsed templates to render before it runs: one
	// per element of the list form, or the one string of the shell form,
	// whose result becomes the /bin/sh -c argument. A shell string may
	// read .Inputs, .Run and .Step, never a step's output (.Steps, .Item,
	// .Loop), so no agent output is ever interpreted by a shell.
	Templates []*template.Template
	Text      string // the command as written, for inspect
	Shell     bool
	// Handoff is set when the step has a handoff: key: its output is then
	// the JSON handoff found in its output, checked like an agent's,
	// instead of {"exit_code", "stdout"}.
	Handoff bool
}

// Loop is a step that runs its inner steps as one iteration until a
// condition holds (SPEC 16.5).
type Loop struct {
	Steps         []*Step // the inner graph, in file order
	Until         *Expr   // evaluated after each iteration; true ends the loop
	MaxIterations int     // at least 1
	Session       string  // continue | fresh (default continue)
	OnExhausted   string  // fail | continue (default fail)
}

// Values of Loop.Session and Loop.OnExhausted, Approval.OnReject.
const (
	SessionContinue = "continue"
	SessionFresh    = "fresh"
	OnFail          = "fail"
	OnContinue      = "continue"
)

// Approval is a step that waits for a person (SPEC 16.6).
type Approval struct {
	Prompt   string
	Template *template.Template // Prompt parsed with Option("missingkey=error")
	OnReject string             // fail | continue (default fail)
	Timeout  time.Duration      // 0: waits for ever
}

// Handoff says where a step's JSON result comes from and how it is checked.
type Handoff struct {
	From            string          // stdout | file (default stdout)
	Path            string          // file handoffs: relative to Dir, cleaned; inside Dir
	SchemaPath      string          // relative to Dir as written; "" when the step has no schema
	Schema          *handoff.Schema // compiled once per file; nil when the step has no schema
	Repair          bool            // default true
	AcceptTruncated bool            // accept a value obtained only by closing truncated output
	Coerce          bool            // coerce a value that misses its schema to its one lossless reading (default true)
	// MaxBytes bounds the handoff: a text agent's output, a stream agent's
	// final answer, a handoff file (default DefaultMaxBytes).
	MaxBytes int64
	// MaxEventBytes bounds one event line of a stream agent's transcript;
	// a longer one is skipped and counted (default DefaultMaxEventBytes).
	MaxEventBytes int64
	// TranscriptMaxBytes caps the attempt's .out copy of the agent's
	// output; parsing goes on past it (default DefaultTranscriptMaxBytes).
	TranscriptMaxBytes int64
	MaxDepth           int // deepest nesting accepted (default DefaultMaxDepth)
}

// Retry is a step's retry policy (SPEC 6.1).
type Retry struct {
	MaxAttempts int           // total attempts, the first included (default 3, at least 1)
	Backoff     string        // fixed | linear | exponential (default exponential)
	Initial     time.Duration // default 2s
	Multiplier  float64       // default 2
	Max         time.Duration // default 60s
	Jitter      string        // none | full | equal (default full)
	On          []string      // failure classes retried in addition to the default set
	Never       []string      // failure classes never retried
}

// OnHelp names the advisor consulted when a step's agent asks for help.
type OnHelp struct {
	Agent     string             // defaults to the step's agent
	Prompt    string             // template; .Help.Context holds the agent's request
	Template  *template.Template // Prompt parsed with Option("missingkey=error")
	MaxRounds int                // default 2
}

// Step returns the top-level step with the given id, or nil; Find looks
// inside loops too.
func (w *Workflow) Step(id string) *Step {
	for _, s := range w.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Find returns the step with the given id at any depth, or nil.
func (w *Workflow) Find(id string) *Step {
	if w.byID != nil {
		return w.byID[id]
	}
	for _, s := range w.All() {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// All returns every step, each loop followed by its inner steps, in file
// order.
func (w *Workflow) All() []*Step {
	var out []*Step
	var walk func([]*Step)
	walk = func(steps []*Step) {
		for _, s := range steps {
			out = append(out, s)
			if s.Loop != nil {
				walk(s.Loop.Steps)
			}
		}
	}
	walk(w.Steps)
	return out
}

// AtPath resolves the path of a step instance's rows (SPEC §16.5): a
// step's id at the top of the workflow, LOOP/ITERATION/STEP for a step
// inside a loop (and so on for loops inside loops). It returns the step
// and the iteration of the innermost loop it runs in (0 outside a loop),
// or nil when the path names no step of the workflow, or names an
// iteration rather than a step.
func (w *Workflow) AtPath(path string) (*Step, int) {
	p, err := address.Parse(path)
	if err != nil || p.IsIteration() {
		return nil, 0
	}
	parts := p.Segments()
	var parent *Step
	for i := 0; i < len(parts); i += 2 {
		s := w.Find(parts[i])
		if s == nil || (parent == nil) != (s.Parent == "") || parent != nil && s.Parent != parent.ID {
			return nil, 0
		}
		if i+1 < len(parts) && s.Loop == nil {
			return nil, 0
		}
		parent = s
	}
	return parent, p.Parent().Number()
}
