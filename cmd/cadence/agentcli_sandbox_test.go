//go:build agentcli

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cadence-dev/cadence/internal/mockmodel"
)

// TestAgentCLISandboxed runs Claude Code in a box (sandbox:, bubblewrap)
// against the mock: its first answer fails the schema, and the follow-up
// continues the same session, which Claude Code keeps in its configuration
// directory: writable in the box, and kept from one boxed attempt to the
// next. Its scratch HOME is under /tmp, which the box replaces with a
// private one: only the configuration is carried in.
func TestAgentCLISandboxed(t *testing.T) {
	s := mockmodel.Start(t, mockmodel.Text(badAnswer), mockmodel.Text(goodAnswer))
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := claudeAgent.entry(t, s, home)
	entry["preset"] = "claude"
	entry["sandbox"] = map[string]any{"network": true}
	agentJSON, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := json.Marshal(e2ePrompt)
	p := newProject(t, `version: 1
defaults:
  agent: a
  retry: {max_attempts: 3, backoff: fixed, initial: 100ms, jitter: none}
  timeout: 3m
agents:
  a: `+string(agentJSON)+`
steps:
  - {id: answer, prompt: `+string(prompt)+`, handoff: {schema: s.json}}
`, map[string]string{"s.json": e2eSchema})
	runE2E(t, p)
	st := step(p.inspect(), "answer")
	if st.Status != "succeeded" || len(st.Attempts) != 2 || st.Attempts[1].Kind != "followup" {
		t.Fatalf("step %s after %d attempts, want succeeded on a follow-up: %+v%s", st.Status, len(st.Attempts), st.Attempts, attemptOutputs(p))
	}
	sameSession(t, st)
	if turns := s.Turns(); len(turns) != 2 {
		t.Fatalf("mock saw %d turns, want 2", len(turns))
	} else {
		carriesHistory(t, turns[1], badAnswer)
	}
	sessions, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	if len(sessions) == 0 {
		t.Errorf("Claude Code kept no session in %s/.claude: its configuration was not writable in the box", home)
	}
}
