package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresetEnv(t *testing.T) {
	bypass := []string{"--model", "sonnet", "--dangerously-skip-permissions"}
	// Claude Code's auto-updater replaces the binary under running
	// sessions and kills them (anthropics/claude-code#78046, #95570).
	const noUpdater = "DISABLE_AUTOUPDATER=1"
	tests := []struct {
		name string
		inv  Invocation
		euid int
		want []string
	}{
		{"claude bypassing permissions as root", Invocation{Preset: PresetClaude, Args: bypass}, 0, []string{noUpdater, "IS_SANDBOX=1"}},
		{"claude bypassing permissions as a user", Invocation{Preset: PresetClaude, Args: bypass}, 1000, []string{noUpdater}},
		{"claude as root without the bypass", Invocation{Preset: PresetClaude, Args: []string{"--model", "sonnet"}}, 0, []string{noUpdater}},
		{"another preset with the same word", Invocation{Preset: PresetExec, Command: []string{"x"}, Args: bypass}, 0, nil},
		{"claude, idle_timeout above its own limits", Invocation{Preset: PresetClaude, IdleTimeout: 15 * time.Minute}, 1000,
			[]string{noUpdater, "BASH_DEFAULT_TIMEOUT_MS=120000", "BASH_MAX_TIMEOUT_MS=600000"}},
		{"claude, idle_timeout 5m", Invocation{Preset: PresetClaude, IdleTimeout: 5 * time.Minute}, 1000,
			[]string{noUpdater, "BASH_DEFAULT_TIMEOUT_MS=120000", "BASH_MAX_TIMEOUT_MS=270000"}},
		{"claude, idle_timeout 90s", Invocation{Preset: PresetClaude, IdleTimeout: 90 * time.Second}, 1000,
			[]string{noUpdater, "BASH_DEFAULT_TIMEOUT_MS=81000", "BASH_MAX_TIMEOUT_MS=81000"}},
		{"claude, idle_timeout 5s", Invocation{Preset: PresetClaude, IdleTimeout: 5 * time.Second}, 1000,
			[]string{noUpdater, "BASH_DEFAULT_TIMEOUT_MS=4000", "BASH_MAX_TIMEOUT_MS=4000"}},
		{"codex", Invocation{Preset: PresetCodex}, 1000, nil},
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
	got := PresetEnv(inv, []string{"PATH=/bin", "BASH_MAX_TIMEOUT_MS=900000", "DISABLE_AUTOUPDATER=0"})
	if want := []string{"BASH_DEFAULT_TIMEOUT_MS=120000"}; !slices.Equal(got, want) {
		t.Fatalf("PresetEnv = %q, want %q", got, want)
	}
}

// TestPresetConfigDir: an agent entry's config directory (an account of
// its own) reaches each CLI in the variable that relocates its
// configuration, and wins over one inherited from cadence's environment:
// entries of one preset with different directories are a pool.
func TestPresetConfigDir(t *testing.T) {
	tests := []struct {
		preset, want string
	}{
		{PresetClaude, "CLAUDE_CONFIG_DIR=/acct/work"},
		{PresetCodex, "CODEX_HOME=/acct/work"},
		{PresetGemini, "GEMINI_CLI_HOME=/acct/work"},
		{PresetQwen, "QWEN_HOME=/acct/work"},
		{PresetSim, "CLAUDE_CONFIG_DIR=/acct/work"},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			inv := Invocation{Preset: tt.preset, ConfigDir: "/acct/work"}
			base := []string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/home/me/.claude", "CODEX_HOME=/home/me/.codex", "GEMINI_CLI_HOME=/home/me", "QWEN_HOME=/home/me/.qwen"}
			got := presetEnvOn(inv, base, presetHost{euid: 1000})
			if !slices.Contains(got, tt.want) {
				t.Errorf("PresetEnv = %q, want %q in it", got, tt.want)
			}
		})
	}
	if got := PresetEnv(Invocation{Preset: PresetCodex}, nil); slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "CODEX_HOME=") }) {
		t.Errorf("PresetEnv without a config dir = %q", got)
	}
	for _, inv := range []Invocation{
		{Preset: PresetClaude, ConfigDir: "relative/dir"},
		{Preset: PresetExec, Command: []string{"x"}, ConfigDir: "/acct"},
	} {
		if _, _, _, err := Command(inv); !errors.Is(err, ErrInvocation) {
			t.Errorf("Command(%s, config dir %q): err %v, want ErrInvocation", inv.Preset, inv.ConfigDir, err)
		}
	}
}

func TestUnansweredSessionResumable(t *testing.T) {
	want := map[string]bool{PresetClaude: false, PresetGemini: false, PresetCodex: true, PresetQwen: true, PresetOpencode: false, PresetPi: false, PresetCopilot: false, PresetOpenAI: true, PresetSim: true, PresetExec: true}
	for preset, w := range want {
		if got := UnansweredSessionResumable(preset); got != w {
			t.Errorf("UnansweredSessionResumable(%q) = %v, want %v", preset, got, w)
		}
	}
}

func TestGeminiShellLimit(t *testing.T) {
	tests := []struct {
		idle time.Duration
		secs int
		ok   bool
	}{
		{0, 0, false},
		{15 * time.Minute, 0, false}, // 14m would raise the CLI's own 5m
		{6 * time.Minute, 0, false},  // 5m24s, above 5m
		{5 * time.Minute, 270, true}, // less a tenth
		{90 * time.Second, 81, true},
		{3 * time.Second, 2, true}, // less the least margin, 1s
		{time.Second, 1, true},     // never under a second
	}
	for _, tt := range tests {
		secs, ok := geminiShellLimit(tt.idle)
		if secs != tt.secs || ok != tt.ok {
			t.Errorf("geminiShellLimit(%v) = %d, %v; want %d, %v", tt.idle, secs, ok, tt.secs, tt.ok)
		}
	}
}

func TestGeminiDefaults(t *testing.T) {
	tests := []struct {
		name    string
		machine string
		want    string // the settings written, as JSON; "" for none
		wantErr bool
	}{
		{"no machine file", "", `{"tools":{"shell":{"inactivityTimeout":2}}}`, false},
		{"the machine's settings are kept", `{"general":{"vimMode":true},"tools":{"sandbox":false,"shell":{"pager":"less"}}}`,
			`{"general":{"vimMode":true},"tools":{"sandbox":false,"shell":{"inactivityTimeout":2,"pager":"less"}}}`, false},
		{"the machine sets the limit itself", `{"tools":{"shell":{"inactivityTimeout":600}}}`, "", false},
		{"comments, which a copy would lose", "// managed\n{}", "", true},
		{"tools is not an object", `{"tools":true}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := geminiDefaults([]byte(tt.machine), 2)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if ok != (tt.want != "") {
				t.Fatalf("ok = %v, want %v", ok, tt.want != "")
			}
			if ok && compact(t, got) != tt.want {
				t.Errorf("settings = %s, want %s", compact(t, got), tt.want)
			}
		})
	}
}

func compact(t *testing.T, doc []byte) string {
	t.Helper()
	s, err := compactJSON(doc)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return s
}

// trusting is a root host whose every path Gemini CLI would trust.
func trusting(cache string) presetHost {
	return presetHost{euid: 0, cacheDir: cache, secure: func(string) bool { return true }}
}

// TestGeminiEnv: the preset points Gemini CLI at a private system defaults
// file that adds the bound to the machine's settings, once, and offers
// none where Gemini CLI would not read it or the environment chose one.
func TestGeminiEnv(t *testing.T) {
	machine := t.TempDir()
	if err := os.WriteFile(filepath.Join(machine, "system-defaults.json"), []byte(`{"general":{"x":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", geminiSettingsEnv + "=" + filepath.Join(machine, "settings.json")}
	inv := Invocation{Preset: PresetGemini, IdleTimeout: 3 * time.Second}

	cache := filepath.Join(t.TempDir(), "cadence")
	env := geminiEnv(inv, base, trusting(cache))
	if len(env) != 1 || !strings.HasPrefix(env[0], geminiDefaultsEnv+"="+cache+string(filepath.Separator)) {
		t.Fatalf("geminiEnv = %q, want %s naming a file in %s", env, geminiDefaultsEnv, cache)
	}
	path := strings.TrimPrefix(env[0], geminiDefaultsEnv+"=")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := compact(t, b), `{"general":{"x":1},"tools":{"shell":{"inactivityTimeout":2}}}`; got != want {
		t.Errorf("%s = %s, want %s", path, got, want)
	}
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir: %v, %v; want private (0700)", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("settings file: %v, %v; want writable by its owner only", fi.Mode().Perm(), err)
	}
	if again := geminiEnv(inv, base, trusting(cache)); !slices.Equal(again, env) {
		t.Errorf("second call = %q, want the same file %q", again, env)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 1 {
		t.Errorf("cache holds %d files, want 1", len(ents))
	}

	none := filepath.Join(t.TempDir(), "cadence")
	tests := []struct {
		name string
		inv  Invocation
		base []string
		host presetHost
	}{
		{"the environment chose a system defaults file", inv, append(base, geminiDefaultsEnv+"=/etc/mine.json"), trusting(none)},
		{"idle_timeout above the CLI's own limit", Invocation{Preset: PresetGemini, IdleTimeout: 15 * time.Minute}, base, trusting(none)},
		{"not root: Gemini CLI reads no system file of another user", inv, base, presetHost{euid: 1000, cacheDir: none, secure: func(string) bool { return true }}},
		{"a cache directory Gemini CLI does not trust", inv, base, presetHost{euid: 0, cacheDir: cache, secure: func(string) bool { return false }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := geminiEnv(tt.inv, tt.base, tt.host); got != nil {
				t.Errorf("geminiEnv = %q, want nothing", got)
			}
		})
	}
	if _, err := os.Stat(none); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was written where none is offered: %v", err)
	}
}

// TestPresetEnvGemini: PresetEnv's gemini bound is one more variable, left
// out like the others when the environment sets it.
func TestPresetEnvGemini(t *testing.T) {
	host := trusting(filepath.Join(t.TempDir(), "cadence"))
	base := []string{geminiSettingsEnv + "=" + filepath.Join(t.TempDir(), "settings.json")}
	env := presetEnvOn(Invocation{Preset: PresetGemini, IdleTimeout: 90 * time.Second}, base, host)
	if len(env) != 1 {
		t.Fatalf("presetEnvOn = %q, want one variable", env)
	}
	path, ok := strings.CutPrefix(env[0], geminiDefaultsEnv+"=")
	if !ok || filepath.Dir(path) != host.cacheDir {
		t.Fatalf("presetEnvOn = %q, want %s in %s", env, geminiDefaultsEnv, host.cacheDir)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := compact(t, b), `{"tools":{"shell":{"inactivityTimeout":81}}}`; got != want {
		t.Errorf("settings = %s, want %s", got, want)
	}
	claude := presetEnvOn(Invocation{Preset: PresetClaude, IdleTimeout: 90 * time.Second}, base, host)
	if slices.ContainsFunc(claude, func(kv string) bool { return strings.HasPrefix(kv, geminiDefaultsEnv) }) {
		t.Errorf("a claude agent got %q", claude)
	}
}

// TestSystemFileSecure follows Gemini CLI's rule for a system settings
// file: it and every folder above it owned by root and writable by no one
// else, no symbolic link on the way.
func TestSystemFileSecure(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(open, "settings.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.json")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want bool
	}{
		{"/", true}, // root's own, 0755 on every Unix
		{file, false},
		{link, false},
		{"relative/settings.json", false},
		{filepath.Join(open, "missing.json"), false},
	}
	for _, tt := range tests {
		if got := systemFileSecure(tt.path); got != tt.want {
			t.Errorf("systemFileSecure(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
