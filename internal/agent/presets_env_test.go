package agent

import (
	"slices"
	"testing"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := presetEnv(tt.inv, tt.euid); !slices.Equal(got, tt.want) {
				t.Errorf("presetEnv = %q, want %q", got, tt.want)
			}
		})
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
