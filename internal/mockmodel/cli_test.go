//go:build agentcli

package mockmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the real agent CLIs against the mock, one turn each. They
// need the CLIs installed:
//
//	npm install --prefix /work/.cache/agents @anthropic-ai/claude-code@2.1.332 \
//	    @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.24.4 \
//	    opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @github/copilot@1.0.102
//	go test -tags agentcli ./internal/mockmodel/
//
// CADENCE_AGENT_BIN_DIR overrides where the binaries are looked up.
// CADENCE_UPDATE_TRANSCRIPTS=1 rewrites testdata/transcripts from the runs.

const (
	defaultBinDir = "/work/.cache/agents/node_modules/.bin"
	installHint   = "npm install --prefix /work/.cache/agents @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.24.4 opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @github/copilot@1.0.102 (or: make agents)"
	transcriptDir = "../../testdata/transcripts"

	unknownSession = "4b9b3e52-6c1e-4f43-9d7a-0c1f5a9e2d11"
	cliTimeout     = 3 * time.Minute // opencode took over a minute to start on a loaded machine
)

// agentCLI describes how to drive one CLI against the mock.
type agentCLI struct {
	name string // binary name and transcript folder
	// setup prepares the scratch home before the first run.
	setup func(t *testing.T, sb sandbox)
	// env is the CLI's environment besides PATH, HOME and TMPDIR.
	env func(s *Server, sb sandbox) []string
	// first is the argv (after the binary) of a first turn, prompt on stdin.
	first func(s *Server, sb sandbox) []string
	// resume is the argv of a follow-up turn in session id.
	resume func(s *Server, sb sandbox, id string) []string
	// session finds the session id in the events.
	session func(events []map[string]any) string
	// answer finds the final answer text in the events.
	answer func(events []map[string]any) string
	// overloaded is the status the provider uses for "overloaded".
	overloaded int
	// retriesForever: the CLI retries a 429 or 5xx until it gets through,
	// whatever its settings (opencode); TestAgentCLIRetriesForever
	// records it instead of TestAgentCLIErrors.
	retriesForever bool
	// failsWithExitZero: the CLI reports a failed model call in its
	// stream and exits 0 (pi's stopReason "error").
	failsWithExitZero bool
}

var claudeCLI = agentCLI{
	name:  "claude",
	setup: func(*testing.T, sandbox) {},
	env: func(s *Server, sb sandbox) []string {
		return []string{
			"ANTHROPIC_BASE_URL=" + s.URL,
			"ANTHROPIC_API_KEY=sk-ant-mock",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1",
			fmt.Sprintf("CLAUDE_CODE_MAX_RETRIES=%d", sb.retries),
		}
	},
	first: func(*Server, sandbox) []string { return []string{"-p", "--output-format", "stream-json", "--verbose"} },
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"-p", "--output-format", "stream-json", "--verbose", "--resume=" + id}
	},
	session: func(events []map[string]any) string { return lastString(events, "", "session_id") },
	answer: func(events []map[string]any) string {
		return lastString(events, "result", "result")
	},
	overloaded: 529,
}

var codexCLI = agentCLI{
	name: "codex",
	setup: func(t *testing.T, sb sandbox) {
		if err := os.MkdirAll(filepath.Join(sb.home, ".codex"), 0o755); err != nil {
			t.Fatal(err)
		}
	},
	env: func(s *Server, sb sandbox) []string {
		return []string{"CODEX_HOME=" + filepath.Join(sb.home, ".codex"), "MOCK_API_KEY=sk-mock"}
	},
	first: func(s *Server, sb sandbox) []string {
		return append([]string{"exec", "--json", "--skip-git-repo-check"}, append(codexProvider(s, sb), "-")...)
	},
	resume: func(s *Server, sb sandbox, id string) []string {
		args := append([]string{"exec", "resume", "--json", "--skip-git-repo-check"}, codexProvider(s, sb)...)
		return append(args, id, "-")
	},
	session: func(events []map[string]any) string { return lastString(events, "thread.started", "thread_id") },
	answer: func(events []map[string]any) string {
		var text string
		for _, e := range events {
			item, _ := e["item"].(map[string]any)
			if e["type"] == "item.completed" && item["type"] == "agent_message" {
				text, _ = item["text"].(string)
			}
		}
		return text
	},
	overloaded: 529,
}

// codexProvider points codex at the mock with sb.retries request retries
// and no stream retries.
func codexProvider(s *Server, sb sandbox) []string {
	return []string{
		"-c", "model_provider=mock",
		"-c", fmt.Sprintf(`model_providers.mock={name="mock",base_url="%s/v1",wire_api="responses",env_key="MOCK_API_KEY",request_max_retries=%d,stream_max_retries=%d}`, s.URL, sb.retries, sb.retries),
	}
}

var geminiCLI = agentCLI{
	name: "gemini",
	setup: func(t *testing.T, sb sandbox) {
		settings := fmt.Sprintf(`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":%d}}`, sb.retries+1)
		writeFile(t, filepath.Join(sb.home, ".gemini", "settings.json"), settings)
	},
	env: func(s *Server, sb sandbox) []string {
		return []string{
			"GOOGLE_GEMINI_BASE_URL=" + s.URL,
			"GEMINI_API_KEY=mock-key",
			"GEMINI_CLI_TRUST_WORKSPACE=true",
		}
	},
	first: func(*Server, sandbox) []string { return []string{"-o", "stream-json"} },
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"-o", "stream-json", "--resume", id}
	},
	session: func(events []map[string]any) string { return lastString(events, "init", "session_id") },
	answer: func(events []map[string]any) string {
		var text strings.Builder
		for _, e := range events {
			if e["type"] == "message" && e["role"] == "assistant" {
				s, _ := e["content"].(string)
				text.WriteString(s)
			}
		}
		return text.String()
	},
	overloaded: 503,
}

// qwenCLI drives Qwen Code through its OpenAI-compatible provider: the
// chat completions API at the mock, key and model from the environment.
// Its retries of a 429 are set by the settings file's
// model.generationConfig.maxRetries.
var qwenCLI = agentCLI{
	name: "qwen",
	setup: func(t *testing.T, sb sandbox) {
		settings := fmt.Sprintf(`{"security":{"auth":{"selectedType":"openai"}},"model":{"generationConfig":{"maxRetries":%d}},"privacy":{"usageStatisticsEnabled":false}}`, sb.retries)
		writeFile(t, filepath.Join(sb.home, ".qwen", "settings.json"), settings)
	},
	env: func(s *Server, sb sandbox) []string {
		return []string{
			"OPENAI_BASE_URL=" + s.URL + "/v1",
			"OPENAI_API_KEY=sk-qwen-mock",
			"OPENAI_MODEL=qwen3-coder-plus",
		}
	},
	first: func(*Server, sandbox) []string {
		return []string{"-o", "stream-json", "--approval-mode", "yolo", "--auth-type", "openai"}
	},
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"-o", "stream-json", "--approval-mode", "yolo", "--auth-type", "openai", "--resume", id}
	},
	session: func(events []map[string]any) string { return lastString(events, "", "session_id") },
	answer: func(events []map[string]any) string {
		return lastString(events, "result", "result")
	},
	overloaded: 503,
}

// opencodeCLI drives opencode through a custom OpenAI-compatible provider
// given in OPENCODE_CONFIG_CONTENT, its inline configuration.
var opencodeCLI = agentCLI{
	name:  "opencode",
	setup: func(*testing.T, sandbox) {},
	env: func(s *Server, sb sandbox) []string {
		return []string{"OPENCODE_CONFIG_CONTENT=" + opencodeConfig(s)}
	},
	first: func(*Server, sandbox) []string { return []string{"run", "--format", "json"} },
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"run", "--format", "json", "--session", id}
	},
	session: func(events []map[string]any) string { return lastString(events, "", "sessionID") },
	answer: func(events []map[string]any) string {
		var text string
		for _, e := range events {
			part, _ := e["part"].(map[string]any)
			if e["type"] == "text" {
				text, _ = part["text"].(string)
			}
		}
		return text
	},
	overloaded:     503,
	retriesForever: true,
}

// opencodeConfig is an opencode configuration whose only model is the
// mock's, through the OpenAI-compatible provider bundled with opencode,
// with no sharing, no update check and no auto-compaction.
func opencodeConfig(s *Server) string {
	return fmt.Sprintf(`{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled",`+
		`"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"%s/v1","apiKey":"sk-opencode-mock"},`+
		`"models":{"m1":{"name":"m1"}}}},"model":"mock/m1","small_model":"mock/m1"}`, s.URL)
}

// piCLI drives pi through a custom provider in ~/.pi/agent/models.json on
// the chat completions API, with a price so that it reports a cost, and
// its own retries set by settings.json.
var piCLI = agentCLI{
	name: "pi",
	setup: func(t *testing.T, sb sandbox) {
		writeFile(t, filepath.Join(sb.home, ".pi", "agent", "settings.json"),
			fmt.Sprintf(`{"retry":{"enabled":%v,"maxRetries":%d,"baseDelayMs":500,"provider":{"maxRetries":0}}}`, sb.retries > 0, max(sb.retries, 1)))
	},
	env: func(s *Server, sb sandbox) []string {
		// models.json holds the mock's URL, known only now.
		models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"sk-pi-mock",`+
			`"compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},`+
			`"models":[{"id":"m1","cost":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0}}]}}}`, s.URL)
		path := filepath.Join(sb.home, ".pi", "agent", "models.json")
		if err := os.WriteFile(path, []byte(models), 0o644); err != nil {
			panic(err)
		}
		return nil
	},
	first: func(*Server, sandbox) []string {
		return []string{"-p", "--mode", "json", "--provider", "mock", "--model", "m1"}
	},
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"-p", "--mode", "json", "--provider", "mock", "--model", "m1", "--session", id}
	},
	session: func(events []map[string]any) string { return lastString(events, "session", "id") },
	answer: func(events []map[string]any) string {
		var text string
		for _, e := range events {
			msg, _ := e["message"].(map[string]any)
			if e["type"] != "message_end" || msg["role"] != "assistant" {
				continue
			}
			text = ""
			for _, c := range listOf(msg["content"]) {
				if c["type"] == "text" {
					s, _ := c["text"].(string)
					text += s
				}
			}
		}
		return text
	},
	overloaded:        503,
	failsWithExitZero: true,
}

// copilotCLI drives GitHub Copilot CLI through its custom provider
// (BYOK): the chat completions API at COPILOT_PROVIDER_BASE_URL, in
// offline mode, so that no GitHub login, telemetry or update is involved.
var copilotCLI = agentCLI{
	name:  "copilot",
	setup: func(*testing.T, sandbox) {},
	env: func(s *Server, sb sandbox) []string {
		return []string{
			"COPILOT_PROVIDER_BASE_URL=" + s.URL + "/v1",
			"COPILOT_PROVIDER_API_KEY=sk-copilot-mock",
			"COPILOT_MODEL=m1",
			"COPILOT_OFFLINE=true",
			"COPILOT_AUTO_UPDATE=false",
		}
	},
	first: func(*Server, sandbox) []string {
		return []string{"--output-format", "json", "--allow-all-tools"}
	},
	resume: func(_ *Server, _ sandbox, id string) []string {
		return []string{"--output-format", "json", "--allow-all-tools", "--resume=" + id}
	},
	session: func(events []map[string]any) string { return lastString(events, "result", "sessionId") },
	answer: func(events []map[string]any) string {
		var text string
		for _, e := range events {
			data, _ := e["data"].(map[string]any)
			if e["type"] == "assistant.message" {
				text, _ = data["content"].(string)
			}
		}
		return text
	},
	overloaded: 503,
}

var agentCLIs = []agentCLI{claudeCLI, codexCLI, geminiCLI, qwenCLI, opencodeCLI, piCLI, copilotCLI}

// cliRun is one finished CLI process.
type cliRun struct {
	Stdout, Stderr []byte
	Exit           int
	Events         []map[string]any // stdout lines that are JSON objects
}

// sandbox is a scratch home with a project folder the CLI runs in and a
// temporary folder, so that nothing a CLI writes lands outside it, and the
// number of times the CLI may retry a failed model request.
type sandbox struct {
	home, project, tmp string
	retries            int
}

func newSandbox(t *testing.T, a agentCLI, retries int) sandbox {
	home := t.TempDir()
	sb := sandbox{home: home, project: filepath.Join(home, "project"), tmp: filepath.Join(home, "tmp"), retries: retries}
	for _, dir := range []string{sb.project, sb.tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a.setup(t, sb)
	return sb
}

// agentBin finds a CLI binary, failing with install instructions when it
// is missing.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("CADENCE_AGENT_BIN_DIR")
	if dir == "" {
		dir = defaultBinDir
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("agent CLI %s not found: %v\ninstall the CLIs with:\n  %s\nor set CADENCE_AGENT_BIN_DIR to the folder that holds claude, codex and gemini", name, err, installHint)
	}
	return path
}

// run runs the CLI in sb with prompt on stdin and a minimal environment:
// nothing of the caller's environment but PATH leaks in, so no real key or
// home is ever used.
func (a agentCLI) run(t *testing.T, s *Server, sb sandbox, prompt string, args []string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin(t, a.name), args...)
	cmd.Dir = sb.project
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + sb.home,
		"TMPDIR=" + sb.tmp,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=1",
	}, a.env(s, sb)...)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := cliRun{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %v: no exit within %v\nstdout:\n%s\nstderr:\n%s", a.name, args, cliTimeout, res.Stdout, res.Stderr)
	case errors.As(err, &exitErr):
		res.Exit = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", a.name, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			res.Events = append(res.Events, ev)
		}
	}
	t.Logf("%s exit %d\nstdout:\n%s\nstderr:\n%s", a.name, res.Exit, res.Stdout, res.Stderr)
	return res
}

// lastString is field of the last event of type typ ("" matches any) that
// has it as a non-empty string.
func lastString(events []map[string]any, typ, field string) string {
	var v string
	for _, e := range events {
		if typ != "" && e["type"] != typ {
			continue
		}
		if s, ok := e[field].(string); ok && s != "" {
			v = s
		}
	}
	return v
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// saveTranscript writes the run to testdata/transcripts/CLI/NAME.* when
// CADENCE_UPDATE_TRANSCRIPTS is set, with the scratch home replaced by
// /home/user and the mock's port by PORT.
func saveTranscript(t *testing.T, a agentCLI, name string, s *Server, sb sandbox, r cliRun) {
	t.Helper()
	if os.Getenv("CADENCE_UPDATE_TRANSCRIPTS") == "" {
		return
	}
	scrub := strings.NewReplacer(sb.home, "/home/user", strings.TrimPrefix(s.URL, "http://"), "127.0.0.1:PORT")
	base := filepath.Join(transcriptDir, a.name, name)
	writeFile(t, base+".jsonl", scrub.Replace(string(r.Stdout)))
	writeFile(t, base+".exit", fmt.Sprintf("%d\n", r.Exit))
	if len(r.Stderr) > 0 {
		writeFile(t, base+".stderr", scrub.Replace(string(r.Stderr)))
	}
}

// saveRequest writes a recorded request body to testdata/NAME.json when
// CADENCE_UPDATE_TRANSCRIPTS is set: real CLI requests are the fixtures of
// the package's own unit tests.
func saveRequest(t *testing.T, name string, sb sandbox, r Request) {
	t.Helper()
	if os.Getenv("CADENCE_UPDATE_TRANSCRIPTS") == "" {
		return
	}
	body := strings.ReplaceAll(string(r.Body), sb.home, "/home/user")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(body), "", " "); err != nil {
		t.Fatalf("indent %s request: %v", name, err)
	}
	writeFile(t, filepath.Join("testdata", name+".json"), pretty.String()+"\n")
}

// TestAgentCLITurnAndResume runs a first turn and a follow-up in the same
// session with each CLI, and checks that the follow-up carried the first
// exchange to the model.
func TestAgentCLITurnAndResume(t *testing.T) {
	for _, a := range agentCLIs {
		t.Run(a.name, func(t *testing.T) {
			s := Start(t, Text(firstAnswer), Text(followupAnswer))
			sb := newSandbox(t, a, 0)

			first := a.run(t, s, sb, firstPrompt, a.first(s, sb))
			saveTranscript(t, a, "success", s, sb, first)
			if first.Exit != 0 {
				t.Fatalf("first turn: exit %d, want 0", first.Exit)
			}
			if got := a.answer(first.Events); got != firstAnswer {
				t.Errorf("first turn answer = %q, want %q", got, firstAnswer)
			}
			id := a.session(first.Events)
			if id == "" {
				t.Fatal("first turn: no session id in the stream")
			}
			for _, r := range s.Requests() {
				t.Logf("request: %s %s?%s kind=%s stream=%v model=%s", r.Method, r.Path, r.Query.Encode(), r.Kind, r.Stream, r.Model())
			}
			turns := s.Turns()
			if len(turns) != 1 {
				t.Fatalf("first turn: mock saw %d turns, want 1", len(turns))
			}
			if !strings.Contains(turns[0].LastUserText(), firstPrompt) {
				t.Errorf("first turn: last user message %q lacks the prompt", turns[0].LastUserText())
			}
			if !turns[0].Stream {
				t.Error("first turn: request was not streamed")
			}

			second := a.run(t, s, sb, followupPrompt, a.resume(s, sb, id))
			saveTranscript(t, a, "resume", s, sb, second)
			if second.Exit != 0 {
				t.Fatalf("follow-up: exit %d, want 0", second.Exit)
			}
			if got := a.answer(second.Events); got != followupAnswer {
				t.Errorf("follow-up answer = %q, want %q", got, followupAnswer)
			}
			if got := a.session(second.Events); got != id {
				t.Errorf("follow-up session = %q, want %q", got, id)
			}
			turns = s.Turns()
			if len(turns) != 2 {
				t.Fatalf("follow-up: mock saw %d turns, want 2", len(turns))
			}
			assertSawHistory(t, turns[1])
			saveRequest(t, a.name+"_resume_request", sb, turns[1])
			for _, r := range s.Requests() {
				if !r.Turn {
					saveRequest(t, a.name+"_"+r.Kind+"_request", sb, r)
				}
			}
		})
	}
}

// assertSawHistory checks that a follow-up request carried the first
// prompt, the first answer as the model's message, and the follow-up.
func assertSawHistory(t *testing.T, r Request) {
	t.Helper()
	var sawPrompt, sawAnswer bool
	for _, m := range r.Conversation() {
		sawPrompt = sawPrompt || m.Role == "user" && strings.Contains(m.Text, firstPrompt)
		sawAnswer = sawAnswer || m.Role == "assistant" && strings.Contains(m.Text, firstAnswer)
	}
	if !sawPrompt || !sawAnswer {
		t.Errorf("follow-up request lacks the earlier exchange (prompt %v, answer %v): %+v", sawPrompt, sawAnswer, r.Conversation())
	}
	if !strings.Contains(r.LastUserText(), followupPrompt) {
		t.Errorf("follow-up: last user message %q lacks the follow-up prompt", r.LastUserText())
	}
}

// TestAgentCLIErrors records how each CLI reports an API error it cannot
// retry away (retries are turned off where the CLI allows it).
func TestAgentCLIErrors(t *testing.T) {
	for _, a := range agentCLIs {
		cases := []struct {
			name  string
			reply Reply
		}{
			{"rate_limited", RateLimited("2")},
			{"overloaded", Reply{Status: a.overloaded}},
			{"auth", Reply{Status: 401}},
		}
		for _, c := range cases {
			if a.retriesForever && c.reply.Status != 401 {
				continue
			}
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				s := Start(t, c.reply)
				sb := newSandbox(t, a, 0)
				r := a.run(t, s, sb, firstPrompt, a.first(s, sb))
				saveTranscript(t, a, c.name, s, sb, r)
				switch {
				case a.failsWithExitZero && r.Exit != 0:
					t.Errorf("exit %d after a %d answer, want 0 with the failure in the stream", r.Exit, c.reply.Status)
				case !a.failsWithExitZero && r.Exit == 0:
					t.Errorf("exit 0 after a %d answer, want non-zero", c.reply.Status)
				}
				if len(s.Turns()) == 0 {
					t.Error("mock saw no turn")
				}
				out := string(r.Stdout) + string(r.Stderr)
				if !strings.Contains(out, fmt.Sprint(c.reply.Status)) {
					t.Errorf("output does not mention status %d", c.reply.Status)
				}
			})
		}
	}
}

// TestAgentCLIUnknownSession resumes a session that does not exist.
func TestAgentCLIUnknownSession(t *testing.T) {
	for _, a := range agentCLIs {
		t.Run(a.name, func(t *testing.T) {
			s := Start(t, Text(firstAnswer))
			sb := newSandbox(t, a, 0)
			r := a.run(t, s, sb, followupPrompt, a.resume(s, sb, unknownSession))
			saveTranscript(t, a, "unknown_session", s, sb, r)
			if r.Exit == 0 {
				t.Error("exit 0 resuming a session that does not exist")
			}
			if n := len(s.Turns()); n != 0 {
				t.Errorf("mock saw %d turns, want none: the CLI should refuse before asking the model", n)
			}
		})
	}
}

// TestGeminiUntrustedFolder records Gemini CLI refusing to run headless in
// a folder it has not been told to trust.
func TestGeminiUntrustedFolder(t *testing.T) {
	a := geminiCLI
	env := a.env
	a.env = func(s *Server, sb sandbox) []string {
		var out []string
		for _, kv := range env(s, sb) {
			if !strings.HasPrefix(kv, "GEMINI_CLI_TRUST_WORKSPACE=") {
				out = append(out, kv)
			}
		}
		return out
	}
	s := Start(t, Text(firstAnswer))
	sb := newSandbox(t, a, 0)
	r := a.run(t, s, sb, firstPrompt, a.first(s, sb))
	saveTranscript(t, a, "untrusted", s, sb, r)
	if r.Exit == 0 {
		t.Error("exit 0 in an untrusted folder")
	}
	if !strings.Contains(string(r.Stdout)+string(r.Stderr), "GEMINI_CLI_TRUST_WORKSPACE") {
		t.Error("output does not say how to trust the folder")
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("mock saw %d requests, want none", n)
	}
}

// TestAgentCLIRetryAfter lets each CLI retry once after a 429 that asks
// for a wait of retryAfter seconds, and records how long it waited.
func TestAgentCLIRetryAfter(t *testing.T) {
	const retryAfter = 3
	for _, a := range agentCLIs {
		t.Run(a.name, func(t *testing.T) {
			s := Start(t, RateLimited(fmt.Sprint(retryAfter)), Text(firstAnswer))
			sb := newSandbox(t, a, 1)
			r := a.run(t, s, sb, firstPrompt, a.first(s, sb))
			saveTranscript(t, a, "rate_limited_then_ok", s, sb, r)
			if r.Exit != 0 {
				t.Fatalf("exit %d after a retried 429, want 0", r.Exit)
			}
			if got := a.answer(r.Events); got != firstAnswer {
				t.Errorf("answer = %q, want %q", got, firstAnswer)
			}
			turns := s.Turns()
			if len(turns) != 2 {
				t.Fatalf("mock saw %d turns, want the 429 and one retry", len(turns))
			}
			gap := turns[1].Received.Sub(turns[0].Received)
			t.Logf("%s retried after %v (retry-after: %ds)", a.name, gap.Round(10*time.Millisecond), retryAfter)
		})
	}
}

// TestAgentCLIQwenQuota records Qwen Code failing at once, without its
// own retries, on a 429 whose message says the quota is exhausted and
// when it resets (its isQuotaExhaustedError).
func TestAgentCLIQwenQuota(t *testing.T) {
	a := qwenCLI
	s := Start(t, Reply{Status: 429, ErrorType: "insufficient_quota",
		ErrorMessage: "You exceeded your current quota: the quota will reset after 2h0m0s."})
	sb := newSandbox(t, a, 0)
	r := a.run(t, s, sb, firstPrompt, a.first(s, sb))
	saveTranscript(t, a, "quota", s, sb, r)
	if r.Exit == 0 {
		t.Error("exit 0 with an exhausted quota")
	}
	if n := len(s.Turns()); n != 1 {
		t.Errorf("mock saw %d turns, want 1: an exhausted quota is not retried", n)
	}
	if !strings.Contains(string(r.Stdout), "Quota exhausted") {
		t.Error("output does not say the quota is exhausted")
	}
}

// TestAgentCLIRetriesForever records what a CLI that retries a 429 or a
// 503 by itself prints before its retries: it is stopped once it has
// printed an error event and the mock has seen the retry.
func TestAgentCLIRetriesForever(t *testing.T) {
	for _, a := range agentCLIs {
		if !a.retriesForever {
			continue
		}
		for _, c := range []struct {
			name  string
			reply Reply
		}{{"rate_limited", RateLimited("2")}, {"overloaded", Reply{Status: a.overloaded, RetryAfter: "1"}}} {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				s := Start(t, c.reply)
				sb := newSandbox(t, a, 0)
				ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
				defer cancel()
				cmd := exec.CommandContext(ctx, agentBin(t, a.name), a.first(s, sb)...)
				cmd.Dir = sb.project
				cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + sb.home, "TMPDIR=" + sb.tmp,
					"LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1", "CI=1"}, a.env(s, sb)...)
				cmd.Stdin = strings.NewReader(firstPrompt)
				var stdout, stderr syncBuffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				s.WaitTurns(t, 2, cliTimeout)
				deadline := time.Now().Add(cliTimeout)
				for !strings.Contains(stdout.String(), `"type":"error"`) && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				r := cliRun{Stdout: []byte(stdout.String()), Stderr: []byte(stderr.String()), Exit: -1}
				t.Logf("%s stdout:\n%s\nstderr:\n%s", a.name, r.Stdout, r.Stderr)
				for _, req := range s.Requests() {
					t.Logf("request at %s: %s kind=%s status=%d", req.Received.Format("15:04:05.000"), req.Path, req.Kind, req.Reply.status())
				}
				saveTranscript(t, a, c.name, s, sb, r)
				if !strings.Contains(string(r.Stdout), fmt.Sprint(c.reply.Status)) {
					t.Errorf("the error event does not name status %d", c.reply.Status)
				}
			})
		}
	}
}

// syncBuffer is a bytes.Buffer safe to write from a process's copier and
// read from the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAgentCLIQwenStructured runs Qwen Code with --json-schema: it
// declares a structured_output tool whose parameters are the schema, and
// the mock answers with a call of it. An answer the schema refuses comes
// back to the model as the tool's error, in the same process; the next,
// valid one ends the session, and the result carries it as
// structured_result.
func TestAgentCLIQwenStructured(t *testing.T) {
	const schema = `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`
	a := qwenCLI
	s := Start(t, Call(Structured(`{"ok": "yes"}`)), Call(Structured(`{"ok": true}`)))
	sb := newSandbox(t, a, 0)
	r := a.run(t, s, sb, firstPrompt, append(a.first(s, sb), "--json-schema", schema))
	saveTranscript(t, a, "structured", s, sb, r)
	if r.Exit != 0 {
		t.Fatalf("exit %d, want 0", r.Exit)
	}
	turns := s.Turns()
	if len(turns) != 2 {
		t.Fatalf("mock saw %d turns, want the refused answer and the valid one", len(turns))
	}
	saveRequest(t, "qwen_structured_request", sb, turns[0])
	if tools := declaredTools(turns[0]); !has(tools, "structured_output") {
		t.Errorf("first turn declares %v, want structured_output", tools)
	}
	results := turns[1].ToolResults()
	if len(results) != 1 || results[0].CallID != turns[0].ToolID {
		t.Fatalf("second turn's tool results %+v, want the result of call %s", results, turns[0].ToolID)
	}
	t.Logf("the refused answer came back as: %s", results[0].Output)
	var got any
	for _, e := range r.Events {
		if e["type"] == "result" {
			got = e["structured_result"]
		}
	}
	if b, _ := json.Marshal(got); string(b) != `{"ok":true}` {
		t.Errorf("structured_result %s, want {\"ok\":true}", b)
	}
}
