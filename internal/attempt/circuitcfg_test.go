package attempt

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/workflow"
)

// An agent's configuration hash changes with whatever decides whether it
// can run (program, args, the names of its environment variables, its
// circuit settings, a sim agent's scenario), and not with an environment
// variable's value, which may be a secret and is not stored.
func TestAgentConfigHash(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(scenario, []byte("steps: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() *workflow.Agent {
		return &workflow.Agent{Name: "a", Preset: "exec", Command: []string{"claude"}, Args: []string{"-p"},
			Env: map[string]string{"TOKEN": "one"}, Scenario: scenario,
			Circuit: workflow.Circuit{Failures: 3, OpenFor: time.Minute, HalfOpenCalls: 1}}
	}
	h0 := agentConfigHash(base())
	if h := agentConfigHash(base()); h != h0 {
		t.Fatalf("the same configuration hashes to %s and %s", h0, h)
	}
	changes := map[string]func(a *workflow.Agent){
		"command":         func(a *workflow.Agent) { a.Command = []string{"claudee"} },
		"args":            func(a *workflow.Agent) { a.Args = []string{"-p", "--verbose"} },
		"preset":          func(a *workflow.Agent) { a.Preset = "claude" },
		"env key":         func(a *workflow.Agent) { a.Env = map[string]string{"TOKEN": "one", "MORE": "x"} },
		"circuit":         func(a *workflow.Agent) { a.Circuit.Failures = 5 },
		"model":           func(a *workflow.Agent) { a.Model = "other" },
		"scenario's text": nil,
	}
	for name, change := range changes {
		a := base()
		if change == nil {
			if err := os.WriteFile(scenario, []byte("steps: {one: []}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			change(a)
		}
		if agentConfigHash(a) == h0 {
			t.Errorf("a changed %s keeps the hash", name)
		}
		if change == nil {
			if err := os.WriteFile(scenario, []byte("steps: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := base()
	a.Env["TOKEN"] = "two"
	if agentConfigHash(a) != h0 {
		t.Error("a changed environment value changes the hash")
	}
}
