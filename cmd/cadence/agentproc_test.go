package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
		sid, text := jsonText(os.Getenv("FAKE_SESSION")), jsonText(answer)
		switch os.Getenv("FAKE_PROTO") {
		case "codex":
			fmt.Fprintf(w, `{"type":"thread.started","thread_id":%s}`+"\n", sid)
			fmt.Fprintf(w, `{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":%s}}`+"\n", text)
			fmt.Fprintln(w, `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`)
		case "gemini":
			fmt.Fprintf(w, `{"type":"init","session_id":%s,"model":"m"}`+"\n", sid)
			fmt.Fprintf(w, `{"type":"message","role":"assistant","content":%s,"delta":true}`+"\n", text)
			fmt.Fprintln(w, `{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}`)
		case "claude":
			fmt.Fprintf(w, `{"type":"system","subtype":"init","session_id":%s}`+"\n", sid)
			fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"result":%s,"session_id":%s}`+"\n", text, sid)
		default:
			return 2
		}
	default:
		return 2
	}
	return 0
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
