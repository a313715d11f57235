package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const testScenario = `
steps:
  plan:
    - answer: '{"tasks": ["a"]}'
      cost_usd: 0.25
      turns: 4
      input_tokens: 10
      output_tokens: 5
  implement:
    - write_file: '{"ok": true}'
  limited:
    - rate_limit: {retry_after: 2s}
  limited_no_hint:
    - rate_limit: {}
  asking:
    - help: {context: {question: "which db?", options: [pg, sqlite]}}
      answer: '{"partial": true}'
  resumed:
    - session_not_found: true
      answer: fine
  hanging:
    - hang: true
  sleepy:
    - sleep: 1h
      answer: never
  crashing:
    - crash: {after_bytes: 5}
      answer: '{"abcdefgh": 1}'
  failing:
    - answer: '{}'
      exit_code: 2
  flooding:
    - stdout_bytes: 200000
      answer: '{}'
`

// event is the part of a stream-json event the tests look at.
type event struct {
	Type           string  `json:"type"`
	Subtype        string  `json:"subtype"`
	SessionID      string  `json:"session_id"`
	Error          string  `json:"error"`
	IsError        bool    `json:"is_error"`
	Result         *string `json:"result"`
	TotalCostUSD   float64 `json:"total_cost_usd"`
	NumTurns       int     `json:"num_turns"`
	APIErrorStatus int     `json:"api_error_status"`
	Errors         []string
	Usage          struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Message struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	RateLimitInfo struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
}

type simRun struct {
	code    int
	events  []event
	raw     string
	stderr  string
	handoff string
}

func runSim(t *testing.T, ctx context.Context, step string, args ...string) simRun {
	t.Helper()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scenario, []byte(testScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	handoff := filepath.Join(dir, "out", "handoff.json")
	env := map[string]string{EnvStep: step, EnvAttempt: "1", EnvHandoffPath: handoff}
	var stdout, stderr bytes.Buffer
	code := Main(ctx, append([]string{"--scenario", scenario}, args...), strings.NewReader("the prompt"),
		&stdout, &stderr, func(k string) string { return env[k] })
	r := simRun{code: code, raw: stdout.String(), stderr: stderr.String()}
	for line := range strings.SplitSeq(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", line, err)
		}
		r.events = append(r.events, ev)
	}
	if data, err := os.ReadFile(handoff); err == nil {
		r.handoff = string(data)
	}
	return r
}

func (r simRun) types() string {
	var ts []string
	for _, ev := range r.events {
		ts = append(ts, ev.Type)
	}
	return strings.Join(ts, ",")
}

func (r simRun) last() event {
	if len(r.events) == 0 {
		return event{}
	}
	return r.events[len(r.events)-1]
}

func TestMainScenarios(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		step      string
		args      []string
		wantCode  int
		wantTypes string
		check     func(t *testing.T, r simRun)
	}{
		{"answer", context.Background(), "plan", []string{"--session-id", "S1"}, 0, "system,assistant,result", func(t *testing.T, r simRun) {
			res := r.last()
			if res.IsError || res.Result == nil || *res.Result != `{"tasks": ["a"]}` || res.Subtype != "success" {
				t.Errorf("result %+v", res)
			}
			if res.TotalCostUSD != 0.25 || res.NumTurns != 4 || res.Usage.InputTokens != 10 || res.Usage.OutputTokens != 5 {
				t.Errorf("cost %v turns %d usage %+v", res.TotalCostUSD, res.NumTurns, res.Usage)
			}
			for _, ev := range r.events {
				if ev.SessionID != "S1" {
					t.Errorf("%s event session %q, want S1", ev.Type, ev.SessionID)
				}
			}
			if r.events[0].Subtype != "init" {
				t.Errorf("first event subtype %q", r.events[0].Subtype)
			}
		}},
		{"write file then done", context.Background(), "implement", nil, 0, "system,assistant,result", func(t *testing.T, r simRun) {
			if r.handoff != `{"ok": true}` || *r.last().Result != "done" {
				t.Errorf("handoff %q result %q", r.handoff, *r.last().Result)
			}
		}},
		{"rate limit with reset", context.Background(), "limited", nil, 1, "system,rate_limit_event,assistant,result", func(t *testing.T, r simRun) {
			rl := r.events[1].RateLimitInfo
			if earliest := time.Now().Add(2 * time.Second).Unix(); rl.Status != "rejected" || rl.ResetsAt < earliest || rl.ResetsAt > earliest+2 {
				t.Errorf("rate_limit_info %+v, want rejected resetting about 2s from now", rl)
			}
			if r.events[2].Error != "rate_limit" || !r.last().IsError || r.last().APIErrorStatus != 429 {
				t.Errorf("assistant error %q, result %+v", r.events[2].Error, r.last())
			}
		}},
		{"rate limit without reset", context.Background(), "limited_no_hint", nil, 1, "system,assistant,result", nil},
		{"help then answer", context.Background(), "asking", nil, 0, "system,assistant,assistant,result", func(t *testing.T, r simRun) {
			want := ">>>HELP<<<\n" + `{"options":["pg","sqlite"],"question":"which db?"}`
			if got := r.events[1].Message.Content[0].Text; got != want {
				t.Errorf("help text %q, want %q", got, want)
			}
		}},
		{"unknown session on resume", context.Background(), "resumed", []string{"--resume", "GONE"}, 1, "result", func(t *testing.T, r simRun) {
			res := r.last()
			if !res.IsError || len(res.Errors) != 1 || res.Errors[0] != "No conversation found with session ID: GONE" {
				t.Errorf("result %+v", res)
			}
			if !strings.Contains(r.stderr, "No conversation found with session ID: GONE") {
				t.Errorf("stderr %q", r.stderr)
			}
		}},
		{"session_not_found needs a resume", context.Background(), "resumed", nil, 0, "system,assistant,result", nil},
		{"hang ends with the context", cancelled, "hanging", nil, 1, "system", nil},
		{"sleep ends with the context", cancelled, "sleepy", nil, 1, "system", nil},
		{"crash cuts the answer", context.Background(), "crashing", nil, 1, "system,assistant", func(t *testing.T, r simRun) {
			if got := r.events[1].Message.Content[0].Text; got != `{"abc` {
				t.Errorf("partial answer %q", got)
			}
		}},
		{"exit code after answering", context.Background(), "failing", nil, 2, "system,assistant,result", nil},
		{"no entry for the step", context.Background(), "deploy", nil, 1, "result", func(t *testing.T, r simRun) {
			if res := r.last(); !res.IsError || *res.Result != "no scenario entry for step deploy" {
				t.Errorf("result %+v", res)
			}
		}},
		{"filler before the answer", context.Background(), "flooding", nil, 0, "", func(t *testing.T, r simRun) {
			if len(r.raw) < 200000 || r.last().Type != "result" {
				t.Errorf("%d bytes, last event %q", len(r.raw), r.last().Type)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSim(t, tt.ctx, tt.step, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.wantCode, r.stderr)
			}
			if tt.wantTypes != "" && r.types() != tt.wantTypes {
				t.Errorf("events %s, want %s", r.types(), tt.wantTypes)
			}
			if tt.check != nil && len(r.events) > 0 {
				tt.check(t, r)
			}
		})
	}
}

func TestMainUsageErrors(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte(testScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no scenario flag", nil, "--scenario is required"},
		{"session and resume", []string{"--scenario", scenario, "--session-id", "a", "--resume", "b"}, "exclude each other"},
		{"two prompts", []string{"--scenario", scenario, "one", "two"}, "one prompt argument"},
		{"missing scenario", []string{"--scenario", filepath.Join(dir, "none.yaml")}, "read scenario"},
		{"unwritable ledger", []string{"--scenario", scenario, "--ledger", filepath.Join(dir, "no", "dir", "l.jsonl")}, "open ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
				t.Errorf("exit %d stdout %q stderr %q; want %d and %q", code, stdout.String(), stderr.String(), exitUsage, tt.want)
			}
		})
	}
}

func TestMainLedgerAndPrompt(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	ledger := filepath.Join(dir, "ledger.jsonl")
	if err := os.WriteFile(scenario, []byte(testScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		args    []string
		stdin   string
		attempt string
		want    LedgerRecord
	}{
		{[]string{"--session-id", "S9"}, "from stdin", "1", LedgerRecord{Step: "plan", Attempt: 1, SessionID: "S9", Prompt: "from stdin"}},
		{[]string{"--resume", "S9", "from argument"}, "ignored", "2", LedgerRecord{Step: "plan", Attempt: 2, SessionID: "S9", Resume: true, Prompt: "from argument"}},
	}
	for _, r := range runs {
		env := map[string]string{EnvStep: "plan", EnvAttempt: r.attempt}
		args := append([]string{"--scenario", scenario, "--ledger", ledger}, r.args...)
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, strings.NewReader(r.stdin), &stdout, &stderr, func(k string) string { return env[k] }); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(runs) {
		t.Fatalf("ledger has %d lines, want %d", len(lines), len(runs))
	}
	for i, line := range lines {
		var got LedgerRecord
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, got.Time); err != nil || got.PID != os.Getpid() {
			t.Errorf("line %d time %q pid %d", i+1, got.Time, got.PID)
		}
		if got.PGID != syscall.Getpgrp() {
			t.Errorf("line %d pgid %d, want this process group %d", i+1, got.PGID, syscall.Getpgrp())
		}
		got.Time, got.PID, got.PGID = "", 0, 0
		if got != runs[i].want {
			t.Errorf("line %d = %+v, want %+v", i+1, got, runs[i].want)
		}
	}
}

// TestStepPath: inside a loop the sim plays, and records, the step
// instance its idempotency key names (LOOP/N/STEP), item or not; outside
// a loop, or with a key it cannot read, the step.
func TestStepPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"top level", map[string]string{EnvStep: "code", EnvRunID: "r1", EnvKey: "r1/code"}, "code"},
		{"in a loop", map[string]string{EnvStep: "code", EnvRunID: "r1", EnvKey: "r1/impl/3/code", EnvIteration: "3"}, "impl/3/code"},
		{"nested", map[string]string{EnvStep: "deep", EnvRunID: "r1", EnvKey: "r1/a/1/b/2/deep", EnvIteration: "2"}, "a/1/b/2/deep"},
		{"an item with a slash", map[string]string{EnvStep: "fan", EnvRunID: "r1", EnvKey: "r1/l/2/fan/x/y", EnvItem: "x/y", EnvIteration: "2"}, "l/2/fan"},
		{"a key of another run", map[string]string{EnvStep: "code", EnvRunID: "r1", EnvKey: "r2/impl/3/code", EnvIteration: "3"}, "code"},
		{"a key of another step", map[string]string{EnvStep: "code", EnvRunID: "r1", EnvKey: "r1/impl/3/review", EnvIteration: "3"}, "code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stepPath(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("stepPath = %q, want %q", got, tt.want)
			}
		})
	}
}
