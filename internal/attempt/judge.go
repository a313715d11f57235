package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// handoffSource is where an attempt's handoff is judged from: the file
// at path in workDir (a file handoff), or what stream judged of a text
// agent's stdout as it arrived, or else the agent's final answer.
type handoffSource struct {
	workDir, path string
	stream        *handoff.Stream
	agent         string // the agent entry that ran the attempt
}

// judgement is the verdict on one finished attempt.
type judgement struct {
	ok         bool
	result     handoff.Result
	diag       *handoff.Diagnosis
	class      handoff.Class
	retryAfter time.Duration
	resetAt    time.Time
	permanent  bool // the agent reported a failure that no retry can fix
	lostSess   bool // the agent no longer knows the session
	// helpContext is the context of a help request (class help).
	helpContext string
	// warning says what was wrong with an attempt accepted anyway.
	warning string
	// tail is a failed command's last output lines, as its diagnosis
	// quotes them: what the live line shows under the failure.
	tail string
}

// helpRequest decides whether an attempt asked for help: a help marker in
// its stream, or a handoff whose requested_help is true. A handoff that
// denies a request the stream shows is logged, and the stream wins.
func (r *Runner) helpRequest(ws *workflow.Step, res *agent.Result, hr handoff.Result) (string, bool) {
	claimed, denied := false, false
	var handoffCtx string
	if obj, ok := hr.Value.(map[string]any); ok && hr.OK {
		switch obj["requested_help"] {
		case true:
			claimed = true
			if c, ok := obj["help_context"]; ok {
				if b, err := json.Marshal(c); err == nil {
					handoffCtx = string(b)
				}
			}
		case false:
			denied = true
		}
	}
	if res.Help {
		if denied {
			r.Log.Warn("the agent printed the help signal but its handoff says requested_help: false; treating it as a help request",
				"step", ws.ID)
		}
		c := string(res.HelpContext)
		if c == "" {
			c = "{}"
		}
		return c, true
	}
	if claimed {
		if handoffCtx == "" {
			handoffCtx = "{}"
		}
		return handoffCtx, true
	}
	return "", false
}

// judge classifies a finished attempt into success or exactly one failure
// class (SPEC §5). src says where its handoff is; src.stream, when not
// nil, has judged a text agent's stdout as
// it arrived.
func (r *Runner) judge(ws *workflow.Step, res *agent.Result, runErr error, src handoffSource) judgement {
	workDir, handoffPath, stream := src.workDir, src.path, src.stream
	if runErr != nil && errors.Is(runErr, context.Canceled) {
		return judgement{class: handoff.ClassInterrupted, diag: handoff.Diagnose(handoff.ClassInterrupted, "cadence was stopped before the agent started")}
	}
	if runErr != nil && errors.Is(runErr, agent.ErrStart) {
		// The workflow names a program that is not there: no retry can
		// fix that, and it says nothing about the agent's provider.
		return judgement{class: handoff.ClassConfig,
			diag: handoff.Diagnose(handoff.ClassConfig, fmt.Sprintf("agent %s: %v; fix the agent's command in the workflow", src.agent, runErr))}
	}
	if runErr != nil {
		return judgement{class: handoff.ClassExitNonzero,
			diag: handoff.Diagnose(handoff.ClassExitNonzero, "the agent could not be started: "+runErr.Error())}
	}
	switch res.Stop {
	case agent.StopTimeout:
		return judgement{class: handoff.ClassTimeout, diag: handoff.Diagnose(handoff.ClassTimeout,
			fmt.Sprintf("killed after %s (timeout %s)", res.Elapsed.Round(time.Millisecond), ws.Timeout))}
	case agent.StopStuck:
		if res.NoOutputSinceStart {
			return judgement{class: handoff.ClassStuck, diag: handoff.Diagnose(handoff.ClassStuck,
				fmt.Sprintf("no output since start; killed after %s (start_timeout %s)", res.Elapsed.Round(time.Millisecond), ws.StartTimeout))}
		}
		return judgement{class: handoff.ClassStuck, diag: handoff.Diagnose(handoff.ClassStuck,
			fmt.Sprintf("no output and no CPU used by its processes for %s; killed after %s", ws.IdleTimeout, res.Elapsed.Round(time.Millisecond)))}
	case agent.StopTooLarge:
		return judgement{class: handoff.ClassTooLarge, diag: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("output reached %d bytes, over max_bytes %d; %s", res.StdoutBytes, ws.Handoff.MaxBytes, tooLargeHint))}
	case agent.StopInterrupted:
		return judgement{class: handoff.ClassInterrupted, diag: handoff.Diagnose(handoff.ClassInterrupted, "cadence was stopped during the attempt")}
	case agent.StopLingered:
		// The agent answered and then did not exit: its answer is judged
		// as if it had (attemptNote records the stop).
	}
	opts := handoffOptions(ws)
	var hr handoff.Result
	switch {
	case res.TextTooLarge && handoffPath == "" && !res.IsError:
		hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("the agent's final answer is %d bytes, over max_bytes %d; %s", res.TextBytes, ws.Handoff.MaxBytes, tooLargeHint))}
	case res.SkippedResult && handoffPath == "":
		hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("the agent's final answer came in an event line over max_event_bytes %d, which was skipped", ws.Handoff.MaxEventBytes))}
	case handoffPath != "":
		if _, err := r.handoffFile(workDir, ws.Handoff.Path); err != nil {
			hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassMissing, "the handoff file was not read: "+err.Error())}
			hr.Diagnosis.Path = ws.Handoff.Path
		} else {
			hr = handoff.CheckFile(handoffPath, ws.Handoff.Schema, opts)
		}
	case stream != nil:
		hr = stream.Result()
	default:
		text := res.Text
		if len(res.StructuredOutput) > 0 {
			text = res.StructuredOutput
		}
		if res.IsError {
			// The final text of a failed turn is the provider's error
			// message (which may well contain JSON), never an answer.
			text = nil
		}
		hr = handoff.Check(text, ws.Handoff.Schema, opts)
	}
	// A help request takes precedence over a handoff in the same attempt.
	// The stream is the source of truth; a handoff that claims help with no
	// signal counts too.
	if helpCtx, asked := r.helpRequest(ws, res, hr); asked {
		detail := "the agent asked for help: " + helpCtx
		if ws.OnHelp == nil {
			detail = "the agent asked for help and the step has no on_help: " + helpCtx
		}
		return judgement{class: handoff.ClassHelp, diag: handoff.Diagnose(handoff.ClassHelp, detail), helpContext: helpCtx}
	}
	if hr.OK && (res.ExitCode != 0 || res.Signal != 0) && res.Stop == agent.StopNone {
		return exitedBadly(ws, res, hr)
	}
	if hr.OK {
		return judgement{ok: true, result: hr}
	}
	if res.Truncated && hr.Diagnosis.Class != handoff.ClassTruncated {
		// The model stopped at its output limit: whatever is wrong with
		// the JSON, the cause is that it was cut off.
		d := handoff.Diagnose(handoff.ClassTruncated, "the model stopped at its output limit (finish_reason \"length\"): "+hr.Diagnosis.Summary())
		return judgement{class: handoff.ClassTruncated, diag: d, result: hr}
	}
	noHandoff := hr.Diagnosis.Class == handoff.ClassMissing || hr.Diagnosis.Class == handoff.ClassEmpty
	switch {
	case res.Auth && noHandoff:
		msg := "the agent's login failed"
		if res.ErrorMessage != "" {
			msg += ": " + res.ErrorMessage
		}
		msg += fmt.Sprintf("; log in to agent %s, then cadence resume", src.agent)
		return judgement{class: handoff.ClassAuth, diag: handoff.Diagnose(handoff.ClassAuth, msg), permanent: true}
	case res.Transient && noHandoff:
		msg := res.ErrorMessage
		if msg == "" {
			msg = "the provider reported a transient error"
		}
		if res.UsageLimit {
			msg = "usage limit reached: " + msg
		}
		if res.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry after %s)", res.RetryAfter.Round(time.Millisecond))
		}
		return judgement{class: handoff.ClassTransient, diag: handoff.Diagnose(handoff.ClassTransient, msg),
			retryAfter: res.RetryAfter, resetAt: res.ResetAt}
	case (res.IsError || res.ExitCode != 0) && noHandoff:
		msg := fmt.Sprintf("the agent exited with code %d", res.ExitCode)
		if res.IsError && res.ExitCode == 0 {
			msg = "the agent reported an error"
		}
		if res.ErrorMessage != "" {
			msg += ": " + res.ErrorMessage
		}
		if res.StderrTail != "" {
			msg += "\nstderr: " + res.StderrTail
		}
		return judgement{class: handoff.ClassExitNonzero, diag: handoff.Diagnose(handoff.ClassExitNonzero, msg),
			permanent: res.Permanent, lostSess: res.SessionNotFound}
	}
	if res.TurnError != "" && hr.Diagnosis.Class.IsHandoffFailure() {
		// The agent ended its turn on an error of its own (Gemini's
		// "Maximum session turns exceeded"): the follow-up says so.
		hr.Diagnosis.Details = "the agent stopped its turn: " + res.TurnError + "; " + hr.Diagnosis.Details
	}
	return judgement{class: hr.Diagnosis.Class, diag: hr.Diagnosis, result: hr}
}

// exitedBadly judges an agent that printed a valid handoff but exited
// non-zero (or was ended by a signal): the handoff is accepted with a
// warning, or, with fail_on_exit_code, the attempt fails as exit_nonzero.
func exitedBadly(ws *workflow.Step, res *agent.Result, hr handoff.Result) judgement {
	how := fmt.Sprintf("exited with code %d", res.ExitCode)
	if res.Signal != 0 {
		how = "was ended by signal " + res.Signal.String()
	}
	if !ws.FailOnExitCode {
		return judgement{ok: true, result: hr,
			warning: "the agent " + how + " after printing a valid handoff, which was accepted (fail_on_exit_code: true fails such attempts)"}
	}
	msg := "the agent " + how + " after printing a valid handoff (rejected: the step has fail_on_exit_code: true)"
	if res.StderrTail != "" {
		msg += "\nstderr: " + res.StderrTail
	}
	return judgement{class: handoff.ClassExitNonzero, diag: handoff.Diagnose(handoff.ClassExitNonzero, msg),
		permanent: res.Permanent, lostSess: res.SessionNotFound}
}

// tooLargeHint says what to do about a handoff over max_bytes.
const tooLargeHint = "raise the step's handoff.max_bytes, or have the agent write its handoff to a file (handoff: {from: file, path: ...})"

// The files beside an attempt's .out that hold what its handoff was judged
// on: a text agent's stdout alone (the .out file mixes in stderr), and a
// protocol agent's final answer when it failed as a handoff.
const (
	judgedStdout = ".stdout"
	judgedAnswer = ".answer"
)

// judgedPath is the file beside the attempt's .out file with the suffix.
func judgedPath(outPath, suffix string) string {
	return strings.TrimSuffix(outPath, ".out") + suffix
}

// JudgedFiles names, for an attempt's .out file, the files that hold what
// its handoff was judged on: a text agent's stdout, and a protocol agent's
// final answer (kept when it failed as a handoff). Attempts recorded
// before they were kept have neither.
func JudgedFiles(outputFile string) (stdout, answer string) {
	return judgedPath(outputFile, judgedStdout), judgedPath(outputFile, judgedAnswer)
}

// judgedText is what the handoff of a protocol agent was judged on, as in
// judge: the structured output, else the final text, and nothing when
// the turn failed.
func judgedText(res *agent.Result) []byte {
	switch {
	case res.IsError:
		return nil
	case len(res.StructuredOutput) > 0:
		return res.StructuredOutput
	}
	return res.Text
}

// stderrCause is Event.Stderr for an attempt judged class with the agent's
// result res.
func stderrCause(class handoff.Class, res *agent.Result) string {
	if class != handoff.ClassExitNonzero || res == nil {
		return ""
	}
	lines := strings.Split(res.StderrTail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if line := strings.TrimSpace(lines[i]); line != "" {
			if len(line) > maxStderrCause {
				line = line[:maxStderrCause]
			}
			return line
		}
	}
	return ""
}

// maxStderrCause bounds Event.Stderr.
const maxStderrCause = 1024
