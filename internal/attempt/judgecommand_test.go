package attempt

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// TestJudgeCommand judges a command step's attempt (SPEC §16.2): exit 0
// succeeds with {"exit_code": 0, "stdout": …}, or with the handoff in its
// stdout when the step has one; any other exit, a signal or a timeout is a
// failure told in the command's own words, with the last lines it printed,
// whatever JSON it printed before.
func TestJudgeCommand(t *testing.T) {
	t.Run("no process ran", testJudgeCommandWithoutAProcess)
	schema, err := handoff.CompileSchemaBytes("ok.json",
		[]byte(`{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	step := func(withHandoff bool) *workflow.Step {
		ws := &workflow.Step{ID: "build", Kind: workflow.KindCommand, Timeout: time.Minute,
			Run:     &workflow.Command{Argv: []string{"make"}, Handoff: withHandoff},
			Handoff: workflow.Handoff{From: "stdout", MaxBytes: 1 << 20, MaxEventBytes: 1 << 20, MaxDepth: 64, Repair: true}}
		if withHandoff {
			ws.Handoff.Schema = schema
		}
		return ws
	}
	for _, tt := range []struct {
		name    string
		handoff bool
		res     agent.Result
		stdout  string
		want    string // "ok" or the class
		json    string // the accepted JSON
		detail  []string
		tail    string // the tail the live line shows
	}{
		{name: "exit 0 gives the exit code and stdout", res: agent.Result{}, stdout: "built\n",
			want: "ok", json: `{"exit_code":0,"stdout":"built\n"}`},
		{name: "exit 0 with no output", res: agent.Result{}, want: "ok", json: `{"exit_code":0,"stdout":""}`},
		{name: "exit 2 quotes the last lines of both streams", res: agent.Result{ExitCode: 2, StderrTail: "make: *** [all] Error 1\n"},
			stdout: "cc main.c\nmain.c:3: error\n", want: string(handoff.ClassExitNonzero),
			detail: []string{"the command exited with code 2", "stderr (last lines):\n  make: *** [all] Error 1", "stdout (last lines):\n  cc main.c\n  main.c:3: error"},
			tail:   "stderr (last lines):\n  make: *** [all] Error 1\nstdout (last lines):\n  cc main.c\n  main.c:3: error"},
		{name: "a signal is told as one", res: agent.Result{ExitCode: -1, Signal: syscall.SIGSEGV}, want: string(handoff.ClassExitNonzero),
			detail: []string{"the command was ended by signal segmentation fault"}},
		{name: "a failed command with no output has no tail", res: agent.Result{ExitCode: 1}, want: string(handoff.ClassExitNonzero),
			detail: []string{"the command exited with code 1"}},
		{name: "a valid handoff does not make a failed command succeed", handoff: true,
			res: agent.Result{ExitCode: 1, Text: []byte(`{"ok": true}`), StderrTail: "boom"}, want: string(handoff.ClassExitNonzero),
			detail: []string{"exited with code 1", "stderr (last lines):\n  boom"}, tail: "stderr (last lines):\n  boom"},
		{name: "a handoff command's valid handoff", handoff: true, res: agent.Result{Text: []byte("log\n{\"ok\": true}\n")},
			want: "ok", json: `{"ok":true}`},
		{name: "a handoff command's handoff off its schema", handoff: true, res: agent.Result{Text: []byte(`{"ok": 1}`)},
			want: string(handoff.ClassSchema), detail: []string{"/ok"}},
		{name: "a handoff command that printed nothing", handoff: true, res: agent.Result{},
			want: string(handoff.ClassEmpty)},
		{name: "killed at its timeout", res: agent.Result{Stop: agent.StopTimeout, ExitCode: -1, Signal: syscall.SIGKILL, Elapsed: time.Minute},
			want: string(handoff.ClassTimeout), detail: []string{"timeout 1m0s"}},
		{name: "stopped by the operator", res: agent.Result{Stop: agent.StopInterrupted, ExitCode: -1, Signal: syscall.SIGTERM},
			want: string(handoff.ClassInterrupted)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			in := &Instance{Step: step(tt.handoff)}
			tr := &try{r: r, in: in}
			var out *tailBuffer
			if !tt.handoff {
				out = &tailBuffer{max: 64 << 10}
				if _, err := io.WriteString(out, tt.stdout); err != nil {
					t.Fatal(err)
				}
			}
			res := tt.res
			j := tr.judgeCommand(&res, nil, handoffSource{}, out)
			got := string(j.class)
			if j.ok {
				got = "ok"
			}
			if got != tt.want {
				t.Fatalf("judged %s, want %s (%+v)", got, tt.want, j.diag)
			}
			if j.ok {
				var v any
				if string(j.result.JSON) != tt.json || json.Unmarshal(j.result.JSON, &v) != nil {
					t.Errorf("accepted %s, want %s", j.result.JSON, tt.json)
				}
				return
			}
			for _, d := range tt.detail {
				if !strings.Contains(j.diag.Details, d) {
					t.Errorf("diagnosis %q does not say %q", j.diag.Details, d)
				}
			}
			if j.tail != tt.tail {
				t.Errorf("tail %q, want %q", j.tail, tt.tail)
			}
		})
	}
}

// An attempt whose process never started (agent.Run failed before one
// ran, returning no result) is a failure judged from the error alone,
// never a panic.
func testJudgeCommandWithoutAProcess(t *testing.T) {
	r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ws := &workflow.Step{ID: "build", Kind: workflow.KindCommand, Timeout: time.Minute, Run: &workflow.Command{Argv: []string{"make"}}}
	tr := &try{r: r, in: &Instance{Step: ws}}
	j := tr.judgeCommand(nil, errors.New("pipe: too many open files"), handoffSource{}, &tailBuffer{max: 1 << 10})
	if j.ok {
		t.Fatal("an attempt with no process succeeded")
	}
	if !strings.Contains(j.diag.Details, "too many open files") {
		t.Errorf("diagnosis %+v does not give the error", j.diag)
	}
}
