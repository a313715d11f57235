//go:build agentcli

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/mockmodel"
)

// These tests run the cadence binary end to end with the real agent CLIs
// (and the openai preset) against the mock model API. They need the CLIs:
//
//	npm install --prefix /work/.cache/agents @anthropic-ai/claude-code@2.1.332 \
//	    @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.24.4 \
//	    opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @github/copilot@1.0.102
//	go test -tags agentcli -run TestAgentCLI ./cmd/cadence/
//
// CADENCE_AGENT_BIN_DIR overrides where the binaries are looked up. Each
// test gives the agent a scratch HOME (and CODEX_HOME) through the
// workflow's env:, so no real key, login or setting is ever used, and turns
// the CLI's own retries off so that cadence sees every provider error.

const (
	defaultAgentBinDir = "/work/.cache/agents/node_modules/.bin"
	agentInstallHint   = "npm install --prefix /work/.cache/agents @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.24.4 opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 @github/copilot@1.0.102 (or: make agents)"

	// e2eTimeout bounds one cadence command of these tests: each real
	// CLI takes seconds to start, many on a loaded machine.
	e2eTimeout = 5 * time.Minute

	e2ePrompt  = `Reply with a JSON object {"ok": <boolean>} and nothing else.`
	badAnswer  = `{"ok": "yes"}`
	goodAnswer = `{"ok": true}`
	e2eSchema  = `{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`
)

// e2eAgent is one preset under test: how to write its agents: entry so that
// it talks to the mock from a scratch home.
type e2eAgent struct {
	preset string
	// entry returns the agent's settings (YAML mapping entries) for a mock
	// at s and a scratch home.
	entry func(t *testing.T, s *mockmodel.Server, home string) map[string]any
	// overloaded is the provider's "overloaded" answer.
	overloaded mockmodel.Reply
	// reportsCost: the agent reports a cost (only Claude Code does).
	reportsCost bool
	// retryAfterMS is the retry-after cadence can learn from the agent's
	// output for a 429 with retry-after 1 (Claude Code and Codex do not
	// print it; Gemini CLI passes the server's RetryInfo on); 0 for none.
	retryAfterMS int64
	// unansweredResumable: a session whose first turn was killed before
	// the model answered can be resumed (Codex keeps the thread, Qwen
	// Code its chat file; Claude Code and Gemini CLI keep nothing;
	// cadence keeps openai's history).
	unansweredResumable bool
	// ownRetries is how many times the CLI repeats a request that got a
	// 429 or a 5xx, whatever its settings say (Qwen Code: 6, waiting the
	// retry-after): a script that fails an attempt repeats its failure
	// that many more times.
	ownRetries int
	// retriesOwnWay: how many requests the CLI makes of a failing turn
	// depends on timing (opencode's retry policy), so no script can fail
	// exactly its first attempt; TestAgentCLIRetriesOwnWay covers it.
	retriesOwnWay bool
	// authRetries is how many times the CLI repeats a request refused
	// with a 401 before it reports it (Copilot CLI: 2).
	authRetries int
}

// failing is the script of an attempt that fails with reply: the reply,
// once more for each request the CLI repeats itself.
func (a e2eAgent) failing(reply mockmodel.Reply) []mockmodel.Reply {
	out := make([]mockmodel.Reply, a.ownRetries+1)
	for i := range out {
		out[i] = reply
	}
	return out
}

func agentBinary(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("CADENCE_AGENT_BIN_DIR")
	if dir == "" {
		dir = defaultAgentBinDir
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("agent CLI %s not found: %v\ninstall the CLIs with:\n  %s\nor set CADENCE_AGENT_BIN_DIR", name, err, agentInstallHint)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

var claudeAgent = e2eAgent{
	preset: "claude",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		return map[string]any{
			"command": []string{agentBinary(t, "claude")},
			"env": map[string]string{
				"HOME":               home,
				"ANTHROPIC_BASE_URL": s.URL,
				"ANTHROPIC_API_KEY":  "sk-ant-mock",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_TELEMETRY":                        "1",
				"DISABLE_AUTOUPDATER":                      "1",
				"DISABLE_ERROR_REPORTING":                  "1",
				"CLAUDE_CODE_MAX_RETRIES":                  "0",
			},
		}
	},
	overloaded:  mockmodel.Overloaded(),
	reportsCost: true,
}

var codexAgent = e2eAgent{
	preset: "codex",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		codexHome := filepath.Join(home, ".codex")
		if err := os.MkdirAll(codexHome, 0o755); err != nil {
			t.Fatal(err)
		}
		return map[string]any{
			"command": []string{agentBinary(t, "codex")},
			"args": []string{
				"--sandbox", "read-only",
				"-c", "model_provider=mock",
				"-c", fmt.Sprintf(`model_providers.mock={name="mock",base_url="%s/v1",wire_api="responses",env_key="MOCK_API_KEY",request_max_retries=0,stream_max_retries=0}`, s.URL),
			},
			"env": map[string]string{"HOME": home, "CODEX_HOME": codexHome, "MOCK_API_KEY": "sk-mock"},
		}
	},
	overloaded:          mockmodel.Overloaded(),
	unansweredResumable: true,
}

var geminiAgent = e2eAgent{
	preset: "gemini",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		settings := filepath.Join(home, ".gemini", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":1}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{
			"command": []string{agentBinary(t, "gemini")},
			"env":     map[string]string{"HOME": home, "GOOGLE_GEMINI_BASE_URL": s.URL, "GEMINI_API_KEY": "mock-key"},
		}
	},
	overloaded:   mockmodel.Reply{Status: http.StatusServiceUnavailable},
	retryAfterMS: 1000,
}

var openaiAgent = e2eAgent{
	preset: "openai",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		return map[string]any{
			"base_url":    s.URL + "/v1",
			"model":       "qwen3-coder",
			"api_key_env": "MOCK_CHAT_KEY",
			"env":         map[string]string{"MOCK_CHAT_KEY": "sk-chat-mock"},
		}
	},
	overloaded:          mockmodel.Reply{Status: http.StatusServiceUnavailable},
	retryAfterMS:        1000,
	unansweredResumable: true,
}

// qwenAgent is Qwen Code on its OpenAI-compatible provider, with its
// background memory extraction (a model request after every answered
// turn, see internal/mockmodel) turned off to spare time. Its own
// retries of a 429 or 503 (seven requests in all) cannot be turned off;
// a 503 with a retry-after is retried after it rather than after a
// backoff of over a minute.
var qwenAgent = e2eAgent{
	preset: "qwen",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		settings := filepath.Join(home, ".qwen", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, []byte(`{"security":{"auth":{"selectedType":"openai"}},"model":{"generationConfig":{"maxRetries":0}},"memory":{"enableManagedAutoMemory":false}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return map[string]any{
			"command": []string{agentBinary(t, "qwen")},
			"env": map[string]string{
				"HOME":            home,
				"OPENAI_BASE_URL": s.URL + "/v1",
				"OPENAI_API_KEY":  "sk-qwen-mock",
				"OPENAI_MODEL":    "qwen3-coder-plus",
			},
		}
	},
	overloaded:          mockmodel.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "1"},
	unansweredResumable: true,
	ownRetries:          6,
}

// opencodeAgent is opencode on a custom OpenAI-compatible provider given
// in OPENCODE_CONFIG_CONTENT. opencode retries a 429 or 5xx five times by
// itself (waiting the retry-after), then prints an error event and hangs;
// cadence ends the attempt at that event (see agent.opencodeStream). It
// prints nothing before the model answers, so cadence does not learn the
// session of a first turn killed while it waits.
var opencodeAgent = e2eAgent{
	preset: "opencode",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		return map[string]any{
			"command": []string{agentBinary(t, "opencode")},
			"env": map[string]string{
				"HOME": home,
				"OPENCODE_CONFIG_CONTENT": fmt.Sprintf(`{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled",`+
					`"provider":{"mock":{"npm":"@ai-sdk/openai-compatible","name":"Mock","options":{"baseURL":"%s/v1","apiKey":"sk-opencode-mock"},`+
					`"models":{"m1":{"name":"m1"}}}},"model":"mock/m1","small_model":"mock/m1"}`, s.URL),
			},
		}
	},
	overloaded:    mockmodel.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "1"},
	retryAfterMS:  1000,
	retriesOwnWay: true,
}

// piAgent is pi on a custom provider (chat completions) in its
// models.json, priced so that it reports a cost, with its own retries off.
var piAgent = e2eAgent{
	preset: "pi",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		dir := filepath.Join(home, ".pi", "agent")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"sk-pi-mock",`+
			`"compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},`+
			`"models":[{"id":"m1","cost":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0}}]}}}`, s.URL)
		for name, content := range map[string]string{
			"models.json":   models,
			"settings.json": `{"retry":{"enabled":false,"provider":{"maxRetries":0}}}`,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return map[string]any{
			"command": []string{agentBinary(t, "pi")},
			"args":    []string{"--provider", "mock", "--model", "m1"},
			"env":     map[string]string{"HOME": home},
		}
	},
	overloaded:  mockmodel.Reply{Status: http.StatusServiceUnavailable},
	reportsCost: true,
}

// copilotAgent is GitHub Copilot CLI on its custom provider (BYOK: chat
// completions at COPILOT_PROVIDER_BASE_URL) in offline mode, so that no
// GitHub login, telemetry or update check is involved. It retries a 429
// or a 5xx five times by itself (no setting turns that off) and passes no
// retry-after on.
var copilotAgent = e2eAgent{
	preset: "copilot",
	entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		return map[string]any{
			"command": []string{agentBinary(t, "copilot")},
			"env": map[string]string{
				"HOME":                      home,
				"COPILOT_PROVIDER_BASE_URL": s.URL + "/v1",
				"COPILOT_PROVIDER_API_KEY":  "sk-copilot-mock",
				"COPILOT_MODEL":             "m1",
				"COPILOT_OFFLINE":           "true",
				"COPILOT_AUTO_UPDATE":       "false",
			},
		}
	},
	overloaded:  mockmodel.Reply{Status: http.StatusServiceUnavailable},
	ownRetries:  5,
	authRetries: 2,
}

var e2eAgents = []e2eAgent{claudeAgent, codexAgent, geminiAgent, openaiAgent, qwenAgent, opencodeAgent, piAgent, copilotAgent}

// e2eProject writes a one-step project whose agent is a under the mock.
func e2eProject(t *testing.T, a e2eAgent, s *mockmodel.Server) *project {
	return e2eProjectWith(t, a, s, "")
}

// e2eProjectWith is e2eProject with more keys for the step (indented YAML
// lines, such as a checks: section).
// The agents: entry is written as JSON, which is YAML too, so that argv
// words with braces and quotes need no escaping.
func e2eProjectWith(t *testing.T, a e2eAgent, s *mockmodel.Server, stepKeys string) *project {
	t.Helper()
	home := t.TempDir()
	entry := a.entry(t, s, home)
	entry["preset"] = a.preset
	agentJSON, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := json.Marshal(e2ePrompt)
	wf := `version: 1
defaults:
  agent: a
  retry: {max_attempts: 3, backoff: fixed, initial: 100ms, jitter: none}
  timeout: 3m
agents:
  a: ` + string(agentJSON) + `
steps:
  - id: answer
    prompt: ` + string(prompt) + `
    handoff: {schema: s.json}
` + stepKeys
	return newProject(t, wf, map[string]string{"s.json": e2eSchema})
}

// runE2E runs `cadence run` and fails with its output unless it exits 0.
func runE2E(t *testing.T, p *project) {
	t.Helper()
	r := p.cadenceWithin(e2eTimeout, nil, "run")
	if r.signal != 0 || r.code != 0 {
		t.Fatalf("cadence run exited %d (signal %v), want 0\nstdout:\n%s\nstderr:\n%s%s", r.code, r.signal, r.stdout, r.stderr, attemptOutputs(p))
	}
}

// attemptOutputs returns the raw output files of every attempt, for a
// failure message.
func attemptOutputs(p *project) string {
	files, _ := filepath.Glob(filepath.Join(p.dir, ".cadence", "attempts", "*", "*", "*.out"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "\n--- %s:\n%s", strings.TrimPrefix(f, p.dir), data)
	}
	return b.String()
}

// sameSession checks that every attempt of the step ran in one session,
// the step's, and returns it.
func sameSession(t *testing.T, st history.StepReport) string {
	t.Helper()
	id := st.SessionID
	if id == "" {
		t.Fatalf("step %s has no session id", st.ID)
	}
	for _, a := range st.Attempts {
		if a.SessionID != id {
			t.Errorf("attempt %d ran in session %q, want the step's session %q", a.N, a.SessionID, id)
		}
	}
	return id
}

// carriesHistory checks that a request continued the conversation: the
// task as an earlier user message and the first answer as the model's.
func carriesHistory(t *testing.T, r mockmodel.Request, answer string) {
	t.Helper()
	conv := r.Conversation()
	var sawTask, sawAnswer bool
	for i, m := range conv {
		sawTask = sawTask || m.Role == "user" && i < len(conv)-1 && strings.Contains(m.Text, `{"ok": <boolean>}`)
		sawAnswer = sawAnswer || m.Role == "assistant" && strings.Contains(m.Text, answer)
	}
	if !sawTask || !sawAnswer {
		t.Errorf("request does not carry the earlier exchange (task %v, answer %v): %+v", sawTask, sawAnswer, conv)
	}
}

// TestAgentCLIFollowup: a first answer that fails the schema is followed up
// in the same session; the follow-up names the violation and carries the
// earlier conversation, and the step succeeds on attempt 2.
func TestAgentCLIFollowup(t *testing.T) {
	for _, a := range e2eAgents {
		t.Run(a.preset, func(t *testing.T) {
			s := mockmodel.Start(t, mockmodel.Text(badAnswer), mockmodel.Text(goodAnswer))
			p := e2eProject(t, a, s)
			runE2E(t, p)

			st := step(p.inspect(), "answer")
			if st.Status != "succeeded" || len(st.Attempts) != 2 {
				t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
			}
			if first := st.Attempts[0]; first.Class != "schema" {
				t.Errorf("attempt 1 class %q, want schema (%s)", first.Class, first.Error)
			}
			if second := st.Attempts[1]; second.Kind != "followup" || second.Status != "succeeded" {
				t.Errorf("attempt 2 kind %q status %q, want followup succeeded", second.Kind, second.Status)
			}
			sameSession(t, st)
			if st.InputTokens <= 0 || st.OutputTokens <= 0 {
				t.Errorf("tokens %d/%d, want both recorded", st.InputTokens, st.OutputTokens)
			}
			if a.reportsCost && st.CostUSD <= 0 {
				t.Errorf("cost %v, want the agent's reported cost", st.CostUSD)
			}

			turns := s.Turns()
			if len(turns) != 2 {
				t.Fatalf("mock saw %d turns, want 2", len(turns))
			}
			carriesHistory(t, turns[1], badAnswer)
			if last := turns[1].LastUserText(); !strings.Contains(last, "/ok") || !strings.Contains(last, "boolean") {
				t.Errorf("follow-up does not name the violation at /ok:\n%s", last)
			}
		})
	}
}

// TestAgentCLICheckFeedback: Claude Code answers valid JSON, a check of it
// fails, and the check's output reaches the model in the resumed
// conversation, with the earlier exchange; the second answer passes.
func TestAgentCLICheckFeedback(t *testing.T) {
	const first, second = `{"ok": false}`, `{"ok": true}`
	s := mockmodel.Start(t, mockmodel.Text(first), mockmodel.Text(second))
	p := e2eProjectWith(t, claudeAgent, s, `    checks:
      - name: verdict
        run: 'grep -q true "$CADENCE_HANDOFF_PATH" || { echo "--- FAIL: TestVerdict: the handoff says $(cat "$CADENCE_HANDOFF_PATH"), want ok true"; exit 1; }'
`)
	runE2E(t, p)

	st := step(p.inspect(), "answer")
	if st.Status != "succeeded" || len(st.Attempts) != 2 {
		t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
	}
	if a := st.Attempts[0]; a.Class != "check" || len(a.Checks) != 1 || a.Checks[0].Status != "failed" {
		t.Fatalf("attempt 1: class %q, checks %+v; want a failed check", a.Class, a.Checks)
	}
	if a := st.Attempts[1]; a.Kind != "followup" || a.Checks[0].Status != "passed" {
		t.Errorf("attempt 2: kind %q, checks %+v; want a follow-up whose check passed", a.Kind, a.Checks)
	}
	sameSession(t, st)
	turns := s.Turns()
	if len(turns) != 2 {
		t.Fatalf("mock saw %d turns, want 2", len(turns))
	}
	carriesHistory(t, turns[1], first)
	last := turns[1].LastUserText()
	for _, want := range []string{`the check "verdict"`, "exited with code 1", `--- FAIL: TestVerdict: the handoff says {"ok":false}, want ok true`} {
		if !strings.Contains(last, want) {
			t.Errorf("the follow-up the model received lacks %q:\n%s", want, last)
		}
	}
}

// TestAgentCLITransient: a rate limit or an overload is class transient,
// waited out (with the agent's retry-after where it reports one) and
// retried; the step then succeeds.
func TestAgentCLITransient(t *testing.T) {
	for _, a := range e2eAgents {
		if a.retriesOwnWay {
			continue
		}
		cases := []struct {
			name  string
			reply mockmodel.Reply
		}{
			{"rate_limited", mockmodel.RateLimited("1")},
			{"overloaded", a.overloaded},
		}
		for _, c := range cases {
			t.Run(a.preset+"/"+c.name, func(t *testing.T) {
				s := mockmodel.Start(t, append(a.failing(c.reply), mockmodel.Text(goodAnswer))...)
				p := e2eProject(t, a, s)
				runE2E(t, p)

				st := step(p.inspect(), "answer")
				if st.Status != "succeeded" || len(st.Attempts) != 2 {
					t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
				}
				first := st.Attempts[0]
				if first.Class != "transient" || first.DelayMS == nil || first.NextRetryAt == nil {
					t.Errorf("attempt 1 class %q delay %v next %v, want transient with a backoff (%s)", first.Class, first.DelayMS, first.NextRetryAt, first.Error)
				}
				turns := s.Turns()
				if len(turns) != a.ownRetries+2 {
					t.Fatalf("mock saw %d turns, want %d", len(turns), a.ownRetries+2)
				}
				if c.reply.Status == http.StatusTooManyRequests && a.retryAfterMS > 0 {
					if first.RetryAfterMS == nil || *first.RetryAfterMS != a.retryAfterMS {
						t.Errorf("attempt 1 retry_after_ms %v, want %d", first.RetryAfterMS, a.retryAfterMS)
					}
					if gap := turns[len(turns)-1].Received.Sub(turns[len(turns)-2].Received); gap < time.Duration(a.retryAfterMS)*time.Millisecond {
						t.Errorf("retried after %v, before the retry-after of %dms", gap, a.retryAfterMS)
					}
				}
				if st.InputTokens <= 0 || st.OutputTokens <= 0 {
					t.Errorf("tokens %d/%d, want both recorded", st.InputTokens, st.OutputTokens)
				}
				if a.reportsCost && st.CostUSD <= 0 {
					t.Errorf("cost %v, want the agent's reported cost", st.CostUSD)
				}
			})
		}
	}
}

// TestAgentCLIRetriesOwnWay: a CLI that retries a rate limit or an
// overload by itself, and then reports it and hangs (opencode), against
// an API that answers so until the CLI's second process starts: the first
// attempt ends at the CLI's report, not at the step's timeout, as class
// transient waiting the retry-after the CLI passed on, and the second
// finishes the step.
func TestAgentCLIRetriesOwnWay(t *testing.T) {
	for _, a := range e2eAgents {
		if !a.retriesOwnWay {
			continue
		}
		for _, c := range []struct {
			name  string
			reply mockmodel.Reply
		}{{"rate_limited", mockmodel.RateLimited("1")}, {"overloaded", a.overloaded}} {
			t.Run(a.preset+"/"+c.name, func(t *testing.T) {
				s := mockmodel.Start(t, c.reply)
				// Each opencode process asks for a title first: the
				// second such request is the second attempt's.
				done := make(chan struct{})
				defer close(done)
				go func() {
					for {
						titles := 0
						for _, r := range s.Requests() {
							if r.Kind == mockmodel.KindTitle {
								titles++
							}
						}
						if titles >= 2 {
							s.Enqueue(mockmodel.Text(goodAnswer))
							return
						}
						select {
						case <-done:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				p := e2eProjectWith(t, a, s, "    timeout: 10m\n")
				runE2E(t, p)
				st := step(p.inspect(), "answer")
				if st.Status != "succeeded" || len(st.Attempts) != 2 {
					t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
				}
				first := st.Attempts[0]
				if first.Class != "transient" || first.RetryAfterMS == nil || *first.RetryAfterMS != a.retryAfterMS {
					t.Errorf("attempt 1 class %q retry_after_ms %v, want transient waiting %dms (%s)", first.Class, first.RetryAfterMS, a.retryAfterMS, first.Error)
				}
				// The step's timeout is 10 minutes: an attempt that ended
				// within 2 ended at the CLI's report.
				if first.FinishedAt == nil || first.FinishedAt.Sub(first.StartedAt) > 2*time.Minute {
					t.Errorf("attempt 1 ran from %v to %v, want it to end at the CLI's report", first.StartedAt, first.FinishedAt)
				}
			})
		}
	}
}

// TestAgentCLIKillResume kills cadence with SIGKILL while the agent waits
// for the model in a follow-up; `cadence resume` must continue the same
// session, whose conversation the model then sees.
func TestAgentCLIKillResume(t *testing.T) {
	for _, a := range e2eAgents {
		t.Run(a.preset, func(t *testing.T) {
			s := mockmodel.Start(t,
				mockmodel.Text(badAnswer),
				mockmodel.Reply{Text: goodAnswer, Delay: 2 * time.Minute}, // the turn cadence is killed in
				mockmodel.Text(goodAnswer))
			p := e2eProject(t, a, s)
			p.killWhenWithin(t, e2eTimeout, "run", func() bool { return len(s.Turns()) >= 2 })
			r := p.cadenceWithin(e2eTimeout, nil, "resume")
			if r.signal != 0 || r.code != 0 {
				t.Fatalf("cadence resume exited %d (signal %v)\nstdout:\n%s\nstderr:\n%s%s", r.code, r.signal, r.stdout, r.stderr, attemptOutputs(p))
			}

			st := step(p.inspect(), "answer")
			if st.Status != "succeeded" {
				t.Fatalf("step %s, want succeeded: %+v%s", st.Status, st.Attempts, attemptOutputs(p))
			}
			sameSession(t, st)
			turns := s.Turns()
			if len(turns) != 3 {
				t.Fatalf("mock saw %d turns, want 3", len(turns))
			}
			carriesHistory(t, turns[2], badAnswer)
		})
	}
}

// TestAgentCLIKillFirstAttempt kills cadence while the first attempt waits
// for the model. Where the agent keeps a session whose turn was never
// answered, resume must continue it: the id the agent announced at once must
// have been recorded (Spec.OnSession), as it is not the one cadence
// proposed. Where the agent keeps nothing, resume must start a fresh session
// at once rather than spend an attempt on a resume that fails. Either way
// the step succeeds on attempt 2.
func TestAgentCLIKillFirstAttempt(t *testing.T) {
	for _, a := range e2eAgents {
		t.Run(a.preset, func(t *testing.T) {
			s := mockmodel.Start(t,
				mockmodel.Reply{Text: goodAnswer, Delay: 2 * time.Minute},
				mockmodel.Text(goodAnswer))
			p := e2eProject(t, a, s)
			p.killWhenWithin(t, e2eTimeout, "run", func() bool { return len(s.Turns()) >= 1 })
			r := p.cadenceWithin(e2eTimeout, nil, "resume")
			if r.signal != 0 || r.code != 0 {
				t.Fatalf("cadence resume exited %d (signal %v)\nstdout:\n%s\nstderr:\n%s%s", r.code, r.signal, r.stdout, r.stderr, attemptOutputs(p))
			}
			st := step(p.inspect(), "answer")
			if st.Status != "succeeded" || len(st.Attempts) != 2 {
				t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
			}
			second := st.Attempts[1]
			if !a.unansweredResumable {
				if second.Kind != "fresh" {
					t.Errorf("attempt 2 kind %q, want fresh: the agent kept no session", second.Kind)
				}
				return
			}
			sameSession(t, st)
			if second.Kind != "followup" {
				t.Errorf("attempt 2 kind %q, want followup in the session the first attempt opened", second.Kind)
			}
		})
	}
}

// TestAgentCLIFallback: the first CLI answers with a usage limit that
// resets in an hour or two; the step's agent entry has another CLI as its
// fallback, so the next attempt runs at once on it, in a fresh session
// with the original task, and it finishes the step. Each CLI talks to a
// mock of its own API.
//
//   - claude to codex: Claude Code's exit-0 "success" whose text is the
//     limit message, resetting in an hour;
//   - qwen to gemini: an exhausted quota that resets in two hours, which
//     Qwen Code reports at once, without its own retries;
//   - copilot to pi: the same 429, which Copilot CLI retries five times
//     (it is a rate_limit to it) and then reports with its message.
func TestAgentCLIFallback(t *testing.T) {
	reset := time.Now().Add(time.Hour).Unix()
	quota := mockmodel.Reply{Status: http.StatusTooManyRequests, ErrorType: "insufficient_quota",
		ErrorMessage: "You exceeded your current quota: the quota will reset after 2h0m0s."}
	cases := []struct {
		from, to e2eAgent
		limit    mockmodel.Reply
		// requests is how many times the first CLI asks before it
		// reports the limit.
		requests int
	}{
		{claudeAgent, codexAgent, mockmodel.Text(fmt.Sprintf("Claude AI usage limit reached|%d", reset)), 1},
		{qwenAgent, geminiAgent, quota, 1},
		{copilotAgent, piAgent, quota, copilotAgent.ownRetries + 1},
	}
	for _, c := range cases {
		t.Run(c.from.preset+"_to_"+c.to.preset, func(t *testing.T) {
			limits := make([]mockmodel.Reply, c.requests)
			for i := range limits {
				limits[i] = c.limit
			}
			fromAPI := mockmodel.Start(t, limits...)
			toAPI := mockmodel.Start(t, mockmodel.Text(goodAnswer))
			entry := func(a e2eAgent, s *mockmodel.Server, fallback ...string) string {
				e := a.entry(t, s, t.TempDir())
				e["preset"] = a.preset
				if len(fallback) > 0 {
					e["fallback"] = fallback
				}
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			prompt, _ := json.Marshal(e2ePrompt)
			wf := `version: 1
defaults:
  agent: first
  retry: {max_attempts: 3, backoff: fixed, initial: 100ms, jitter: none}
  timeout: 3m
agents:
  first: ` + entry(c.from, fromAPI, "second") + `
  second: ` + entry(c.to, toAPI) + `
steps:
  - id: answer
    prompt: ` + string(prompt) + `
    handoff: {schema: s.json}
`
			p := newProject(t, wf, map[string]string{"s.json": e2eSchema})
			runE2E(t, p)

			rep := p.inspect()
			st := step(rep, "answer")
			if st.Status != "succeeded" || len(st.Attempts) != 2 || st.Agent != "second" {
				t.Fatalf("step %s on %s after %d attempts, want succeeded on the fallback after 2: %+v%s", st.Status, st.Agent, len(st.Attempts), st.Attempts, attemptOutputs(p))
			}
			first, second := st.Attempts[0], st.Attempts[1]
			if first.Agent != "first" || first.Class != "transient" || !first.Uncounted {
				t.Errorf("attempt 1: agent %s class %q uncounted %v, want %s's usage limit, uncounted (%s)", first.Agent, first.Class, first.Uncounted, c.from.preset, first.Error)
			}
			if second.Agent != "second" || second.Kind != "fallback" || second.Status != "succeeded" {
				t.Errorf("attempt 2: agent %s kind %q status %q, want a fallback on %s that succeeded", second.Agent, second.Kind, second.Status, c.to.preset)
			}
			if second.SessionID == first.SessionID {
				t.Errorf("the fallback continued %s's session %s, want a fresh one", c.from.preset, first.SessionID)
			}
			if st.AttemptsUsed != 1 {
				t.Errorf("attempts used %d, want 1: the usage limit does not count", st.AttemptsUsed)
			}
			if n := len(fromAPI.Turns()); n != c.requests {
				t.Errorf("%s's API saw %d turns, want %d", c.from.preset, n, c.requests)
			}
			if !strings.Contains(first.Error, "usage limit reached") {
				t.Errorf("attempt 1 error %q, want a usage limit", first.Error)
			}
			turns := toAPI.Turns()
			if len(turns) != 1 {
				t.Fatalf("%s's API saw %d turns, want 1", c.to.preset, len(turns))
			}
			if last := turns[0].LastUserText(); !strings.Contains(last, `{"ok": <boolean>}`) {
				t.Errorf("%s was not given the original task:\n%s", c.to.preset, last)
			}
			for _, circuit := range rep.Circuits {
				if circuit.Agent == "first" && circuit.State != "open" {
					t.Errorf("%s's circuit %s, want open until its limit resets", c.from.preset, circuit.State)
				}
			}
		})
	}
}

// TestAgentCLIAuth: the model API refuses the agent's key (401). The
// attempt is class auth and not counted, the run stops resumable (exit 3)
// naming the agent to log in to, and a resume once the key is good
// finishes the step.
func TestAgentCLIAuth(t *testing.T) {
	for _, a := range []e2eAgent{qwenAgent, opencodeAgent, piAgent, copilotAgent} {
		t.Run(a.preset, func(t *testing.T) {
			refused := make([]mockmodel.Reply, a.authRetries+1)
			for i := range refused {
				refused[i] = mockmodel.Reply{Status: http.StatusUnauthorized}
			}
			s := mockmodel.Start(t, append(refused, mockmodel.Text(goodAnswer))...)
			p := e2eProject(t, a, s)
			r := p.cadenceWithin(e2eTimeout, nil, "run")
			if r.signal != 0 || r.code != 3 {
				t.Fatalf("cadence run exited %d (signal %v), want 3\nstdout:\n%s\nstderr:\n%s%s", r.code, r.signal, r.stdout, r.stderr, attemptOutputs(p))
			}
			if !strings.Contains(r.stdout, "log in to agent a") {
				t.Errorf("run does not say which agent to log in to:\n%s", r.stdout)
			}
			st := step(p.inspect(), "answer")
			if len(st.Attempts) != 1 || st.Attempts[0].Class != "auth" || !st.Attempts[0].Uncounted {
				t.Fatalf("attempts %+v, want one uncounted attempt of class auth%s", st.Attempts, attemptOutputs(p))
			}
			if n := len(s.Turns()); n != a.authRetries+1 {
				t.Errorf("mock saw %d turns, want %d: cadence does not retry a refused login", n, a.authRetries+1)
			}
			r = p.cadenceWithin(e2eTimeout, nil, "resume")
			if r.signal != 0 || r.code != 0 {
				t.Fatalf("cadence resume exited %d (signal %v)\nstdout:\n%s\nstderr:\n%s%s", r.code, r.signal, r.stdout, r.stderr, attemptOutputs(p))
			}
			if st := step(p.inspect(), "answer"); st.Status != "succeeded" || st.AttemptsUsed != 1 {
				t.Errorf("step %s with %d attempts used, want succeeded with 1", st.Status, st.AttemptsUsed)
			}
		})
	}
}

// TestAgentCLIConcurrentConfig: eight real Claude Code processes at once
// (a map step of eight items, eight at a time) on one agent entry, whose
// HOME and config_dir (CLAUDE_CONFIG_DIR) they all share, against the
// mock API: every item succeeds, the processes did overlap, and every
// JSON file the CLI keeps in its home and its config directory is valid
// JSON afterwards (concurrent `claude` processes were reported to corrupt
// ~/.claude.json).
func TestAgentCLIConcurrentConfig(t *testing.T) {
	api := mockmodel.Start(t, mockmodel.Text(goodAnswer))
	home, config := t.TempDir(), t.TempDir()
	e := claudeAgent.entry(t, api, home)
	e["preset"] = claudeAgent.preset
	e["config_dir"] = config
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := json.Marshal(e2ePrompt + " (item {{ .Item.Key }})")
	wf := `version: 1
defaults:
  agent: claude
  retry: {max_attempts: 2, backoff: fixed, initial: 100ms, jitter: none}
  timeout: 3m
agents:
  claude: ` + string(b) + `
steps:
  - id: answer
    prompt: ` + string(prompt) + `
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 8}
`
	items := `[{"id": "1"}, {"id": "2"}, {"id": "3"}, {"id": "4"}, {"id": "5"}, {"id": "6"}, {"id": "7"}, {"id": "8"}]`
	p := newProject(t, wf, map[string]string{"s.json": e2eSchema, "items.json": items})
	runE2E(t, p)
	rep := p.inspect()
	st := step(rep, "answer")
	if st.ItemCounts["succeeded"] != 8 {
		t.Fatalf("items %v, want 8 succeeded", st.ItemCounts)
	}
	// How many ran at once, from the attempts' recorded spans.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, it := range st.Items {
		for _, a := range it.Attempts {
			if a.FinishedAt != nil {
				edges = append(edges, edge{a.StartedAt, 1}, edge{*a.FinishedAt, -1})
			}
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at.Before(edges[j].at) || edges[i].at.Equal(edges[j].at) && edges[i].delta < edges[j].delta
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	if most < 4 {
		t.Errorf("at most %d Claude Code processes ran at once, want at least 4 of the 8", most)
	}
	checked := 0
	for _, dir := range []string{home, config} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			if !json.Valid(data) {
				t.Errorf("%s is not valid JSON after 8 processes at once:\n%.400s", path, data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatalf("Claude Code wrote no JSON file in its home or config directory: nothing was checked")
	}
	t.Logf("%d Claude Code processes at most at once; %d JSON files checked, all valid", most, checked)
}

// TestAgentCLINativeSchema: with native_schema, Codex is given the step's
// schema (exec --output-schema FILE, the file beside the attempt's
// output) and passes it to the model API as the answer's format; its
// answer is still validated by cadence, so a model that ignores the
// format is followed up as without it.
func TestAgentCLINativeSchema(t *testing.T) {
	s := mockmodel.Start(t, mockmodel.Text(badAnswer), mockmodel.Text(goodAnswer))
	a := codexAgent
	entry := a.entry
	a.entry = func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		e := entry(t, s, home)
		e["native_schema"] = true
		return e
	}
	p := e2eProject(t, a, s)
	runE2E(t, p)

	st := step(p.inspect(), "answer")
	if st.Status != "succeeded" || len(st.Attempts) != 2 || st.Attempts[0].Class != "schema" {
		t.Fatalf("step %s after %d attempts, want succeeded after a schema failure: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
	}
	turns := s.Turns()
	if len(turns) != 2 {
		t.Fatalf("mock saw %d turns, want 2", len(turns))
	}
	for i, turn := range turns {
		text, _ := turn.JSON["text"].(map[string]any)
		format, _ := text["format"].(map[string]any)
		schema, _ := json.Marshal(format["schema"])
		if format["type"] != "json_schema" || !strings.Contains(string(schema), `"ok"`) || !strings.Contains(string(schema), `"boolean"`) {
			t.Errorf("turn %d asked for format %v, want the step's schema", i+1, text["format"])
		}
	}
	files, _ := filepath.Glob(filepath.Join(p.dir, ".cadence", "attempts", "*", "answer", "*.schema.json"))
	if len(files) != 2 {
		t.Errorf("schema files %v, want one per attempt", files)
	}
}

// TestAgentCLIQwenNativeSchema: with native_schema, Qwen Code is given
// the step's schema (--json-schema) and declares it to the model as its
// structured_output tool, through which the model answers. An answer the
// schema refuses, Qwen Code hands back to the model in the same process;
// the structured answer it accepts is the one cadence takes, and cadence
// still judges it: here a check refuses {"ok": false}, the follow-up in
// the same session (given the schema again) answers {"ok": true}, and
// that is the step's handoff.
func TestAgentCLIQwenNativeSchema(t *testing.T) {
	s := mockmodel.Start(t,
		mockmodel.Call(mockmodel.Structured(badAnswer)),
		mockmodel.Call(mockmodel.Structured(`{"ok": false}`)),
		mockmodel.Call(mockmodel.Structured(goodAnswer)))
	a := qwenAgent
	entry := a.entry
	a.entry = func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
		e := entry(t, s, home)
		e["native_schema"] = true
		return e
	}
	p := e2eProjectWith(t, a, s, `    checks:
      - name: verdict
        run: 'grep -q true "$CADENCE_HANDOFF_PATH" || { echo "the handoff says $(cat "$CADENCE_HANDOFF_PATH"), want ok true"; exit 1; }'
`)
	runE2E(t, p)

	st := step(p.inspect(), "answer")
	if st.Status != "succeeded" || len(st.Attempts) != 2 {
		t.Fatalf("step %s after %d attempts, want succeeded after 2: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
	}
	if a := st.Attempts[0]; a.Class != "check" {
		t.Errorf("attempt 1 class %q, want check (%s)", a.Class, a.Error)
	}
	if a := st.Attempts[1]; a.Kind != "followup" || a.Status != "succeeded" {
		t.Errorf("attempt 2 kind %q status %q, want a follow-up that succeeded", a.Kind, a.Status)
	}
	sameSession(t, st)
	turns := s.Turns()
	if len(turns) != 3 {
		t.Fatalf("mock saw %d turns, want 3", len(turns))
	}
	for i, turn := range turns {
		var schema string
		for _, tool := range turn.JSON["tools"].([]any) {
			fn, _ := tool.(map[string]any)["function"].(map[string]any)
			if fn["name"] == "structured_output" {
				b, _ := json.Marshal(fn["parameters"])
				schema = string(b)
			}
		}
		if !strings.Contains(schema, `"ok"`) || !strings.Contains(schema, `"boolean"`) {
			t.Errorf("turn %d declares structured_output with parameters %q, want the step's schema", i+1, schema)
		}
	}
	if res := turns[1].ToolResults(); len(res) != 1 || res[0].CallID != turns[0].ToolID || !strings.Contains(res[0].Output, "boolean") {
		t.Errorf("turn 2 carries tool results %+v, want Qwen Code's refusal of call %s", res, turns[0].ToolID)
	}
	if last := turns[2].LastUserText(); !strings.Contains(last, `want ok true`) {
		t.Errorf("the follow-up does not carry the check's output:\n%s", last)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, st.Handoff))
	if err != nil {
		t.Fatalf("handoff: %v", err)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("handoff %s: %v", b, err)
	}
	var got struct{ OK *bool }
	if err := json.Unmarshal(env.Data, &got); err != nil || got.OK == nil || !*got.OK {
		t.Errorf("handoff data %s (%v), want the structured answer %s", env.Data, err, goodAnswer)
	}
}
