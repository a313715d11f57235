package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// The repository's own .cadence/workflow.yaml loads, and its scripts hand
// off what its schemas accept: the package list, a package whose tests
// pass, and, refused, one whose tests fail.
func TestRepositoryWorkflow(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.Load(root, "")
	if err != nil {
		t.Fatalf("the repository's workflow: %v", err)
	}
	if s := wf.Step("test"); s == nil || s.Map == nil || s.Map.Key != "/path" {
		t.Fatalf("step test is not the map over packages: %+v", s)
	}
	script := func(name, dir, item string) []byte {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, ".cadence", "scripts", name))
		cmd.Env = append(os.Environ(), "CADENCE_PROJECT_DIR="+dir, "CADENCE_ITEM_KEY="+item)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	check := func(step string, out []byte) handoff.Result {
		return handoff.Check(out, wf.Step(step).Handoff.Schema, handoff.Options{Repair: true, MaxBytes: 1 << 20, MaxDepth: 100})
	}
	if r := check("packages", script("packages.sh", root, "")); !r.OK || !strings.Contains(string(r.JSON), `"./internal/circuit"`) {
		t.Errorf("packages.sh: %s %v", r.JSON, r.Diagnosis)
	}
	if r := check("test", script("test-package.sh", root, "./internal/circuit")); !r.OK {
		t.Errorf("test-package.sh on a passing package: %v", r.Diagnosis)
	}
	// A module of its own with a failing test, quotes and a backslash in
	// its output.
	bad := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":      "module bad\n\ngo 1.21\n",
		"bad_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) { t.Fatal(`want \"x\\\\y\"`) }\n",
	} {
		if err := os.WriteFile(filepath.Join(bad, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := script("test-package.sh", bad, ".")
	r := check("test", out)
	if r.OK || r.Diagnosis.Class != handoff.ClassSchema || !strings.Contains(string(out), `TestBad`) {
		t.Errorf("test-package.sh on a failing package: ok=%v class %s, output %s", r.OK, r.Diagnosis.Class, out)
	}
}
