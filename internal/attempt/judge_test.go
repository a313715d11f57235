package attempt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// judgeStep is a stdout step whose handoff must be {"ok": boolean}, with
// the loader's defaults for repair, coercion and the bounds.
func judgeStep(t *testing.T, onHelp *workflow.OnHelp, failOnExit bool) *workflow.Step {
	t.Helper()
	schema, err := handoff.CompileSchemaBytes("ok.json",
		[]byte(`{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &workflow.Step{ID: "fix", Agent: "a", OnHelp: onHelp, FailOnExitCode: failOnExit, Timeout: time.Minute,
		Handoff: workflow.Handoff{From: "stdout", Schema: schema, Repair: true, Coerce: true,
			MaxBytes: 1 << 20, MaxEventBytes: 1 << 20, MaxDepth: 64}}
}

// TestJudge has one case per way an attempt ends, each with the one class
// (or success) SPEC §5 gives it and what the retry decision reads from
// the judgement: the delay asked for, the reset of a usage limit, a
// permanent failure, a lost session, a help request's context.
func TestJudge(t *testing.T) {
	reset := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 1}
	for _, tt := range []struct {
		name       string
		onHelp     *workflow.OnHelp
		failOnExit bool
		res        agent.Result
		runErr     error
		// want is "ok" or the class; the rest must match the judgement.
		want       string
		detail     string // a part of the diagnosis's summary
		retryAfter time.Duration
		resetAt    time.Time
		permanent  bool
		lostSess   bool
		help       string
		warning    string
	}{
		{name: "a valid answer", res: agent.Result{Text: []byte(`{"ok": true}`)}, want: "ok"},
		{name: "structured output wins over the text", res: agent.Result{Text: []byte(`not json`), StructuredOutput: []byte(`{"ok": false}`)}, want: "ok"},
		{name: "an answer repaired (trailing comma)", res: agent.Result{Text: []byte(`{"ok": true,}`)}, want: "ok"},
		{name: "an answer that misses its schema", res: agent.Result{Text: []byte(`{"ok": "maybe"}`)}, want: string(handoff.ClassSchema)},
		{name: "no answer at all", res: agent.Result{}, want: string(handoff.ClassEmpty)},
		{name: "a valid answer, then a non-zero exit: accepted with a warning",
			res: agent.Result{Text: []byte(`{"ok": true}`), ExitCode: 3}, want: "ok", warning: "exited with code 3"},
		{name: "a valid answer, then a signal, with fail_on_exit_code", failOnExit: true,
			res: agent.Result{Text: []byte(`{"ok": true}`), ExitCode: -1, Signal: syscall.SIGKILL}, want: string(handoff.ClassExitNonzero), detail: "ended by signal killed"},
		{name: "a non-zero exit without an answer, its session gone",
			res: agent.Result{ExitCode: 1, ErrorMessage: "No conversation found", SessionNotFound: true}, want: string(handoff.ClassExitNonzero),
			detail: "exited with code 1: No conversation found", lostSess: true},
		{name: "a failed turn's text is the provider's error, never an answer",
			res: agent.Result{IsError: true, Text: []byte(`{"ok": true}`), ErrorMessage: "overloaded"}, want: string(handoff.ClassExitNonzero), detail: "reported an error: overloaded"},
		{name: "a permanent failure", res: agent.Result{ExitCode: 2, Permanent: true}, want: string(handoff.ClassExitNonzero), permanent: true},
		{name: "a rate limit, with the delay asked for",
			res:  agent.Result{ExitCode: 1, Transient: true, RetryAfter: 30 * time.Second, ErrorMessage: "429"},
			want: string(handoff.ClassTransient), detail: "retry after 30s", retryAfter: 30 * time.Second},
		{name: "a usage limit with its reset",
			res:  agent.Result{ExitCode: 1, Transient: true, UsageLimit: true, ResetAt: reset},
			want: string(handoff.ClassTransient), detail: "usage limit reached", resetAt: reset},
		{name: "a failed login", res: agent.Result{ExitCode: 1, Auth: true, ErrorMessage: "401"},
			want: string(handoff.ClassAuth), detail: "log in to agent a", permanent: true},
		{name: "a rate limit after a valid answer is the answer", res: agent.Result{Text: []byte(`{"ok": true}`), Transient: true}, want: "ok"},
		{name: "killed at its timeout", res: agent.Result{Stop: agent.StopTimeout, Elapsed: time.Minute}, want: string(handoff.ClassTimeout), detail: "timeout 1m0s"},
		{name: "stuck before any output", res: agent.Result{Stop: agent.StopStuck, NoOutputSinceStart: true}, want: string(handoff.ClassStuck), detail: "no output since start"},
		{name: "output over max_bytes", res: agent.Result{Stop: agent.StopTooLarge, StdoutBytes: 2 << 20}, want: string(handoff.ClassTooLarge), detail: "over max_bytes"},
		{name: "stopped by the operator", res: agent.Result{Stop: agent.StopInterrupted}, want: string(handoff.ClassInterrupted)},
		{name: "cancelled before the start", runErr: fmt.Errorf("start: %w", context.Canceled), want: string(handoff.ClassInterrupted), detail: "before the agent started"},
		{name: "a program that is not there", runErr: fmt.Errorf("exec nope: %w", agent.ErrStart), want: string(handoff.ClassConfig), detail: "fix the agent's command"},
		{name: "another start failure", runErr: errors.New("fork: resource temporarily unavailable"), want: string(handoff.ClassExitNonzero), detail: "could not be started"},
		{name: "prose cut off at the model's output limit", res: agent.Result{Text: []byte(`Here is the plan`), Truncated: true}, want: string(handoff.ClassTruncated), detail: "output limit"},
		{name: "JSON cut off in the middle of a value", res: agent.Result{Text: []byte(`{"ok": tr`)}, want: string(handoff.ClassTruncated), detail: "cut off"},
		{name: "the help signal, with on_help", onHelp: help, res: agent.Result{Help: true, HelpContext: []byte(`{"q": 1}`), Text: []byte(`{"ok": true}`)},
			want: string(handoff.ClassHelp), help: `{"q": 1}`},
		{name: "requested_help in the handoff, without on_help", res: agent.Result{Text: []byte(`{"ok": false, "requested_help": true}`)},
			want: string(handoff.ClassHelp), detail: "has no on_help", help: "{}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			ws := judgeStep(t, tt.onHelp, tt.failOnExit)
			res := tt.res
			j := r.judge(ws, &res, tt.runErr, handoffSource{agent: "a"})
			got := string(j.class)
			if j.ok {
				got = "ok"
			}
			if got != tt.want {
				t.Fatalf("judged %s, want %s (%+v)", got, tt.want, j.diag)
			}
			if j.ok != (j.class == "") {
				t.Errorf("ok %v with class %q: a judgement is a success or exactly one class", j.ok, j.class)
			}
			if !j.ok && (j.diag == nil || !strings.Contains(j.diag.Summary(), tt.detail)) {
				t.Errorf("diagnosis %+v does not say %q", j.diag, tt.detail)
			}
			if j.ok && len(j.result.JSON) == 0 {
				t.Error("a success without the accepted JSON")
			}
			if j.retryAfter != tt.retryAfter || !j.resetAt.Equal(tt.resetAt) || j.permanent != tt.permanent || j.lostSess != tt.lostSess {
				t.Errorf("retryAfter %s resetAt %s permanent %v lostSess %v; want %s %s %v %v",
					j.retryAfter, j.resetAt, j.permanent, j.lostSess, tt.retryAfter, tt.resetAt, tt.permanent, tt.lostSess)
			}
			if j.helpContext != tt.help {
				t.Errorf("help context %q, want %q", j.helpContext, tt.help)
			}
			if !strings.Contains(j.warning, tt.warning) || (tt.warning == "") != (j.warning == "") {
				t.Errorf("warning %q, want one saying %q", j.warning, tt.warning)
			}
		})
	}
}

// A file handoff is judged from the file, whatever the agent printed: a
// valid file succeeds, a missing one is class missing naming its path.
func TestJudgeFileHandoff(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ws := judgeStep(t, nil, false)
	ws.Handoff.From, ws.Handoff.Path = "file", "out/h.json"
	path := filepath.Join(dir, "out", "h.json")
	res := agent.Result{Text: []byte(`{"ok": "printed, not written"}`)}
	j := r.judge(ws, &res, nil, handoffSource{workDir: dir, path: path, agent: "a"})
	if j.ok || j.class != handoff.ClassMissing {
		t.Fatalf("no file: judged ok=%v class %s, want missing", j.ok, j.class)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"ok": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	j = r.judge(ws, &res, nil, handoffSource{workDir: dir, path: path, agent: "a"})
	if !j.ok || string(j.result.JSON) != `{"ok":true}` {
		t.Fatalf("valid file: judged ok=%v class %s JSON %s", j.ok, j.class, j.result.JSON)
	}
}

// TestJudgeHostileAnswers judges answers an agent may give to get a bad
// handoff accepted, or by accident, each by SPEC §5's rules: the handoff
// is the object the schema matches among several, found in prose and
// fences, repaired when it is Python; a requested_help that is not true
// asks for nothing; the help marker wins over a handoff that denies it;
// the final text of a failed turn is never an answer.
func TestJudgeHostileAnswers(t *testing.T) {
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 1}
	for _, tt := range []struct {
		name   string
		onHelp *workflow.OnHelp
		res    agent.Result
		want   string // "ok" or the class
		json   string // the accepted JSON
	}{
		{name: "the object matching the schema among several", res: agent.Result{Text: []byte(`{"ok": true} and then {"ok": "no"}`)},
			want: "ok", json: `{"ok":true}`},
		{name: "a fenced handoff after prose", res: agent.Result{Text: []byte("Done.\n```json\n{\"ok\": false}\n```\n")},
			want: "ok", json: `{"ok":false}`},
		{name: "Python literals, repaired", res: agent.Result{Text: []byte(`{'ok': True}`)}, want: "ok", json: `{"ok":true}`},
		{name: "NUL bytes and control characters on the lines around it", res: agent.Result{Text: []byte("\x00\x01\n{\"ok\": true}\n\x00")},
			want: "ok", json: `{"ok":true}`},
		{name: "requested_help as a string asks for nothing", onHelp: help,
			res: agent.Result{Text: []byte(`{"ok": true, "requested_help": "yes"}`)}, want: "ok", json: `{"ok":true,"requested_help":"yes"}`},
		{name: "the marker wins over requested_help: false", onHelp: help,
			res: agent.Result{Help: true, Text: []byte(`{"ok": true, "requested_help": false}`)}, want: string(handoff.ClassHelp)},
		{name: "a failed turn's valid JSON is no answer", res: agent.Result{IsError: true, StructuredOutput: []byte(`{"ok": true}`)},
			want: string(handoff.ClassExitNonzero)},
		{name: "an array where an object is required", res: agent.Result{Text: []byte(`[{"ok": true}]`)}, want: string(handoff.ClassSchema)},
		{name: "prose only", res: agent.Result{Text: []byte("I fixed the bug, all tests pass.")}, want: string(handoff.ClassEmpty)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			res := tt.res
			j := r.judge(judgeStep(t, tt.onHelp, false), &res, nil, handoffSource{agent: "a"})
			got := string(j.class)
			if j.ok {
				got = "ok"
			}
			if got != tt.want {
				t.Fatalf("judged %s, want %s (%+v)", got, tt.want, j.diag)
			}
			if j.ok && string(j.result.JSON) != tt.json {
				t.Errorf("accepted %s, want %s", j.result.JSON, tt.json)
			}
		})
	}
}
