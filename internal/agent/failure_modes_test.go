package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// TestRunFailureModesFromProcess replays the CLIs' failure transcripts
// through real processes, with their stderr and exit codes, and checks
// what Run reports: the whole path from the pipes to the Result.
func TestRunFailureModesFromProcess(t *testing.T) {
	tests := []struct {
		name, stdout, stderr string
		code                 int
		proto                agent.Protocol
		check                func(t *testing.T, r *agent.Result)
	}{
		// The fixture's reset moved to an hour from now (limitInAnHour).
		{"claude usage limit with exit 0", "claude_limit_success.jsonl", "", 0, agent.ProtocolClaudeStream, func(t *testing.T, r *agent.Result) {
			if !r.IsError || !r.UsageLimit || !r.Transient || r.RetryAfter < 58*time.Minute || r.RetryAfter > time.Hour {
				t.Errorf("is_error %v usage limit %v transient %v reset %v retry after %v, want in an hour",
					r.IsError, r.UsageLimit, r.Transient, r.ResetAt, r.RetryAfter)
			}
		}},
		{"claude expired login with exit 0", "claude_oauth_expired.jsonl", "", 0, agent.ProtocolClaudeStream, func(t *testing.T, r *agent.Result) {
			if !r.IsError || !r.Auth || !r.Permanent || r.Transient {
				t.Errorf("is_error %v auth %v permanent %v transient %v", r.IsError, r.Auth, r.Permanent, r.Transient)
			}
		}},
		{"codex usage limit until a clock time", "codex_usage_limit_clock.jsonl", "", 1, agent.ProtocolCodexJSONL, func(t *testing.T, r *agent.Result) {
			// 12:16 PM local, within the next day.
			local := r.ResetAt.In(time.Local)
			if !r.UsageLimit || local.Hour() != 12 || local.Minute() != 16 || r.RetryAfter <= 0 || r.RetryAfter > 24*time.Hour {
				t.Errorf("usage limit %v reset %v (%v local) retry after %v", r.UsageLimit, r.ResetAt, local, r.RetryAfter)
			}
		}},
		{"codex login to renew", "codex_auth_refresh.jsonl", "", 1, agent.ProtocolCodexJSONL, func(t *testing.T, r *agent.Result) {
			if !r.Auth || r.ExitCode != 1 {
				t.Errorf("auth %v exit %d", r.Auth, r.ExitCode)
			}
		}},
		{"gemini without a login", "gemini_no_auth.jsonl", "gemini_no_auth.stderr", 41, agent.ProtocolGeminiStream, func(t *testing.T, r *agent.Result) {
			if !r.Auth || !r.IsError || !strings.Contains(r.ErrorMessage, "Auth method") {
				t.Errorf("auth %v is_error %v message %q", r.Auth, r.IsError, r.ErrorMessage)
			}
		}},
		{"gemini stopped at its turn limit", "gemini_max_turns.jsonl", "", 0, agent.ProtocolGeminiStream, func(t *testing.T, r *agent.Result) {
			if r.TurnError != "Maximum session turns exceeded" || r.IsError || len(r.Text) != 0 {
				t.Errorf("turn error %q is_error %v text %q", r.TurnError, r.IsError, r.Text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stderr := filepath.Join(t.TempDir(), "empty")
			if tt.stderr != "" {
				stderr = abs(t, "testdata/"+tt.stderr)
			} else {
				writeFile(t, stderr, "")
			}
			stdout := abs(t, "testdata/"+tt.stdout)
			if tt.stdout == "claude_limit_success.jsonl" {
				stdout = limitInAnHour(t, stdout)
			}
			spec := helperSpec(t, "replay", stdout, stderr, itoa(tt.code))
			spec.Protocol = tt.proto
			spec.Supervisor = selfExe(t)
			r := mustRun(t, context.Background(), spec)
			if r.ExitCode != tt.code || r.Stop != agent.StopNone {
				t.Fatalf("exit %d stop %q, want %d by itself", r.ExitCode, r.Stop, tt.code)
			}
			tt.check(t, r)
		})
	}
}

// limitInAnHour copies a transcript whose usage limit resets at
// 1771390800 with the reset an hour from now instead.
func limitInAnHour(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	writeFile(t, out, strings.ReplaceAll(string(data), "1771390800", reset))
	return out
}

func abs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPresetEnvReachesTheAgent: what PresetEnv adds reaches a real
// process started the way the run loop starts it (base environment, then
// the preset's): the config directory of the entry, whatever cadence's
// own environment says, and DISABLE_AUTOUPDATER=1 for Claude Code unless
// the user set it.
func TestPresetEnvReachesTheAgent(t *testing.T) {
	tests := []struct {
		name string
		inv  agent.Invocation
		base []string
		want []string
	}{
		{"claude with an account of its own", agent.Invocation{Preset: agent.PresetClaude, ConfigDir: "/accounts/work"},
			[]string{"CLAUDE_CONFIG_DIR=/home/me/.claude"},
			[]string{"CLAUDE_CONFIG_DIR=/accounts/work", "DISABLE_AUTOUPDATER=1"}},
		{"claude, the user's updater setting kept", agent.Invocation{Preset: agent.PresetClaude},
			[]string{"DISABLE_AUTOUPDATER=0"},
			[]string{"CLAUDE_CONFIG_DIR=", "DISABLE_AUTOUPDATER=0"}},
		{"codex", agent.Invocation{Preset: agent.PresetCodex, ConfigDir: "/accounts/two"}, nil,
			[]string{"CODEX_HOME=/accounts/two", "DISABLE_AUTOUPDATER="}},
		{"gemini", agent.Invocation{Preset: agent.PresetGemini, ConfigDir: "/accounts/three"}, []string{"GEMINI_CLI_HOME=/home/me"},
			[]string{"GEMINI_CLI_HOME=/accounts/three"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := make([]string, len(tt.want))
			for i, kv := range tt.want {
				names[i], _, _ = strings.Cut(kv, "=")
			}
			spec := helperSpec(t, append([]string{"getenv"}, names...)...)
			var env []string
			for _, kv := range helperEnviron() { // whatever this machine sets
				if name, _, _ := strings.Cut(kv, "="); !slices.Contains(names, name) {
					env = append(env, kv)
				}
			}
			env = append(env, tt.base...)
			spec.Env = append(env, agent.PresetEnv(tt.inv, env)...)
			r := mustRun(t, context.Background(), spec)
			if got := strings.Split(strings.TrimSpace(string(r.Text)), "\n"); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("the agent saw %q, want %q", got, tt.want)
			}
		})
	}
}
