// Package agent launches coding-agent processes and reads what they say.
//
// Run starts one agent attempt: argv with no shell in between, a process group
// of its own that is killed as a whole (SIGTERM, then SIGKILL after a grace
// period) on timeout, on silence, on oversized output or when the caller's
// context ends, and a parent-death signal so the agent never outlives cadence.
// While the process runs, its stdout is parsed line by line in the attempt's
// stream protocol (plain text, Claude Code's stream-json, Codex's exec
// --json lines or Gemini CLI's stream-json) into a Result:
// the handoff candidate text, the session id, cost and usage, provider errors
// classified as transient or permanent, and the help signal.
//
// Command turns a preset (claude, codex, gemini, sim, exec) and its settings
// into the argv, stdin and protocol that Run expects; PresetEnv adds the
// environment a preset needs. RunChat drives the openai preset, an agent that
// is a chat-completions endpoint rather than a process.
package agent

import (
	"encoding/json"
	"io"
	"syscall"
	"time"
)

// Protocol names how an agent's stdout is read.
type Protocol string

const (
	// ProtocolText treats the whole of stdout as the handoff candidate.
	ProtocolText Protocol = "text"
	// ProtocolClaudeStream reads Claude Code's stream-json events, one JSON
	// object per line, as printed by `claude -p --output-format stream-json
	// --verbose` and by the simulated agent.
	ProtocolClaudeStream Protocol = "claude-stream"
	// ProtocolCodexJSONL reads the JSON lines of `codex exec --json`.
	ProtocolCodexJSONL Protocol = "codex-jsonl"
	// ProtocolGeminiStream reads the JSON lines of `gemini -o stream-json`.
	ProtocolGeminiStream Protocol = "gemini-stream"
	// ProtocolQwenStream reads the JSON lines of `qwen -o stream-json`:
	// Claude Code's events with Qwen Code's result (see qwenStream).
	ProtocolQwenStream Protocol = "qwen-stream"
	// ProtocolOpencodeJSON reads the JSON lines of `opencode run --format
	// json` (see opencodeStream).
	ProtocolOpencodeJSON Protocol = "opencode-json"
	// ProtocolPiJSON reads the JSON lines of `pi -p --mode json` (see
	// piStream).
	ProtocolPiJSON Protocol = "pi-json"
	// ProtocolCopilotJSON reads the JSON lines of `copilot
	// --output-format json` (see copilotStream).
	ProtocolCopilotJSON Protocol = "copilot-json"
	// ProtocolNone reads nothing: stdout goes only to Output and the tail
	// (a check command, whose output is a log, not a handoff). MaxBytes
	// does not apply.
	ProtocolNone Protocol = "none"
)

// StopReason says why cadence stopped an attempt; empty when the agent exited
// by itself.
type StopReason string

const (
	StopNone        StopReason = ""
	StopTimeout     StopReason = "timeout"     // Spec.Timeout elapsed
	StopStuck       StopReason = "stuck"       // no output for Spec.IdleTimeout
	StopTooLarge    StopReason = "too_large"   // a text agent's stdout exceeded Spec.MaxBytes
	StopInterrupted StopReason = "interrupted" // the caller's context ended
	// StopLingered: the agent gave its final answer (or closed stdout)
	// but had not exited Spec.ExitGrace later. The answer stands.
	StopLingered StopReason = "lingered"
)

// Defaults applied by Run to zero Spec fields.
const (
	DefaultGrace         = 5 * time.Second
	DefaultExitGrace     = 5 * time.Second
	DefaultHelpMarker    = ">>>HELP<<<"
	DefaultMaxBytes      = 8 << 20
	DefaultMaxEventBytes = 64 << 20
)

// Spec describes one agent process to run.
type Spec struct {
	// Argv is the program and its arguments. argv[0] is resolved with
	// exec.LookPath, relative to Dir when it contains a slash; no shell is
	// ever involved.
	Argv []string
	// Env is the complete environment of the child; the caller builds it.
	// Its PATH is where argv[0] is looked up. Nil inherits cadence's own.
	Env []string
	// Dir is the working directory (the project directory).
	Dir string
	// Stdin is written to the child's stdin; nil connects stdin to /dev/null.
	Stdin []byte
	// Protocol selects the stdout parser; empty means ProtocolText.
	Protocol Protocol
	// Output receives a raw copy of stdout and stderr in arrival order, for
	// the attempt's .out file. Nil discards it.
	Output io.Writer
	// OutputCap bounds what is written to Output (the workflow's
	// transcript_max_bytes); the rest is counted, not written, and a final
	// line "[cadence: output truncated at N bytes]" is added. Parsing goes
	// on past it. Zero means no cap.
	OutputCap int64
	// MaxBytes bounds the handoff candidate. A text agent's stdout is the
	// candidate: beyond MaxBytes the attempt is stopped with StopTooLarge.
	// A stream protocol's stdout is a transcript with no such limit; its
	// final answer (Result.Text) is the candidate, and an answer over
	// MaxBytes is dropped and reported by Result.TextTooLarge. Zero means
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxEventBytes bounds one line of a stream protocol's stdout: a
	// longer line is not parsed but counted (Result.SkippedEvents), so
	// memory stays bounded whatever the transcript holds. Zero means
	// DefaultMaxEventBytes.
	MaxEventBytes int64
	// Candidate, when set, receives a text agent's stdout (up to MaxBytes)
	// as it arrives, instead of Result.Text keeping it: a streaming
	// handoff check reads it in bounded memory. Unused by stream
	// protocols.
	Candidate io.Writer
	// Timeout bounds the whole attempt (StopTimeout); zero means none.
	Timeout time.Duration
	// IdleTimeout stops an agent that for this long writes nothing to
	// stdout or stderr and whose processes (its process group and every
	// descendant) use no CPU (StopStuck): an agent waiting on its own tool,
	// a build or a test suite, is silent but busy. Zero means none. Any
	// output, including Claude's api_retry liveness events, resets it.
	IdleTimeout time.Duration
	// StartTimeout stops an agent that has written nothing at all, on
	// stdout or stderr, this long after it started (StopStuck, with
	// Result.NoOutputSinceStart): a CLI hung at its start (`claude -p`
	// waiting for ever with zero output) is caught in minutes instead of
	// after a whole IdleTimeout. The first byte of output disarms it for
	// good; CPU use does not. Zero means none; the caller chooses the
	// default. Meant for stream protocols, whose agents print their first
	// event at once: a text agent may well say nothing until its answer.
	StartTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// ExitGrace is how long an agent may take to exit once it has given
	// its final answer: the final event of a stream protocol (Claude's
	// result, Codex's turn.completed or turn.failed, Gemini's result), or
	// the end of a text agent's stdout. Timeout and IdleTimeout no longer
	// apply then; an agent still running ExitGrace later (waiting on an
	// MCP server, or on a child that holds it) is stopped like any other
	// (SIGTERM, SIGKILL after Grace) with StopLingered, and its answer is
	// kept. Zero means DefaultExitGrace. Not used with ProtocolNone.
	ExitGrace time.Duration
	// HelpMarker is the help signal; empty means DefaultHelpMarker.
	HelpMarker string
	// TailLines, when positive, keeps the last TailLines lines of stdout
	// and stderr, interleaved as they arrived, in Result.Tail, whatever
	// the length of the output (each line is cut at MaxTailLine bytes).
	TailLines int
	// OnStart, when set, is called with the pid right after the process
	// started. An error kills the process group and Run returns that error.
	// Under a Supervisor the agent itself does not run before OnStart has
	// returned: the supervisor waits at a gate that Run opens only then, so
	// no agent acts before its pid is recorded, and one whose cadence died
	// before that never runs.
	OnStart func(pid int) error
	// OnRunning, when set, is called once the agent runs: after OnStart and
	// the opening of the gate.
	OnRunning func()
	// Supervisor, when set, is the path of a cadence binary: the agent then
	// runs under `cadence agent supervise`, which kills the agent's whole
	// process group if cadence dies, descendants that the parent-death
	// signal alone would miss included, and every descendant that left
	// the group (setsid, setpgid, a double fork) when the agent ends or is
	// stopped (see Supervise). Without it only the group is killed; the
	// cadence command always sets it.
	Supervisor string
	// Spares, when set with Supervisor, gives the supervisor: one started
	// ahead (see Spares), instead of a new one per attempt.
	Spares *Spares
	// Reserved, when set with Supervisor and Spares, is the supervisor
	// the program runs under, taken before the attempt's row was
	// committed (Spares.Reserve). Run uses it or, when it returns before
	// the program could be given to it, ends it.
	Reserved *Reserved
	// Sandbox, when set, is called with the resolved path of the program
	// and any further paths Run hands the program to write (the usage
	// file's directory), and returns the argv prefix that runs it in a box
	// (package sandbox: bwrap, its options, "--"); the program and its
	// arguments follow it. The box runs in the agent's process group like any
	// program, under the supervisor, so stops, CPU-aware idle detection
	// and G6 apply to it unchanged. An error is ErrStart: the program is
	// never run unboxed.
	Sandbox func(program string, writable ...string) ([]string, error)
	// OnSession, when set, is called from the goroutine reading stdout
	// as soon as the stream names the agent's session (Claude's
	// system/init, Codex's thread.started, Gemini's init), so that the
	// caller can record it durably before the attempt ends, and again
	// whenever a later event names another one (Result.SessionID). It
	// must not block for long: stdout is not read while it runs.
	OnSession func(id string)
	// Resume says that the attempt continues an existing session
	// (Invocation.Resume); a stream protocol uses it to tell whether a
	// failed turn left a session behind (Result.SessionNotSaved).
	Resume bool
	// PriorInputTokens, PriorCachedTokens and PriorOutputTokens are, for
	// protocols whose usage is cumulative per session
	// (ProtocolCodexJSONL, Copilot CLI's usage file), the session's cumulative figures after its
	// previous attempt. Run subtracts them so that Result.InputTokens,
	// CachedTokens and OutputTokens are this attempt's usage. Zero for a
	// new session.
	PriorInputTokens, PriorCachedTokens, PriorOutputTokens int64
	// UsageFileFlag, when set, is the option by which the agent writes its
	// token usage to a file as it exits (UsageFileFlag of the preset:
	// Copilot CLI's --usage-output-file). Run appends FLAG=FILE to Argv,
	// FILE in a temporary directory of its own, removed before Run
	// returns, and adds the tokens the file reports to the Result. The
	// file's path never comes from the agent.
	UsageFileFlag string
}

// Result describes how an attempt ended and what the agent said. Every agent
// failure is reported here rather than as an error from Run.
type Result struct {
	PID      int
	ExitCode int // -1 when the process was killed by a signal
	// Signal is the signal that ended the agent, when one did (the
	// supervisor dies of the same signal as the agent it runs).
	Signal  syscall.Signal
	Stop    StopReason
	Elapsed time.Duration
	// NoOutputSinceStart is set with StopStuck when the stop came from
	// Spec.StartTimeout: the agent had printed nothing at all since it
	// started (diagnosis: "no output since start"), as opposed to an
	// agent that went silent after some output (Spec.IdleTimeout).
	NoOutputSinceStart bool

	// Text is the handoff candidate: all of stdout for ProtocolText; for
	// ProtocolClaudeStream the final result text, or the assistant text
	// blocks joined by newlines when no result event came; for
	// ProtocolCodexJSONL the text of the last agent_message item; for
	// ProtocolGeminiStream the concatenated assistant message deltas; for
	// RunChat the first choice's message content.
	Text []byte
	// AnswerFromMessage says that Text is the final assistant message
	// rather than Claude's result.result: the result was only the start
	// of that message, with no JSON value (the first chunk of a
	// multi-part answer, anthropics/claude-code#78686), and the whole
	// message held one.
	AnswerFromMessage bool
	// StructuredOutput is Claude's structured_output, when present.
	StructuredOutput json.RawMessage
	// SessionID is the agent session: the last one the stream named
	// (Claude's system/init and result, Codex's thread.started, Gemini's
	// init; `claude --resume` can hand back a new id), or
	// ChatSpec.SessionID.
	SessionID string
	// SessionIDRejected says why a session id the stream reported was not
	// used: it was not a plain token (see CheckSessionID). SessionID is
	// then empty, unless an earlier event named a good one.
	SessionIDRejected string

	// IsError: the turn failed. The result event said is_error, or
	// (Claude) its "success" text is one of the CLI's own error messages
	// rather than an answer (anthropics/claude-code#79500); Text is then
	// no handoff.
	IsError      bool
	ErrorMessage string // provider or agent error text, if any
	// TurnError is the text of the error events the agent printed during
	// its turn, whatever the turn's outcome: Gemini CLI stops a turn with
	// "Maximum session turns exceeded" or "Loop detected, stopping
	// execution" and then reports it successful, with no answer. It says
	// why an answer is missing or partial; it is not a failure by itself.
	TurnError string
	// Transient marks rate limits, overload, 5xx and network failures:
	// api_error_status 429, 529 or 5xx, a synthetic assistant error such as
	// "rate_limit" or "overloaded", or a rate_limit_event with status
	// "rejected" (Claude); a turn.failed naming such a status (Codex); a
	// RetryableQuotaError or such a status in an error result (Gemini); an
	// HTTP 408, 429 or 5xx answer or a network error (RunChat).
	Transient bool
	// RetryAfter is how long the agent asked to wait, when it said; ResetAt
	// is the same moment as an absolute time.
	RetryAfter time.Duration
	ResetAt    time.Time
	// Permanent marks failures a retry cannot fix: authentication_failed,
	// billing_error, HTTP 401/402/403. Auth failures are among them.
	Permanent bool
	// Auth marks a missing, expired or invalid login (Permanent is set
	// too): HTTP 401; Claude's authentication_failed or
	// oauth_org_not_allowed, a 403, "Invalid API key", "OAuth token has
	// expired", "Please run /login"; Codex's "401 Unauthorized" or its
	// messages asking to log in again; Gemini CLI's UNAUTHENTICATED, or
	// "Please set an Auth method" on stderr. No retry on the same login
	// can succeed: someone must log in to the agent (class auth).
	Auth bool
	// UsageLimit marks an exhausted usage limit or quota of the agent's
	// account, as opposed to a passing rate limit: Claude's rejected
	// rate_limit_event and its "usage limit reached" / "You've hit your
	// limit · resets …" texts, Codex's "You've hit your usage limit" and
	// usage_limit_reached, Gemini CLI's TerminalQuotaError. Transient is
	// set too; ResetAt is when the limit resets, when the agent said or
	// (Gemini's daily quota) a documented default applies, and zero when
	// nothing says.
	UsageLimit bool
	// SessionNotFound is set when a resumed session does not exist: Claude's
	// "No conversation found", Codex's "no rollout found for thread id",
	// Gemini's "Error resuming session".
	SessionNotFound bool
	// SessionNotSaved is set when a new session's only turn failed and the
	// agent did not keep the session: Gemini CLI saves a new session only
	// once a turn has been answered, so `--resume ID` would fail with "No
	// previous sessions found". The next attempt must start a fresh
	// session (as after SessionNotFound).
	SessionNotSaved bool

	CostUSD float64
	// CostKnown says the agent reported its cost (Claude's
	// total_cost_usd): a CostUSD of 0 is then a known zero (an exec
	// agent speaking claude-stream against a free model), not a cost
	// nobody reported (Codex, Gemini CLI).
	CostKnown bool
	Turns     int
	// InputTokens, CachedTokens and OutputTokens are this attempt's
	// usage, comparable across agents: InputTokens is all the input, the
	// part read from the provider's prompt cache included, and
	// CachedTokens is that part. Claude reports the cache apart
	// (input_tokens + cache_creation_input_tokens +
	// cache_read_input_tokens; cached: cache_read_input_tokens); Codex's
	// input_tokens and Gemini CLI's include it (cached_input_tokens,
	// stats.cached).
	InputTokens  int64
	CachedTokens int64
	OutputTokens int64
	// CumulativeInputTokens, CumulativeCachedTokens and
	// CumulativeOutputTokens are the session's usage so far as the agent
	// reported it, for agents whose usage is cumulative per session
	// (Codex's turn.completed, Copilot CLI's usage file); zero otherwise. The caller passes them as
	// Spec.PriorInputTokens/PriorCachedTokens/PriorOutputTokens of the
	// session's next attempt.
	CumulativeInputTokens  int64
	CumulativeCachedTokens int64
	CumulativeOutputTokens int64
	// Truncated is set when the model stopped at its output limit
	// (finish_reason "length" of a chat completion).
	Truncated bool
	// SchemaUnsupported is set when a chat endpoint rejected
	// response_format and the request was repeated without it; the caller
	// should not ask that endpoint for it again.
	SchemaUnsupported bool

	// TextTooLarge reports that a stream protocol's final answer was
	// longer than Spec.MaxBytes: it was dropped (Text is empty) and
	// TextBytes says how long it was.
	TextTooLarge bool
	TextBytes    int64
	// SkippedEvents counts the stdout lines of a stream protocol that were
	// longer than Spec.MaxEventBytes and not parsed, SkippedEventBytes their
	// total length. SkippedResult reports that the final answer was in
	// one of them (the attempt has no answer to judge).
	SkippedEvents     int
	SkippedEventBytes int64
	SkippedResult     bool

	// Help is set when a line containing the help marker was seen in the
	// decoded text (event text for stream protocols, raw lines for text).
	Help bool
	// HelpContext is the JSON object on the line after the marker, if any.
	HelpContext json.RawMessage

	StdoutBytes int64
	StderrTail  string // the last 2 KiB of stderr at most
	// Tail is the last Spec.TailLines lines of the output (see there).
	Tail string
}
