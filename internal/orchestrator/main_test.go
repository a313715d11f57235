package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/agent/sim"
)

// TestMain lets this test binary double as the simulated agent and as the
// agent supervisor: the run loop starts SelfExe with `agent supervise ...`
// and the sim preset with `agent sim ...`, and tests pass os.Args[0].
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "sim" {
		os.Exit(sim.Main(context.Background(), os.Args[3:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
	if len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "supervise" {
		os.Exit(agent.Supervise(os.Args[3:], os.Stderr))
	}
	os.Exit(m.Run())
}

// writeProject writes files (path → content) under a new project directory.
func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func selfExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
