package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleChecks runs examples/checks as a user would, on a copy: the
// simulated agent's first calc.go makes the real `go test ./...` fail, the
// follow-up quotes the failing test, and the second attempt passes.
func TestExampleChecks(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "checks")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "calc.go")); !os.IsNotExist(err) {
		t.Fatalf("the example ships a calc.go (stat: %v): the agent is meant to write it", err)
	}
	p := &project{t: t, dir: dir}
	r := p.cadence(nil, "run")
	r.exits(t, 0)
	s := step(p.inspect(), "implement")
	if len(s.Attempts) != 2 || s.Attempts[0].Class != "check" || s.Attempts[1].Status != "succeeded" {
		t.Fatalf("attempts %+v, want a failed check, then a success", s.Attempts)
	}
	b, err := os.ReadFile(filepath.Join(dir, s.Attempts[0].FailedHandoff))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		FollowupPrompt string `json:"followup_prompt"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`the check "tests" (` + "`go test ./...`" + `) exited with code 1`, "Add(2, 2) = 0, want 4", "--- FAIL: TestAdd"} {
		if !strings.Contains(rec.FollowupPrompt, want) {
			t.Errorf("the follow-up lacks %q:\n%s", want, rec.FollowupPrompt)
		}
	}
}
