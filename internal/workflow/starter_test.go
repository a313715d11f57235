package workflow

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTemplateLoads writes the starter files into an empty project and
// loads them as `cadence init` followed by `cadence run` would.
func TestTemplateLoads(t *testing.T) {
	dir := t.TempDir()
	files := StarterFiles()
	if string(files[DefaultPath]) != string(Template()) {
		t.Fatalf("StarterFiles()[%q] is not Template()", DefaultPath)
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), string(content))
	}
	w, err := Load(dir, "")
	if err != nil {
		t.Fatalf("the starter workflow does not load:\n%v", err)
	}
	sim := w.Agents[w.Steps[0].Agent]
	if sim == nil || sim.Preset != "sim" || sim.Scenario == "" {
		t.Errorf("the starter's first step must run the sim agent with a scenario, got %+v", sim)
	}
	if w.Steps[0].Handoff.Schema == nil {
		t.Error("the starter's first step has no schema")
	}
}

// formatKeys is every key of the workflow format (SPEC section 4 and the
// agent settings of the workflow API).
var formatKeys = []string{
	"version", "name", "defaults", "agents", "steps",
	"agent", "retry", "timeout", "idle_timeout", "exit_grace", "handoff", "max_cost_usd", "fail_on_exit_code",
	"max_attempts", "backoff", "initial", "multiplier", "max", "jitter", "on", "never",
	"from", "path", "schema", "repair", "accept_truncated", "coerce", "max_bytes", "max_depth",
	"preset", "command", "args", "env", "prompt_via", "output", "continue_args",
	"help_marker", "native_schema", "scenario", "base_url", "model", "api_key_env",
	"circuit", "failures", "open_for", "half_open_calls",
	"id", "prompt", "prompt_file", "on_help", "max_rounds",
	// SPEC sections 16 and 17
	"inputs", "max_parallel_steps", "needs", "when", "allow_failure", "run", "loop", "until",
	"max_iterations", "session", "on_exhausted", "approval", "on_reject",
	"config_dir", "max_concurrent", "fallback", "start_timeout", "fallback_after",
	"notify", "webhook", "notify_after",
}

var keyLine = regexp.MustCompile(`^\s*(?:-\s+)?([a-z_]+):`)

// TestTemplateDocumented: every key the starter sets carries a comment on
// its line or just above it, and every key of the format appears in it,
// set or in a commented-out example.
func TestTemplateDocumented(t *testing.T) {
	lines := strings.Split(string(Template()), "\n")
	seen := map[string]bool{}
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if code, ok := strings.CutPrefix(trimmed, "#"); ok {
			if m := keyLine.FindStringSubmatch(code); m != nil {
				seen[m[1]] = true
			}
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seen[m[1]] = true
		commentAbove := i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#")
		if !strings.Contains(line, " # ") && !commentAbove {
			t.Errorf("line %d: key %s has no comment: %q", i+1, m[1], line)
		}
	}
	for _, k := range formatKeys {
		if !seen[k] {
			t.Errorf("key %s is not shown in the starter workflow", k)
		}
	}
}
