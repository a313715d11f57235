package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeEnv names the variable that turns this test binary into one of the
// fake agents below: an agent (of any preset, its command replaced by the
// test binary) whose workflow env sets it to a mode. Like the hostile
// agents, it acts in init, and never as the supervisor.
const fakeEnv = "FAKE_AGENT_MODE"

func init() {
	supervising := len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "supervise"
	if mode := os.Getenv(fakeEnv); mode != "" && !supervising {
		os.Exit(fakeAgent(mode, os.Stdin, os.Stdout))
	}
}

// fakeAgent acts one mode and returns the exit status.
func fakeAgent(mode string, stdin io.Reader, stdout io.Writer) int {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	switch mode {
	case "session":
		// An agent CLI (FAKE_PROTO: codex, gemini or claude) that reports
		// FAKE_SESSION as its session and records its argv in
		// FAKE_RECORD/argv.N for attempt N. Attempt 1 answers against the
		// schema, later ones answer well.
		_, _ = io.Copy(io.Discard, stdin)
		n := os.Getenv("CADENCE_ATTEMPT")
		rec, _ := json.Marshal(os.Args)
		if err := os.WriteFile(filepath.Join(os.Getenv("FAKE_RECORD"), "argv."+n), rec, 0o644); err != nil {
			return 1
		}
		answer := `{"ok": true}`
		if n == "1" {
			answer = `{"ok": "not yet"}`
		}
		if !writeAnswer(w, os.Getenv("FAKE_PROTO"), os.Getenv("FAKE_SESSION"), answer) {
			return 2
		}
	case "linger":
		// An agent that gives a valid final answer in FAKE_PROTO, then
		// does not exit (a CLI waiting on an MCP server or a background
		// child): a stream agent keeps stdout open, a text agent closes
		// it. Its pid goes to FAKE_RECORD.
		_, _ = io.Copy(io.Discard, stdin)
		if err := writeAtomic(os.Getenv("FAKE_RECORD"), strconv.Itoa(os.Getpid())+"\n"); err != nil {
			return 1
		}
		proto := os.Getenv("FAKE_PROTO")
		if !writeAnswer(w, proto, "5e55a1d0-0000-4000-8000-00000000000a", `{"ok": true}`) {
			return 2
		}
		if err := w.Flush(); err != nil {
			return 1
		}
		if proto == "text" {
			os.Stdout.Close()
		}
		time.Sleep(time.Hour)
	case "escape":
		// An agent that starts a process which leaves its process group
		// (FAKE_ESCAPE: setsid, setpgid, or doublefork: a setsid child
		// whose parent exits at once), writes that process's pid to
		// FAKE_RECORD, then answers (FAKE_THEN answer) or hangs.
		pid, err := startEscaped(os.Getenv("FAKE_ESCAPE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := writeAtomic(os.Getenv("FAKE_RECORD"), strconv.Itoa(pid)+"\n"); err != nil {
			return 1
		}
		if os.Getenv("FAKE_THEN") != "answer" {
			time.Sleep(time.Hour)
		}
		fmt.Fprintln(w, `{"ok": true}`)
	case "middle":
		// The first fork of a double fork: start the escaped process in a
		// session of its own, print its pid, exit.
		pid, err := startEscaped("setsid")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(w, pid)
	case "sleeper":
		time.Sleep(time.Hour)
	case "env":
		// Record the environment in FAKE_RECORD, then answer.
		_, _ = io.Copy(io.Discard, stdin)
		rec, _ := json.Marshal(os.Environ())
		if err := writeAtomic(os.Getenv("FAKE_RECORD"), string(rec)); err != nil {
			return 1
		}
		fmt.Fprintln(w, `{"ok": true}`)
	default:
		return 2
	}
	return 0
}

// startEscaped starts this binary as a sleeper that leaves the caller's
// process group the given way, and returns its pid.
func startEscaped(how string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	env := append(os.Environ(), fakeEnv+"=sleeper")
	switch how {
	case "setsid", "setpgid":
		cmd := exec.Command(exe)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: how == "setsid", Setpgid: how == "setpgid"}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	case "doublefork":
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), fakeEnv+"=middle")
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("double fork: %w", err)
		}
		return strconv.Atoi(strings.TrimSpace(string(out)))
	}
	return 0, fmt.Errorf("escape %q: want setsid, setpgid or doublefork", how)
}

// writeAtomic writes a small file that appears whole or not at all.
func writeAtomic(path, content string) error {
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// writeAnswer writes a whole turn of an agent speaking proto (codex,
// gemini, claude, or text: the answer alone) that names session sid and
// answers answer. It reports false for an unknown proto.
func writeAnswer(w io.Writer, proto, sid, answer string) bool {
	q, text := jsonText(sid), jsonText(answer)
	switch proto {
	case "codex":
		fmt.Fprintf(w, `{"type":"thread.started","thread_id":%s}`+"\n", q)
		fmt.Fprintf(w, `{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":%s}}`+"\n", text)
		fmt.Fprintln(w, `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`)
	case "gemini":
		fmt.Fprintf(w, `{"type":"init","session_id":%s,"model":"m"}`+"\n", q)
		fmt.Fprintf(w, `{"type":"message","role":"assistant","content":%s,"delta":true}`+"\n", text)
		fmt.Fprintln(w, `{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}`)
	case "claude":
		fmt.Fprintf(w, `{"type":"system","subtype":"init","session_id":%s}`+"\n", q)
		fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"result":%s,"session_id":%s}`+"\n", text, q)
	case "text":
		fmt.Fprintln(w, answer)
	default:
		return false
	}
	return true
}

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAgentSessionIDNeverBecomesAFlag: an agent that reports a flag as its
// session id (a fake Codex configured --sandbox read-only naming its
// thread --dangerously-bypass-approvals-and-sandbox, a fake Gemini with
// --approval-mode default naming its session --yolo) does not get that
// flag on the follow-up's command line: the id is not used, the second
// attempt starts a fresh session, and the first attempt says why. A plain
// id is continued as before.
func TestAgentSessionIDNeverBecomesAFlag(t *testing.T) {
	const bypass = "--dangerously-bypass-approvals-and-sandbox"
	tests := []struct {
		name, preset, proto, session string
		args, continueArgs, output   string
		// resumeWord is the argv word of a resumed session.
		resumeWord string
	}{
		{name: "codex", preset: "codex", proto: "codex", session: bypass, args: "[--sandbox, read-only]", resumeWord: "resume"},
		{name: "gemini", preset: "gemini", proto: "gemini", session: "--yolo", args: "[--approval-mode, default]", resumeWord: "--resume=--yolo"},
		{name: "claude", preset: "claude", proto: "claude", session: "--dangerously-skip-permissions", args: "[]", resumeWord: "--resume=--dangerously-skip-permissions"},
		{name: "exec continue_args", preset: "exec", proto: "codex", session: bypass, args: "[]", output: "codex-jsonl",
			continueArgs: `[--resume, "{{ .SessionID }}"]`, resumeWord: "--resume"},
		{name: "codex plain id", preset: "codex", proto: "codex", session: "0199a213-81c0-7800-8aa1-bbab2a035a53", args: "[--sandbox, read-only]", resumeWord: "resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			record := t.TempDir()
			agentYAML := "    preset: " + tt.preset + "\n    command: [" + strconv.Quote(selfPath(t)) + "]\n    args: " + tt.args + "\n"
			if tt.output != "" {
				agentYAML += "    output: " + tt.output + "\n"
			}
			if tt.continueArgs != "" {
				agentYAML += "    continue_args: " + tt.continueArgs + "\n"
			}
			agentYAML += "    env: {" + fakeEnv + ": session, FAKE_PROTO: " + tt.proto + ", FAKE_SESSION: " + strconv.Quote(tt.session) +
				", FAKE_RECORD: " + strconv.Quote(record) + "}\n"
			p := newProject(t, `version: 1
defaults:
  agent: fake
  retry: {max_attempts: 2, backoff: fixed, initial: 10ms, jitter: none}
agents:
  fake:
`+agentYAML+`steps:
  - {id: one, prompt: go, handoff: {schema: s.json}}
`, map[string]string{"s.json": boolSchema})
			p.cadence(nil, "run").exits(t, 0)
			var argv []string
			b, err := os.ReadFile(filepath.Join(record, "argv.2"))
			if err != nil {
				t.Fatalf("attempt 2 did not run: %v", err)
			}
			if err := json.Unmarshal(b, &argv); err != nil {
				t.Fatal(err)
			}
			plain := !strings.HasPrefix(tt.session, "-")
			if plain {
				if !slices.Contains(argv, tt.resumeWord) || !slices.ContainsFunc(argv, func(a string) bool { return strings.HasSuffix(a, tt.session) }) {
					t.Fatalf("attempt 2 argv %q does not continue session %s", argv, tt.session)
				}
				return
			}
			for _, a := range argv {
				if strings.Contains(a, tt.session) || a == tt.resumeWord {
					t.Fatalf("attempt 2 argv %q holds %q: the agent's output chose its options", argv, a)
				}
			}
			s := step(p.inspect(), "one")
			if len(s.Attempts) != 2 || s.Attempts[1].Kind != "fresh" || s.Attempts[1].Status != "succeeded" {
				t.Fatalf("attempts %+v, want a failed one then a fresh session that succeeded", s.Attempts)
			}
			r := p.cadence(nil, "inspect", "--step", "one", "--attempt", "1")
			r.exits(t, 0)
			if !strings.Contains(r.stdout, "session id the agent reported was not used") || !strings.Contains(r.stdout, "starts with '-'") {
				t.Fatalf("inspect --attempt 1 does not say why the session was not continued:\n%s", r.stdout)
			}
		})
	}
}

// TestEscapedProcessesDieWithTheAttempt: a process the agent starts
// outside its process group (setsid, setpgid, or a double fork that
// orphans it in a session of its own, as daemonising tools and Node's
// detached spawn do) does not outlive the attempt: not when the agent
// answers and exits, not on timeout, not on Ctrl-C of cadence, not when
// cadence is killed with SIGKILL (G6).
func TestEscapedProcessesDieWithTheAttempt(t *testing.T) {
	for _, how := range []string{"setsid", "setpgid", "doublefork"} {
		for _, when := range []string{"success", "timeout", "sigint", "kill9"} {
			t.Run(how+"/"+when, func(t *testing.T) {
				record := filepath.Join(t.TempDir(), "escaped.pid")
				then, timeout := "hang", "2m"
				switch when {
				case "success":
					then = "answer"
				case "timeout":
					// Long enough for the agent (this race-built test
					// binary) to start and record its escaped process on
					// a loaded machine before the timeout stops it.
					timeout = "3s"
				}
				p := newProject(t, `version: 1
defaults:
  agent: fake
  retry: {max_attempts: 1}
  timeout: `+timeout+`
agents:
  fake:
    preset: exec
    command: [`+strconv.Quote(selfPath(t))+`]
    env: {`+fakeEnv+`: escape, FAKE_ESCAPE: `+how+`, FAKE_THEN: `+then+`, FAKE_RECORD: `+strconv.Quote(record)+`}
steps:
  - {id: one, prompt: go, handoff: {schema: s.json}}
`, map[string]string{"s.json": boolSchema})
				escaped := 0
				t.Cleanup(func() {
					if escaped > 0 && alive(escaped) {
						_ = syscall.Kill(escaped, syscall.SIGKILL)
					}
				})
				recorded := func() bool {
					b, err := os.ReadFile(record)
					if err != nil {
						return false
					}
					escaped, err = strconv.Atoi(strings.TrimSpace(string(b)))
					return err == nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := p.command(ctx, nil, "run")
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				switch when {
				case "sigint":
					waitFor(t, "the escaped process", recorded)
					_ = cmd.Process.Signal(syscall.SIGINT)
				case "kill9":
					waitFor(t, "the escaped process", recorded)
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
				r := p.finish(cmd, cmd.Wait(), out.String(), errb.String())
				switch when {
				case "success":
					r.exits(t, 0)
				case "timeout":
					r.exits(t, 1)
				case "sigint":
					r.exits(t, 3)
				case "kill9":
					r.killed(t)
				}
				if !recorded() {
					t.Fatalf("the agent recorded no escaped process\nstderr:\n%s", r.stderr)
				}
				if when != "kill9" && !alive(escaped) {
					// Gone already when cadence exits: nothing waits for it.
					return
				}
				waitFor(t, fmt.Sprintf("escaped process %d to be gone", escaped), func() bool { return !alive(escaped) })
			})
		}
	}
}

// TestFinishedAnswerKeptWhenTheAgentHangs: an agent that gave its final
// answer (a stream agent's result event, a text agent's stdout closed) and
// then does not exit is stopped after exit_grace, and the attempt keeps
// its answer: the step succeeds on attempt 1, well before idle_timeout
// would have called the agent stuck, and the process is gone.
func TestFinishedAnswerKeptWhenTheAgentHangs(t *testing.T) {
	// Far above what a run that keeps its answer takes (exit_grace and two
	// process starts), so that a loaded machine does not reach it; a run
	// that waits for the idle timeout instead takes all of it.
	const idle = 15 * time.Second
	for _, tt := range []struct{ preset, proto, output string }{
		{"claude", "claude", ""},
		{"codex", "codex", ""},
		{"gemini", "gemini", ""},
		{"exec", "text", ""},
		{"exec", "claude", "claude-stream"},
	} {
		t.Run(tt.preset+"/"+tt.proto, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "agent.pid")
			output := ""
			if tt.output != "" {
				output = "\n    output: " + tt.output
			}
			p := newProject(t, `version: 1
defaults:
  agent: fake
  retry: {max_attempts: 1}
  idle_timeout: `+idle.String()+`
  exit_grace: 300ms
agents:
  fake:
    preset: `+tt.preset+`
    command: [`+strconv.Quote(selfPath(t))+`]`+output+`
    env: {`+fakeEnv+`: linger, FAKE_PROTO: `+tt.proto+`, FAKE_RECORD: `+strconv.Quote(record)+`}
steps:
  - {id: one, prompt: go, handoff: {schema: s.json}}
`, map[string]string{"s.json": boolSchema})
			start := time.Now()
			r := p.cadence(nil, "run")
			took := time.Since(start)
			pid := 0
			if b, err := os.ReadFile(record); err == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			if pid > 0 {
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
			r.exits(t, 0)
			s := step(p.inspect(), "one")
			if len(s.Attempts) != 1 || s.Attempts[0].Status != "succeeded" {
				t.Fatalf("attempts %+v, want attempt 1 succeeded", s.Attempts)
			}
			if took >= idle {
				t.Fatalf("the run took %s, as long as idle_timeout %s", took, idle)
			}
			if pid == 0 {
				t.Fatal("the agent recorded no pid")
			}
			waitFor(t, "the agent to be gone", func() bool { return !alive(pid) })
		})
	}
}

// TestCadenceVariablesAreCadencesOwn: cadence running inside a cadence
// step (or under any environment with CADENCE_* variables) gives its
// agents and checks exactly the CADENCE_* variables it sets for them, once
// each: an inherited CADENCE_ITEM_KEY must not tell a non-map step's
// agent it works on an item, nor an inherited CADENCE_STATE or
// CADENCE_FAILPOINT reach a cadence the agent runs. A variable the
// workflow sets in the agent's env: is the workflow's choice, and kept.
func TestCadenceVariablesAreCadencesOwn(t *testing.T) {
	record := filepath.Join(t.TempDir(), "agent.env")
	p := newProject(t, `version: 1
defaults:
  agent: fake
  retry: {max_attempts: 1}
agents:
  fake:
    preset: exec
    command: [`+strconv.Quote(selfPath(t))+`]
    env: {`+fakeEnv+`: env, FAKE_RECORD: `+strconv.Quote(record)+`, CADENCE_CHOSEN: by-the-workflow}
steps:
  - id: one
    prompt: go
    handoff: {schema: s.json}
    checks:
      - {name: env, run: env > check.env}
`, map[string]string{"s.json": boolSchema})
	inherited := []string{"CADENCE_ITEM_KEY=outer-item", "CADENCE_STEP=outer-step", "CADENCE_SESSION_ID=outer-session",
		"CADENCE_HANDOFF_PATH=/outer/handoff.json", "CADENCE_CHECK=outer-check", "CADENCE_OUTER_ONLY=1",
		"CADENCE_FAILPOINT=", "CADENCE_STOREFAULT=", "CADENCE_DEBUG="}
	p.cadence(inherited, "run").exits(t, 0)
	rep := p.inspect()
	s := step(rep, "one")
	if len(s.Attempts) != 1 {
		t.Fatalf("attempts %+v, want one", s.Attempts)
	}
	want := map[string]string{
		"CADENCE_RUN_ID":          rep.Run.ID,
		"CADENCE_STEP":            "one",
		"CADENCE_ATTEMPT":         "1",
		"CADENCE_IDEMPOTENCY_KEY": rep.Run.ID + "/one",
		"CADENCE_SESSION_ID":      s.Attempts[0].SessionID,
		"CADENCE_PROJECT_DIR":     p.dir,
		"CADENCE_OUTPUTS_DIR":     filepath.Join(p.dir, ".cadence", "outputs", rep.Run.ID, "one"),
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var agentEnv []string
	if err := json.Unmarshal(b, &agentEnv); err != nil {
		t.Fatal(err)
	}
	agentWant := map[string]string{"CADENCE_CHOSEN": "by-the-workflow"}
	for k, v := range want {
		agentWant[k] = v
	}
	checkEnvOf(t, "agent", agentEnv, agentWant)
	b, err = os.ReadFile(filepath.Join(p.dir, "check.env"))
	if err != nil {
		t.Fatal(err)
	}
	checkWant := map[string]string{"CADENCE_CHECK": "env"}
	for k, v := range want {
		checkWant[k] = v
	}
	var checkEnv []string
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "CADENCE_HANDOFF_PATH" {
			if !strings.HasPrefix(v, filepath.Join(p.dir, ".cadence")) {
				t.Errorf("check: CADENCE_HANDOFF_PATH=%s, not the stored handoff", v)
			}
			continue
		}
		checkEnv = append(checkEnv, kv)
	}
	checkEnvOf(t, "check", checkEnv, checkWant)
}

// checkEnvOf compares the CADENCE_* variables of env with want: each set
// once, to its value, and no other.
func checkEnvOf(t *testing.T, who string, env []string, want map[string]string) {
	t.Helper()
	got := map[string][]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "CADENCE_") {
			got[k] = append(got[k], v)
		}
	}
	for k, v := range want {
		if vs := got[k]; len(vs) != 1 || vs[0] != v {
			t.Errorf("%s: %s = %q, want %q once", who, k, vs, v)
		}
	}
	for k, vs := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s = %q, which cadence did not set", who, k, vs)
		}
	}
}
