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
	dir := copyExample(t, "checks")
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

// copyExample copies examples/NAME into a temporary directory, as a user's
// clone would have it, and returns the copy.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", name)
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
	return dir
}

// TestExampleMap runs examples/map as a user would, on a copy: four items,
// three at once; one corrected by a follow-up in its own session, one dead
// within max_failures, and a report step that read every item's output.
func TestExampleMap(t *testing.T) {
	dir := copyExample(t, "map")
	p := &project{t: t, dir: dir}
	r := p.cadence(nil, "run")
	r.exits(t, 0)
	rep := p.inspect()
	fix := step(rep, "fix")
	if fix.ItemCounts["succeeded"] != 3 || fix.ItemCounts["failed"] != 1 || len(fix.Dead) != 1 || fix.Dead[0].Key != "L4" {
		t.Fatalf("fix: items %v, dead %+v; want 3 succeeded and L4 dead", fix.ItemCounts, fix.Dead)
	}
	for _, it := range fix.Items {
		if it.Key == "L3" && (len(it.Attempts) != 2 || it.Attempts[1].Kind != "followup" || it.Attempts[1].SessionID != it.Attempts[0].SessionID) {
			t.Errorf("L3: attempts %+v, want a follow-up in the same session", it.Attempts)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ".cadence", "handoffs", rep.Run.ID, "fix.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Data struct {
			Items []struct {
				Key    string
				Output struct{ Summary string }
			}
			Failed []struct{ Key, Class string }
		}
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range env.Data.Items {
		got = append(got, it.Key+"="+it.Output.Summary)
	}
	for _, f := range env.Data.Failed {
		got = append(got, f.Key+" dead: "+f.Class)
	}
	want := "L1=documented Add; L2=lower-cased the error string; L3=used fmt.Errorf; L4 dead: empty"
	if strings.Join(got, "; ") != want {
		t.Errorf("the map's output: %q, want %q", strings.Join(got, "; "), want)
	}
	if s := step(rep, "report"); s.Status != "succeeded" {
		t.Errorf("report %s, want succeeded", s.Status)
	}
	r = p.cadence(nil, "dlq", "list")
	r.exits(t, 0)
	if !strings.Contains(r.stdout, "L4") || !strings.Contains(r.stdout, "empty") {
		t.Errorf("dlq list:\n%s", r.stdout)
	}
}
