package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
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

// copyExample copies examples/NAME into a temporary directory, as a fresh
// clone would have it, and returns the copy. Only what the repository
// ships is copied: running an example in place, as the README suggests,
// leaves its agent's files (examples/checks/calc.go, git-ignored) and its
// .cadence state behind, and the test must not depend on their absence.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	return copyShipped(t, filepath.Join("..", "..", "examples", name))
}

// copyShipped copies the files of src that git tracks, or would track
// (untracked but not ignored), into a temporary directory. Outside a git
// checkout, where nothing tells what is shipped, it copies every file.
func copyShipped(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := shippedFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shippedFiles lists the files of src, relative to it, that a clone has.
func shippedFiles(src string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = src
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" {
				continue
			}
			// A tracked file deleted from the work tree is not there to copy.
			if _, err := os.Stat(filepath.Join(src, f)); err == nil {
				files = append(files, filepath.FromSlash(f))
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		files = append(files, rel)
		return err
	})
	return files, err
}

// What an example leaves when it is run in place, as the README suggests,
// is not part of the copy a test runs: the agent's git-ignored files and
// cadence's state. A file that is new but not ignored is copied.
func TestCopyShippedLeavesRunLeftoversOut(t *testing.T) {
	repo := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn("init", "--quiet")
	write("ex/.gitignore", "calc.go\n")
	write("ex/.cadence/.gitignore", "state.db\nattempts/\n")
	write("ex/.cadence/workflow.yaml", "version: 1\n")
	write("ex/calc_test.go", "package calc\n")
	gitIn("add", "-A")
	gitIn("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "example")
	// A run in place.
	write("ex/calc.go", "package calc\n")
	write("ex/.cadence/state.db", "state")
	write("ex/.cadence/attempts/r/s/1.out", "output")
	write("ex/NEW.md", "not committed yet, not ignored\n")

	dir := copyShipped(t, filepath.Join(repo, "ex"))
	for _, want := range []string{".gitignore", ".cadence/.gitignore", ".cadence/workflow.yaml", "calc_test.go", "NEW.md"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("the copy lacks %s: %v", want, err)
		}
	}
	for _, absent := range []string{"calc.go", ".cadence/state.db", ".cadence/attempts"} {
		if _, err := os.Stat(filepath.Join(dir, absent)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the copy has %s (stat: %v)", absent, err)
		}
	}
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

// TestExampleGraph runs examples/graph as a user would, on a copy: the
// input is stored with the run, changelog is skipped by its when, and
// check, a command step, reads what implement and docs reported from
// CADENCE_OUTPUTS_DIR. (That steps run side by side is proven by
// testdata/script/graph_run.txtar, whose two steps each wait for the
// other to have started.)
func TestExampleGraph(t *testing.T) {
	dir := copyExample(t, "graph")
	p := &project{t: t, dir: dir}
	r := p.cadence(nil, "run", "--input", "issue=the parser drops trailing commas")
	r.exits(t, 0)
	rep := p.inspect()
	want := map[string]string{"plan": "succeeded", "implement": "succeeded", "docs": "succeeded", "changelog": "skipped", "check": "succeeded"}
	for id, status := range want {
		if s := step(rep, id); string(s.Status) != status {
			t.Errorf("step %s: %s, want %s", id, s.Status, status)
		}
	}
	var inputs map[string]string
	if err := json.Unmarshal(rep.Run.Inputs, &inputs); err != nil || inputs["issue"] != "the parser drops trailing commas" {
		t.Errorf("the run's inputs: %s (%v)", rep.Run.Inputs, err)
	}
	r = p.cadence(nil, "output", "--step", "check")
	r.exits(t, 0)
	if !strings.Contains(r.stdout, `implement: {\"files\":[\"parser.go\"`) || !strings.Contains(r.stdout, `docs: {\"files\":[\"README.md\"]`) {
		t.Errorf("check's output:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, `"exit_code": 0`) {
		t.Errorf("check's output has no exit code 0:\n%s", r.stdout)
	}
}

// TestExampleReviewLoop runs examples/review-loop as a user would, on a
// copy: the loop goes round until the second agent approves in round 3,
// each round's code prompt carrying the previous review's comments; the
// gate stops the run with exit 5, and an approval with --resume lets the
// merge command read who approved.
func TestExampleReviewLoop(t *testing.T) {
	dir := copyExample(t, "review-loop")
	p := &project{t: t, dir: dir}
	r := p.cadence(nil, "run")
	r.exits(t, 5)
	if !strings.Contains(r.stdout, "Merge fix/trailing-commas after 3 review rounds?") {
		t.Errorf("the gate's prompt is not shown:\n%s", r.stdout)
	}
	rep := p.inspect()
	for id, status := range map[string]string{"plan": "succeeded", "implement": "succeeded", "merge-gate": "waiting", "merge": "pending"} {
		if s := step(rep, id); string(s.Status) != status {
			t.Errorf("step %s: %s, want %s", id, s.Status, status)
		}
	}
	// What each round's coder was asked, from the state.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, ".cadence", "state.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string]string{
		"implement/1/code": "",
		"implement/2/code": "The reviewer asked for changes: add a test for nested lists",
		"implement/3/code": "The reviewer asked for changes: the new test does not cover an empty list",
	}
	for path, asked := range want {
		var prompt string
		if err := db.QueryRow(`SELECT prompt FROM attempts WHERE step_id = ? AND n = 1`, path).Scan(&prompt); err != nil {
			t.Fatalf("the prompt of %s: %v", path, err)
		}
		if asked == "" && strings.Contains(prompt, "reviewer") || asked != "" && !strings.Contains(prompt, asked) {
			t.Errorf("the prompt of %s:\n%s\nwant it to carry %q", path, prompt, asked)
		}
	}
	r = p.cadence(nil, "approve", "merge-gate", "--comment", "ship it", "--by", "ana", "--resume")
	r.exits(t, 0)
	r = p.cadence(nil, "output", "--step", "merge")
	r.exits(t, 0)
	if !strings.Contains(r.stdout, `\"approved\":true`) || !strings.Contains(r.stdout, `\"by\":\"ana\"`) {
		t.Errorf("merge's output:\n%s", r.stdout)
	}
}
