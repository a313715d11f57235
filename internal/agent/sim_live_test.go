package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// simSpec builds, through Command, the Spec of one simulated-agent attempt.
func simSpec(t *testing.T, step string, attempt int, resume bool, session string, extraArgs ...string) agent.Spec {
	t.Helper()
	scenario, err := filepath.Abs("testdata/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	argv, stdin, proto, err := agent.Command(agent.Invocation{
		Preset: agent.PresetSim, SelfExe: selfExe(t), Scenario: scenario,
		SessionID: session, Resume: resume, Prompt: "prompt for " + step, Args: extraArgs,
	})
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	dir := t.TempDir()
	return agent.Spec{
		Argv: argv, Stdin: stdin, Protocol: proto, Dir: dir, Grace: time.Second,
		Timeout: 20 * time.Second,
		Env: helperEnviron(
			"CADENCE_STEP="+step,
			"CADENCE_ATTEMPT="+strconv.Itoa(attempt),
			"CADENCE_HANDOFF_PATH="+filepath.Join(dir, "out", step+".json")),
	}
}

func TestRunSimAgent(t *testing.T) {
	tests := []struct {
		name    string
		step    string
		attempt int
		resume  bool
		tune    func(*agent.Spec)
		check   func(t *testing.T, spec agent.Spec, r *agent.Result)
	}{
		{"broken answer with cost and usage", "plan", 1, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if string(r.Text) != "Here you go: {'tasks': ['a', 'b',],}\n" || r.IsError || r.ExitCode != 0 {
				t.Errorf("Text %q is_error %v exit %d", r.Text, r.IsError, r.ExitCode)
			}
			if r.CostUSD != 0.01 || r.Turns != 3 || r.InputTokens != 120 || r.OutputTokens != 30 {
				t.Errorf("cost %v turns %d tokens %d/%d", r.CostUSD, r.Turns, r.InputTokens, r.OutputTokens)
			}
		}},
		{"attempts past the list reuse the last entry", "plan", 5, true, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if string(r.Text) != `{"tasks": ["a"]}` {
				t.Errorf("Text = %q", r.Text)
			}
		}},
		{"rate limit with retry-after", "implement", 1, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.IsError || !r.Transient || r.ExitCode != 1 {
				t.Errorf("is_error %v transient %v exit %d", r.IsError, r.Transient, r.ExitCode)
			}
			if r.RetryAfter <= time.Second || r.RetryAfter > 4*time.Second || r.ResetAt.IsZero() {
				t.Errorf("RetryAfter %v ResetAt %v, want about 2s", r.RetryAfter, r.ResetAt)
			}
		}},
		{"handoff file written", "implement", 2, true, nil, func(t *testing.T, spec agent.Spec, r *agent.Result) {
			data, err := os.ReadFile(filepath.Join(spec.Dir, "out", "implement.json"))
			if err != nil || string(data) != `{"ok": true}` {
				t.Errorf("handoff file %q, %v", data, err)
			}
			if string(r.Text) != "done" {
				t.Errorf("Text = %q", r.Text)
			}
		}},
		{"help with context", "review", 1, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.Help || string(r.HelpContext) != `{"question":"which db?"}` {
				t.Errorf("Help %v context %s", r.Help, r.HelpContext)
			}
		}},
		{"overloaded", "review", 2, true, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.Transient || !strings.Contains(r.ErrorMessage, "529") {
				t.Errorf("transient %v message %q", r.Transient, r.ErrorMessage)
			}
		}},
		{"hang is stuck", "review", 3, true, func(s *agent.Spec) { s.IdleTimeout = 1500 * time.Millisecond }, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.Stop != agent.StopStuck || r.SessionID == "" {
				t.Errorf("Stop %q session %q", r.Stop, r.SessionID)
			}
		}},
		{"crash mid-answer", "review", 4, true, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.ExitCode != 137 || string(r.Text) != `{"verdict": ` || r.IsError {
				t.Errorf("exit %d Text %q is_error %v", r.ExitCode, r.Text, r.IsError)
			}
		}},
		{"resumed session not found", "review", 5, true, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.SessionNotFound || r.ExitCode != 1 || !r.IsError {
				t.Errorf("not found %v exit %d is_error %v", r.SessionNotFound, r.ExitCode, r.IsError)
			}
		}},
		{"authentication failure", "review", 6, true, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.Permanent || !r.Auth || r.Transient {
				t.Errorf("permanent %v auth %v transient %v", r.Permanent, r.Auth, r.Transient)
			}
		}},
		{"silent from its start", "unattended", 1, false, func(s *agent.Spec) { s.StartTimeout = 500 * time.Millisecond }, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.Stop != agent.StopStuck || !r.NoOutputSinceStart || r.StdoutBytes != 0 {
				t.Errorf("Stop %q no output since start %v after %d bytes", r.Stop, r.NoOutputSinceStart, r.StdoutBytes)
			}
		}},
		{"usage limit as a success", "unattended", 2, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.ExitCode != 0 || !r.IsError || !r.UsageLimit || !r.Transient || r.RetryAfter < 2*time.Hour-time.Minute || r.RetryAfter > 2*time.Hour+time.Minute {
				t.Errorf("exit %d is_error %v usage limit %v transient %v retry after %v, want about 2h",
					r.ExitCode, r.IsError, r.UsageLimit, r.Transient, r.RetryAfter)
			}
		}},
		{"usage limit with no reset", "unattended", 3, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.ExitCode != 0 || !r.IsError || !r.UsageLimit || !r.ResetAt.IsZero() {
				t.Errorf("exit %d is_error %v usage limit %v reset %v", r.ExitCode, r.IsError, r.UsageLimit, r.ResetAt)
			}
		}},
		{"a transcript over max_bytes is not too large", "review", 7, true, func(s *agent.Spec) { s.MaxBytes = 1 << 20 }, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if r.Stop != agent.StopNone || string(r.Text) != "{}" || r.StdoutBytes < 3000000 {
				t.Errorf("Stop = %q Text %q after %d bytes", r.Stop, r.Text, r.StdoutBytes)
			}
		}},
		{"no scenario entry", "deploy", 1, false, nil, func(t *testing.T, _ agent.Spec, r *agent.Result) {
			if !r.IsError || r.ErrorMessage != "no scenario entry for step deploy" || r.ExitCode != 1 {
				t.Errorf("is_error %v message %q exit %d", r.IsError, r.ErrorMessage, r.ExitCode)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := agent.NewSessionID()
			spec := simSpec(t, tt.step, tt.attempt, tt.resume, session)
			if tt.tune != nil {
				tt.tune(&spec)
			}
			r := mustRun(t, context.Background(), spec)
			if !tt.resume && r.SessionID != session && !strings.Contains(tt.name, "no scenario") && !strings.Contains(tt.name, "silent") {
				t.Errorf("SessionID = %q, want %q", r.SessionID, session)
			}
			tt.check(t, spec, r)
		})
	}
}

func TestRunSimInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := simSpec(t, "review", 3, false, agent.NewSessionID())
	spec.Output = &watchWriter{want: `"subtype":"init"`, fire: cancel}
	r := mustRun(t, ctx, spec)
	if r.Stop != agent.StopInterrupted {
		t.Errorf("Stop = %q, want interrupted", r.Stop)
	}
	waitGone(t, r.PID)
}

func TestRunSimLedger(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	session := agent.NewSessionID()
	var pids []int
	for attempt := 1; attempt <= 2; attempt++ {
		spec := simSpec(t, "plan", attempt, attempt > 1, session, "--ledger", ledger)
		pids = append(pids, mustRun(t, context.Background(), spec).PID)
	}
	f, err := os.Open(ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type record struct {
		Step      string `json:"step"`
		Attempt   int    `json:"attempt"`
		SessionID string `json:"session_id"`
		Resume    bool   `json:"resume"`
		PID       int    `json:"pid"`
		Time      string `json:"time"`
		Prompt    string `json:"prompt"`
	}
	var got []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		got = append(got, rec)
	}
	if len(got) != 2 {
		t.Fatalf("ledger has %d lines, want 2", len(got))
	}
	for i, rec := range got {
		if rec.Step != "plan" || rec.Attempt != i+1 || rec.Resume != (i > 0) || rec.SessionID != session ||
			rec.PID != pids[i] || rec.Prompt != "prompt for plan" {
			t.Errorf("ledger line %d = %+v", i+1, rec)
		}
		if _, err := time.Parse(time.RFC3339Nano, rec.Time); err != nil {
			t.Errorf("ledger line %d time: %v", i+1, err)
		}
	}
}
