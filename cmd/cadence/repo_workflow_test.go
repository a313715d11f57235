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
	// A module of its own with a failing test, quotes, a backslash and a
	// tab in its output.
	bad, broken := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		"go.mod":      "module bad\n\ngo 1.21\n",
		"bad_test.go": "package bad\n\nimport \"testing\"\n\nfunc TestBad(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) { t.Fatal(`want \"x\\\\y\"`) })\n\tt.Log(\"a long log line with a tab\\there\")\n}\n",
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
	// The attempt's error, which a dead-letter entry repeats, names the
	// failing tests, not only "/ok: expected true".
	if got, want := r.Diagnosis.Summary(), `schema: /failed/TestBad~1sub: expected "no failure", got "bad_test.go:6: want `; !strings.HasPrefix(got, want) {
		t.Errorf("the error of a failing package: %q, want it to start %q", got, want)
	}
	// A package that does not build names its first error.
	for name, text := range map[string]string{
		"go.mod":     "module broken\n\ngo 1.21\n",
		"broken.go":  "package broken\n\nfunc F() int { return undefined }\n",
		"ok_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = check("test", script("test-package.sh", broken, "."))
	if got := r.Diagnosis.Summary(); r.OK || !strings.HasPrefix(got, `schema: /failed/no_test_ran: expected "no failure", got "./broken.go:3:`) || !strings.Contains(got, `undefined`) {
		t.Errorf("the error of a package that does not build: %q", got)
	}
}
