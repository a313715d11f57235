package agent

import (
	"slices"
	"testing"
	"time"
)

func TestPresetEnv(t *testing.T) {
	bypass := []string{"--model", "sonnet", "--dangerously-skip-permissions"}
	tests := []struct {
		name string
		inv  Invocation
		euid int
		want []string
	}{
		{"claude bypassing permissions as root", Invocation{Preset: PresetClaude, Args: bypass}, 0, []string{"IS_SANDBOX=1"}},
		{"claude bypassing permissions as a user", Invocation{Preset: PresetClaude, Args: bypass}, 1000, nil},
		{"claude as root without the bypass", Invocation{Preset: PresetClaude, Args: []string{"--model", "sonnet"}}, 0, nil},
		{"another preset with the same word", Invocation{Preset: PresetExec, Command: []string{"x"}, Args: bypass}, 0, nil},
		{"claude, idle_timeout above its own limits", Invocation{Preset: PresetClaude, IdleTimeout: 15 * time.Minute}, 1000,
			[]string{"BASH_DEFAULT_TIMEOUT_MS=120000", "BASH_MAX_TIMEOUT_MS=600000"}},
		{"claude, idle_timeout 5m", Invocation{Preset: PresetClaude, IdleTimeout: 5 * time.Minute}, 1000,
			[]string{"BASH_DEFAULT_TIMEOUT_MS=120000", "BASH_MAX_TIMEOUT_MS=270000"}},
		{"claude, idle_timeout 90s", Invocation{Preset: PresetClaude, IdleTimeout: 90 * time.Second}, 1000,
			[]string{"BASH_DEFAULT_TIMEOUT_MS=81000", "BASH_MAX_TIMEOUT_MS=81000"}},
		{"claude, idle_timeout 5s", Invocation{Preset: PresetClaude, IdleTimeout: 5 * time.Second}, 1000,
			[]string{"BASH_DEFAULT_TIMEOUT_MS=4000", "BASH_MAX_TIMEOUT_MS=4000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := presetEnv(tt.inv, tt.euid); !slices.Equal(got, tt.want) {
				t.Errorf("presetEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPresetEnvKeepsTheUsersChoice: a variable the agent's env: or
// cadence's own environment sets is never overridden.
func TestPresetEnvKeepsTheUsersChoice(t *testing.T) {
	inv := Invocation{Preset: PresetClaude, IdleTimeout: 5 * time.Minute}
	got := PresetEnv(inv, []string{"PATH=/bin", "BASH_MAX_TIMEOUT_MS=900000"})
	if want := []string{"BASH_DEFAULT_TIMEOUT_MS=120000"}; !slices.Equal(got, want) {
		t.Fatalf("PresetEnv = %q, want %q", got, want)
	}
}

func TestUnansweredSessionResumable(t *testing.T) {
	want := map[string]bool{PresetClaude: false, PresetGemini: false, PresetCodex: true, PresetOpenAI: true, PresetSim: true, PresetExec: true}
	for preset, w := range want {
		if got := UnansweredSessionResumable(preset); got != w {
			t.Errorf("UnansweredSessionResumable(%q) = %v, want %v", preset, got, w)
		}
	}
}
