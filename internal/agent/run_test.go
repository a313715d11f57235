package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

func TestRunTextProtocolCapture(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      []byte
		wantText   string
		wantExit   int
		wantStderr string
	}{
		{"prompt on stdin echoed", []string{"cat"}, []byte("hello prompt\n"), "hello prompt\n", 0, "note on stderr\n"},
		{"nil stdin reads /dev/null", []string{"cat"}, nil, "", 0, "note on stderr\n"},
		{"prompt as argument", []string{"args", "a b", "c"}, nil, "a b\nc\n", 0, ""},
		{"non-zero exit", []string{"exit", "3"}, nil, "bye\n", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			spec := helperSpec(t, tt.args...)
			spec.Stdin = tt.stdin
			spec.Output = &out
			res := mustRun(t, context.Background(), spec)
			if string(res.Text) != tt.wantText {
				t.Errorf("Text = %q, want %q", res.Text, tt.wantText)
			}
			if res.ExitCode != tt.wantExit || res.Stop != agent.StopNone {
				t.Errorf("exit %d stop %q, want exit %d and no stop", res.ExitCode, res.Stop, tt.wantExit)
			}
			if res.StderrTail != tt.wantStderr {
				t.Errorf("StderrTail = %q, want %q", res.StderrTail, tt.wantStderr)
			}
			if res.StdoutBytes != int64(len(tt.wantText)) {
				t.Errorf("StdoutBytes = %d, want %d", res.StdoutBytes, len(tt.wantText))
			}
			if !strings.Contains(out.String(), tt.wantText) || !strings.Contains(out.String(), tt.wantStderr) {
				t.Errorf("Output %q lacks stdout %q or stderr %q", out.String(), tt.wantText, tt.wantStderr)
			}
			if res.PID <= 0 {
				t.Errorf("PID = %d", res.PID)
			}
		})
	}
}

func TestRunClaudeStreamFromProcess(t *testing.T) {
	spec := helperSpec(t, "print", "testdata/claude_result_not_last.jsonl")
	spec.Dir = "" // the transcript path is relative to the package
	spec.Protocol = agent.ProtocolClaudeStream
	res := mustRun(t, context.Background(), spec)
	if string(res.Text) != `{"done": true}` || res.SessionID != "12121212-3434-4565-8787-909090909090" {
		t.Errorf("Text %q session %q", res.Text, res.SessionID)
	}
	if res.CostUSD != 0.5 || res.Turns != 2 || res.InputTokens != 1000 || res.OutputTokens != 200 {
		t.Errorf("cost %v turns %d tokens %d/%d", res.CostUSD, res.Turns, res.InputTokens, res.OutputTokens)
	}
}

func TestRunOutputCap(t *testing.T) {
	var out bytes.Buffer
	spec := helperSpec(t, "bytes", "5000")
	spec.Output = &out
	spec.OutputCap = 1000
	res := mustRun(t, context.Background(), spec)
	want := strings.Repeat("y", 1000) + "\n[cadence: output truncated at 1000 bytes]\n"
	if out.String() != want {
		t.Errorf("Output is %d bytes ending %q, want 1000 bytes and the truncation note", out.Len(), tail(out.String(), 60))
	}
	if res.StdoutBytes != 5000 || len(res.Text) != 5000 {
		t.Errorf("StdoutBytes %d, len(Text) %d: the cap must not limit the candidate", res.StdoutBytes, len(res.Text))
	}
}

func TestRunTooLarge(t *testing.T) {
	spec := helperSpec(t, "flood")
	spec.MaxBytes = 1 << 20
	spec.Timeout = 10 * time.Second
	res := mustRun(t, context.Background(), spec)
	if res.Stop != agent.StopTooLarge {
		t.Fatalf("Stop = %q, want too_large", res.Stop)
	}
	if res.StdoutBytes <= spec.MaxBytes || int64(len(res.Text)) > spec.MaxBytes {
		t.Errorf("StdoutBytes %d, len(Text) %d, MaxBytes %d", res.StdoutBytes, len(res.Text), spec.MaxBytes)
	}
}

// TestRunTranscriptIsNotTheHandoff: a stream protocol's output is a
// transcript, not the handoff; MaxBytes bounds only its final answer, and
// MaxEventBytes one line, which is skipped and counted rather than parsed.
func TestRunTranscriptIsNotTheHandoff(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name          string
		args          []string
		maxBytes      int64
		maxEventBytes int64
		check         func(t *testing.T, r *agent.Result)
	}{
		{"a transcript far over max_bytes with a small answer", []string{"transcript", "200", "65536", "small"}, mib, 0, func(t *testing.T, r *agent.Result) {
			if r.Stop != agent.StopNone || string(r.Text) != `{"ok": true}` || r.TextTooLarge || r.SkippedEvents != 0 {
				t.Errorf("Stop %q Text %q too large %v skipped %d", r.Stop, r.Text, r.TextTooLarge, r.SkippedEvents)
			}
			if r.StdoutBytes < 200*65536 {
				t.Errorf("StdoutBytes = %d, want the whole transcript", r.StdoutBytes)
			}
		}},
		{"an answer over max_bytes", []string{"transcript", "2", "100", "big:2000000"}, mib, 0, func(t *testing.T, r *agent.Result) {
			if r.Stop != agent.StopNone || !r.TextTooLarge || len(r.Text) != 0 || r.TextBytes != 2000000 {
				t.Errorf("Stop %q too large %v len(Text) %d TextBytes %d", r.Stop, r.TextTooLarge, len(r.Text), r.TextBytes)
			}
		}},
		{"an event over max_event_bytes is skipped, the answer after it kept", []string{"transcript", "3", "3000000", "small"}, mib, 2 * mib, func(t *testing.T, r *agent.Result) {
			if string(r.Text) != `{"ok": true}` || r.SkippedEvents != 3 || r.SkippedResult {
				t.Errorf("Text %q skipped %d result skipped %v", r.Text, r.SkippedEvents, r.SkippedResult)
			}
			if r.SkippedEventBytes < 3*3000000 {
				t.Errorf("SkippedEventBytes = %d", r.SkippedEventBytes)
			}
		}},
		{"a result event over max_event_bytes fails the answer", []string{"transcript", "1", "100", "big:3000000"}, 4 * mib, 2 * mib, func(t *testing.T, r *agent.Result) {
			if !r.SkippedResult || r.SkippedEvents != 1 || len(r.Text) != 0 {
				t.Errorf("result skipped %v skipped %d Text %q", r.SkippedResult, r.SkippedEvents, r.Text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := helperSpec(t, tt.args...)
			spec.Protocol = agent.ProtocolClaudeStream
			spec.MaxBytes = tt.maxBytes
			spec.MaxEventBytes = tt.maxEventBytes
			spec.Timeout = 30 * time.Second
			res := mustRun(t, context.Background(), spec)
			if res.ExitCode != 0 {
				t.Fatalf("helper exited %d: %s", res.ExitCode, res.StderrTail)
			}
			tt.check(t, res)
		})
	}
}

func TestRunKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		timeout  time.Duration
		cancel   bool
		wantStop agent.StopReason
	}{
		// The timeout leaves the helper time to start its child and print
		// their pids even on a loaded machine (500 ms did not, at a load
		// average of 14).
		{"timeout, TERM honoured", []string{"tree"}, 2 * time.Second, false, agent.StopTimeout},
		{"timeout, TERM ignored so KILL after grace", []string{"tree", "ignore-term"}, 2 * time.Second, false, agent.StopTimeout},
		{"context cancelled", []string{"tree"}, 0, true, agent.StopInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := helperSpec(t, tt.args...)
			spec.Timeout = tt.timeout
			spec.Grace = 300 * time.Millisecond
			if tt.cancel {
				spec.Output = &watchWriter{want: "pids ", fire: cancel}
			}
			res := mustRun(t, ctx, spec)
			if res.Stop != tt.wantStop {
				t.Errorf("Stop = %q, want %q", res.Stop, tt.wantStop)
			}
			if res.ExitCode != -1 {
				t.Errorf("ExitCode = %d, want -1 (killed by a signal)", res.ExitCode)
			}
			var parent, child int
			if _, err := fmtSscanf(string(res.Text), &parent, &child); err != nil {
				t.Fatalf("helper output %q: %v", res.Text, err)
			}
			if parent != res.PID {
				t.Errorf("helper pid %d, Result.PID %d", parent, res.PID)
			}
			waitGone(t, parent, child)
		})
	}
}

func TestRunIdleTimeout(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantStop agent.StopReason
	}{
		{"silent agent is stuck", []string{"sleep"}, agent.StopStuck},
		{"steady output keeps it alive", []string{"tick", "10", "300ms"}, agent.StopNone},
		{"silent but busy is not stuck", []string{"burn", "5s"}, agent.StopNone},
		{"a detached child's work counts", []string{"burn-child", "5s"}, agent.StopNone},
		{"a silent child that sleeps is stuck", []string{"tree"}, agent.StopStuck},
	}
	for _, tt := range tests {
		for _, supervised := range []bool{false, true} {
			name := tt.name
			if supervised {
				name += ", supervised"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // they mostly wait on the clock
				spec := helperSpec(t, tt.args...)
				spec.IdleTimeout = 2 * time.Second
				spec.Timeout = 30 * time.Second
				if supervised {
					spec.Supervisor = selfExe(t)
				}
				res := mustRun(t, context.Background(), spec)
				if res.Stop != tt.wantStop {
					t.Errorf("Stop = %q after %v, want %q", res.Stop, res.Elapsed, tt.wantStop)
				}
				if tt.wantStop == agent.StopNone && strings.HasPrefix(tt.args[0], "burn") && !strings.Contains(string(res.Text), `{"ok": true}`) {
					t.Errorf("Text = %q, want the answer after the silent work", res.Text)
				}
				waitGone(t, res.PID)
			})
		}
	}
}

func TestRunStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec agent.Spec
		want error
	}{
		{"empty argv", agent.Spec{}, agent.ErrNoCommand},
		{"unknown protocol", agent.Spec{Argv: []string{"true"}, Protocol: "morse"}, agent.ErrUnsupportedProtocol},
		{"missing program", agent.Spec{Argv: []string{"/nonexistent/cadence-agent"}}, nil},
		{"relative program under Dir", agent.Spec{Argv: []string{"./no-such-agent"}, Dir: t.TempDir()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := agent.Run(context.Background(), tt.spec)
			if err == nil {
				t.Fatalf("Run succeeded with %+v", res)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRunOnStartError(t *testing.T) {
	errRefused := errors.New("refused")
	var started int
	spec := helperSpec(t, "sleep")
	spec.OnStart = func(pid int) error {
		started = pid
		return errRefused
	}
	res, err := agent.Run(context.Background(), spec)
	if !errors.Is(err, errRefused) || res != nil {
		t.Fatalf("Run = %v, %v; want nil and the OnStart error", res, err)
	}
	if started <= 0 {
		t.Fatalf("OnStart got pid %d", started)
	}
	waitGone(t, started)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func TestRunResolvesProgram(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(selfExe(t), filepath.Join(bin, "my-agent")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		env  []string
	}{
		{"relative to the project dir", []string{"./bin/my-agent", "args", "ok"}, helperEnviron()},
		{"bare name in the agent's PATH", []string{"my-agent", "args", "ok"}, helperEnviron("PATH=" + bin)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, context.Background(), agent.Spec{Argv: tt.argv, Env: tt.env, Dir: dir})
			if string(res.Text) != "ok\n" || res.ExitCode != 0 {
				t.Errorf("Text %q exit %d", res.Text, res.ExitCode)
			}
		})
	}
	_, err := agent.Run(context.Background(), agent.Spec{Argv: []string{"my-agent"}, Env: []string{"PATH=/nonexistent"}})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Run with the program outside PATH: %v, want exec.ErrNotFound", err)
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var started bool
	spec := helperSpec(t, "sleep")
	spec.OnStart = func(int) error { started = true; return nil }
	if _, err := agent.Run(ctx, spec); !errors.Is(err, context.Canceled) || started {
		t.Errorf("Run = %v, started %v; want context.Canceled and no process", err, started)
	}
}

func TestRunDoesNotWaitForEscapedDescendant(t *testing.T) {
	spec := helperSpec(t, "escape")
	res := mustRun(t, context.Background(), spec)
	var pid int
	if _, err := fmt.Sscanf(string(res.Text), "escaped %d", &pid); err != nil {
		t.Fatalf("helper output %q: %v", res.Text, err)
	}
	// The escaped process is outside the agent's group by design; end it.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Errorf("kill escaped helper %d: %v", pid, err)
	}
	if res.ExitCode != 0 || res.Stop != agent.StopNone {
		t.Errorf("exit %d stop %q", res.ExitCode, res.Stop)
	}
	if res.Elapsed > 10*time.Second {
		t.Errorf("Run took %v: it waited for a process outside the group", res.Elapsed)
	}
}

// TestExitGraceAfterTheAnswer: an agent that gave its final answer and
// does not exit is stopped ExitGrace later, with its answer, whether or
// not it runs under the supervisor; Timeout and IdleTimeout no longer
// apply once the answer is in.
func TestExitGraceAfterTheAnswer(t *testing.T) {
	for _, tt := range []struct {
		mode  string
		proto agent.Protocol
	}{
		{"answer-hang", agent.ProtocolClaudeStream},
		{"close-hang", agent.ProtocolText},
	} {
		for _, supervised := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/supervised=%v", tt.mode, supervised), func(t *testing.T) {
				spec := helperSpec(t, tt.mode)
				spec.Protocol = tt.proto
				if supervised {
					spec.Supervisor = selfExe(t)
				}
				spec.ExitGrace = 200 * time.Millisecond
				spec.IdleTimeout = time.Minute
				spec.Timeout = 2 * time.Minute
				res := mustRun(t, context.Background(), spec)
				if res.Stop != agent.StopLingered {
					t.Fatalf("Stop = %q, want lingered", res.Stop)
				}
				if strings.TrimSpace(string(res.Text)) != `{"ok": true}` {
					t.Fatalf("Text = %q, want the answer", res.Text)
				}
				if res.Elapsed > 10*time.Second {
					t.Fatalf("the stop took %v", res.Elapsed)
				}
				waitGone(t, res.PID)
			})
		}
	}
}

// A program that cannot be started is ErrStart, whoever starts it: this
// process (a name on no PATH, a file that is not executable, a script whose
// interpreter is missing) or the supervisor, which reports the last one
// through its exit status and stderr.
func TestRunStartFailureIsErrStart(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/no/such/interpreter\necho '{}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(plain, []byte("text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		argv       []string
		supervised bool
		want       string
	}{
		{"not on PATH", []string{"no-such-agent-program"}, false, "executable file not found"},
		{"not executable", []string{plain}, false, "permission denied"},
		{"missing interpreter", []string{script}, false, "(the file exists: the interpreter its #! line names does not)"},
		{"missing interpreter, supervised", []string{script}, true, "(the file exists: the interpreter its #! line names does not)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := agent.Spec{Argv: tt.argv, Dir: dir, Env: helperEnviron(), Protocol: agent.ProtocolText, Timeout: 10 * time.Second}
			if tt.supervised {
				spec.Supervisor = selfExe(t)
			}
			_, err := agent.Run(context.Background(), spec)
			if !errors.Is(err, agent.ErrStart) {
				t.Fatalf("Run: %v, want ErrStart", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: %v, want it to say %q", err, tt.want)
			}
		})
	}
}
