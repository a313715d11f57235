package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// geminiShellInactivity is Gemini CLI's own limit on a shell command's
// silence, its settings key tools.shell.inactivityTimeout (seconds,
// default 300): a command that writes nothing for that long is cancelled,
// and the model is told so.
const geminiShellInactivity = 5 * time.Minute

// Gemini CLI reads its settings from files only (no environment variable
// or flag sets tools.shell.inactivityTimeout). Of its four files, the
// system defaults file is the one of lowest precedence, below the user's,
// the project's and the system settings, and GEMINI_CLI_SYSTEM_DEFAULTS_PATH
// moves it. So the preset writes the limit into a system defaults file of
// its own, a copy of the machine's with the key added, and points Gemini
// CLI at it: whatever the user or an administrator set elsewhere still
// wins. Gemini CLI reads a system file only when it and every folder above
// it belong to root and no one else may write them, so this works only
// when cadence runs as root (as in CI containers), from a cache directory
// that passes the same check; otherwise the user's own settings are the
// only way (docs/agents.md).
const (
	geminiDefaultsEnv = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
	geminiSettingsEnv = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
)

// geminiShellLimit returns the whole seconds of tools.shell.inactivityTimeout
// that bound Gemini CLI's shell tool below idle (see toolTimeouts), or
// false when its own limit is already below: then nothing is changed.
func geminiShellLimit(idle time.Duration) (int, bool) {
	if idle <= 0 {
		return 0, false
	}
	_, most := toolTimeouts(idle, geminiShellInactivity, geminiShellInactivity)
	if most >= geminiShellInactivity {
		return 0, false
	}
	return max(int(most/time.Second), 1), true
}

// geminiDefaults returns the settings of a system defaults file that sets
// the shell tool's limit to secs, merged into machine, the content of the
// machine's own system defaults file (nil when there is none). It reports
// false when the machine's file sets the limit itself, which is then left
// alone, and fails when that file is not plain JSON (Gemini CLI allows
// comments, which this copy would lose).
func geminiDefaults(machine []byte, secs int) ([]byte, bool, error) {
	settings := map[string]any{}
	if len(machine) > 0 {
		if err := json.Unmarshal(machine, &settings); err != nil {
			return nil, false, fmt.Errorf("gemini system defaults: %w", err)
		}
	}
	tools, err := object(settings, "tools")
	if err != nil {
		return nil, false, err
	}
	shell, err := object(tools, "shell")
	if err != nil {
		return nil, false, err
	}
	if _, set := shell["inactivityTimeout"]; set {
		return nil, false, nil
	}
	shell["inactivityTimeout"] = secs
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, false, fmt.Errorf("gemini system defaults: %w", err)
	}
	return append(b, '\n'), true, nil
}

// object returns m[key] as an object, adding an empty one when absent.
func object(m map[string]any, key string) (map[string]any, error) {
	switch v := m[key].(type) {
	case nil:
		o := map[string]any{}
		m[key] = o
		return o, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("gemini system defaults: %q is %T, not an object", key, v)
	}
}

// presetHost is what PresetEnv needs of the machine; tests replace it.
type presetHost struct {
	euid     int
	cacheDir string // where a preset writes files for its CLI; "" for nowhere
	// secure reports whether Gemini CLI reads a system settings file at
	// path (see systemFileSecure).
	secure func(path string) bool
}

// geminiEnv is the environment that bounds Gemini CLI's shell tool below
// the invocation's idle timeout: GEMINI_CLI_SYSTEM_DEFAULTS_PATH naming a
// settings file written in the host's cache directory. It is empty when no
// bound is needed, when the environment already chooses a system defaults
// file, and when Gemini CLI would not read the file: cadence is not root,
// or the file cannot be written where Gemini CLI trusts it. Gemini CLI
// then keeps its own limit.
func geminiEnv(inv Invocation, base []string, host presetHost) []string {
	secs, ok := geminiShellLimit(inv.IdleTimeout)
	if !ok || host.euid != 0 || host.cacheDir == "" || setsEnv(base, geminiDefaultsEnv) {
		return nil
	}
	machine, err := os.ReadFile(machineGeminiDefaults(base))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	content, ok, err := geminiDefaults(machine, secs)
	if err != nil || !ok {
		return nil
	}
	path, err := writeOnce(host.cacheDir, "gemini-system-defaults-", content)
	if err != nil || !host.secure(path) {
		return nil
	}
	return []string{geminiDefaultsEnv + "=" + path}
}

// machineGeminiDefaults is where Gemini CLI looks for the system defaults
// file when GEMINI_CLI_SYSTEM_DEFAULTS_PATH is not set: beside the system
// settings file.
func machineGeminiDefaults(base []string) string {
	settings := lookupEnv(base, geminiSettingsEnv)
	if settings == "" {
		switch runtime.GOOS {
		case "darwin":
			settings = "/Library/Application Support/GeminiCli/settings.json"
		default:
			settings = "/etc/gemini-cli/settings.json"
		}
	}
	return filepath.Join(filepath.Dir(settings), "system-defaults.json")
}

// writeOnce writes content to a file in dir named prefix plus a hash of
// the content, unless it is there already, and returns its path. The
// directory is made private (a settings file can name commands for the
// agent to run), and the file appears whole or not at all.
func writeOnce(dir, prefix string, content []byte) (string, error) {
	sum := sha256.Sum256(content)
	path := filepath.Join(dir, prefix+hex.EncodeToString(sum[:8])+".json")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(content) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, prefix+"*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

// presetCacheDir is where presets keep the files they give a CLI: the
// user's cache directory, private to the user.
func presetCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "cadence")
}
