package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestLoadGood checks every value of testdata/project/good.yaml, which sets
// defaults for everything and overrides some of them in some steps.
func TestLoadGood(t *testing.T) {
	w, err := Load(project, "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	absProject, err := filepath.Abs(project)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(project, "good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if w.Path != "good.yaml" || w.Dir != absProject || string(w.Raw) != string(raw) || w.RawSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Path %q Dir %q RawSHA256 %s: want good.yaml, %s and the file's hash", w.Path, w.Dir, w.RawSHA256, absProject)
	}
	// The workflow's hash covers every file it names, each once.
	wantFiles := map[string]string{}
	for _, name := range []string{"sim.yaml", "prompts/plan.md", "prompts/implement.md", "schemas/plan.json", "schemas/result.json"} {
		b, err := os.ReadFile(filepath.Join(project, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		wantFiles[name] = hex.EncodeToString(sum[:])
	}
	if !reflect.DeepEqual(w.Files, wantFiles) {
		t.Errorf("Files %v, want %v", w.Files, wantFiles)
	}
	if w.SHA256 == w.RawSHA256 || w.SHA256 != Hash(w.RawSHA256, wantFiles) {
		t.Errorf("SHA256 %s does not cover the named files", w.SHA256)
	}
	if w.Version != 1 || w.Name != "feature-pipeline" || w.MaxCostUSD != 20 {
		t.Errorf("Version %d Name %q MaxCostUSD %g", w.Version, w.Name, w.MaxCostUSD)
	}

	wantAgents := map[string]*Agent{
		"claude": {
			Name: "claude", Preset: "claude", Args: []string{"--model", "sonnet"},
			Env: map[string]string{"MAX_THINKING_TOKENS": "8000"}, PromptVia: "stdin", Output: "text",
			HelpMarker: ">>>HELP<<<", Circuit: Circuit{Failures: 5, OpenFor: 90 * time.Second, HalfOpenCalls: 1},
		},
		"lint": {
			Name: "lint", Preset: "exec", Command: []string{"./scripts/lint-agent.sh", "{{ .Step.ID }}"},
			PromptVia: "arg", Output: "codex-jsonl", ContinueArgs: []string{"--session", "{{ .SessionID }}"},
			HelpMarker: ">>>HELP<<<", Circuit: Circuit{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1},
		},
		"sim": {
			Name: "sim", Preset: "sim", Scenario: filepath.Join(absProject, "sim.yaml"), PromptVia: "stdin", Output: "text",
			HelpMarker: ">>>HELP<<<", Circuit: Circuit{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1},
		},
	}
	if !reflect.DeepEqual(w.Agents, wantAgents) {
		for name, a := range w.Agents {
			t.Errorf("agent %s: %+v\nwant %+v", name, *a, wantAgents[name])
		}
	}

	if len(w.Steps) != 3 {
		t.Fatalf("got %d steps, want 3", len(w.Steps))
	}
	plan, implement, review := w.Steps[0], w.Steps[1], w.Steps[2]
	for i, s := range w.Steps {
		if s.Index != i || w.Step(s.ID) != s {
			t.Errorf("step %s: Index %d, Step(id) %p; want %d, %p", s.ID, s.Index, w.Step(s.ID), i, s)
		}
	}
	if w.Step("nope") != nil {
		t.Error(`Step("nope") is not nil`)
	}

	// plan: everything from defaults, the prompt from a file.
	if plan.Agent != "sim" || plan.PromptFile != "prompts/plan.md" || plan.Prompt != "Plan the work for run {{ .Run.ID }}.\n" {
		t.Errorf("plan: agent %q prompt_file %q prompt %q", plan.Agent, plan.PromptFile, plan.Prompt)
	}
	defaultRetry := Retry{MaxAttempts: 4, Backoff: "linear", Initial: 3 * time.Second, Multiplier: 3, Max: 90 * time.Second, Jitter: "equal", Never: []string{"budget"}}
	checkStep(t, plan, Handoff{From: "stdout", SchemaPath: "schemas/plan.json", Repair: false, AcceptTruncated: true, MaxBytes: 512 << 10, MaxEventBytes: 16 << 20, TranscriptMaxBytes: 1 << 30, MaxDepth: 64},
		defaultRetry, 20*time.Minute, 4*time.Minute, 20, nil)

	// implement: overrides single keys of retry and handoff; the others stay.
	if implement.Agent != "claude" {
		t.Errorf("implement: agent %q, want the default claude", implement.Agent)
	}
	implRetry := defaultRetry
	implRetry.MaxAttempts, implRetry.On = 5, []string{"too_large"}
	checkStep(t, implement, Handoff{From: "file", Path: ".cadence/out/implement.json", SchemaPath: "schemas/result.json", AcceptTruncated: true, Coerce: true, MaxBytes: 1000000, MaxEventBytes: 16 << 20, TranscriptMaxBytes: 100000000, MaxDepth: 64},
		implRetry, 45*time.Minute, 4*time.Minute, 20, []string{"plan"})
	if h := implement.OnHelp; h == nil || h.Agent != "lint" || h.MaxRounds != 2 || h.Template == nil || h.Prompt != "Stuck on {{ .Help.Context }} after {{ .Steps.plan.Output }}" {
		t.Errorf("implement.on_help = %+v", h)
	}

	reviewRetry := defaultRetry
	reviewRetry.Backoff, reviewRetry.Initial = "fixed", 0
	checkStep(t, review, Handoff{From: "stdout", SchemaPath: "schemas/plan.json", AcceptTruncated: true, MaxBytes: 2048, MaxEventBytes: 16 << 20, TranscriptMaxBytes: 1 << 30, MaxDepth: 64},
		reviewRetry, 20*time.Minute, 30*time.Second, 2.5, []string{"implement", "plan"})

	// checks: the defaults' list, a step's own list, an empty one.
	wantChecks := map[string][]Check{
		"plan":      {{Name: "tests", Argv: []string{"/bin/sh", "-c", "go test ./..."}, Command: "go test ./...", Shell: true, Timeout: 10 * time.Minute, FeedbackLines: 60}},
		"implement": {{Name: "vet", Argv: []string{"go", "vet", "./..."}, Command: "go vet ./...", Timeout: 2 * time.Minute, FeedbackLines: 20}},
		"review":    nil,
	}
	for id, want := range wantChecks {
		if got := w.Step(id).Checks; !reflect.DeepEqual(got, want) {
			t.Errorf("step %s checks:\n got %+v\nwant %+v", id, got, want)
		}
	}

	// One schema file used by two steps is compiled once.
	if plan.Handoff.Schema == nil || plan.Handoff.Schema != review.Handoff.Schema {
		t.Errorf("schemas/plan.json compiled as %p and %p, want one non-nil schema", plan.Handoff.Schema, review.Handoff.Schema)
	}
	if implement.Handoff.Schema == nil || implement.Handoff.Schema == plan.Handoff.Schema {
		t.Errorf("schemas/result.json: %p", implement.Handoff.Schema)
	}
	// Without needs: each step needs the one before it.
	for i, want := range [][]string{nil, {"plan"}, {"implement"}} {
		if s := w.Steps[i]; s.Kind != KindAgent || !reflect.DeepEqual(s.Needs, want) {
			t.Errorf("step %s: kind %s needs %v, want agent %v", s.ID, s.Kind, s.Needs, want)
		}
	}
	for _, s := range w.Steps {
		if s.Template == nil || s.Template.Name() != s.ID {
			t.Errorf("step %s: template %v", s.ID, s.Template)
		}
	}
}

func checkStep(t *testing.T, s *Step, h Handoff, r Retry, timeout, idle time.Duration, cost float64, reads []string) {
	t.Helper()
	got := s.Handoff
	got.Schema = nil
	if got != h {
		t.Errorf("step %s handoff:\n got %+v\nwant %+v", s.ID, got, h)
	}
	if !reflect.DeepEqual(s.Retry, r) {
		t.Errorf("step %s retry:\n got %+v\nwant %+v", s.ID, s.Retry, r)
	}
	if s.Timeout != timeout || s.IdleTimeout != idle || s.MaxCostUSD != cost {
		t.Errorf("step %s: timeout %v idle %v cost %g, want %v %v %g", s.ID, s.Timeout, s.IdleTimeout, s.MaxCostUSD, timeout, idle, cost)
	}
	if !reflect.DeepEqual(s.Reads, reads) {
		t.Errorf("step %s: reads %v, want %v", s.ID, s.Reads, reads)
	}
}

// TestLoadBuiltInDefaults loads the smallest workflow there is, from the
// default path, and checks the documented defaults.
func TestLoadBuiltInDefaults(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, DefaultPath), "version: 1\nagents: {c: {preset: claude}}\nsteps: [{id: only, agent: c, prompt: go}]\n")
	w, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Path != DefaultPath || w.MaxCostUSD != 0 {
		t.Errorf("Path %q MaxCostUSD %g", w.Path, w.MaxCostUSD)
	}
	a := w.Agents["c"]
	if a.PromptVia != "stdin" || a.Output != "text" || a.HelpMarker != ">>>HELP<<<" || a.Circuit != (Circuit{3, 2 * time.Minute, 1}) {
		t.Errorf("agent defaults: %+v", *a)
	}
	s := w.Steps[0]
	checkStep(t, s, Handoff{From: "stdout", Repair: true, Coerce: true, MaxBytes: 8 << 20, MaxEventBytes: 64 << 20, TranscriptMaxBytes: 1 << 30, MaxDepth: 10000},
		Retry{MaxAttempts: 3, Backoff: "exponential", Initial: 2 * time.Second, Multiplier: 2, Max: 60 * time.Second, Jitter: "full"},
		60*time.Minute, 15*time.Minute, 0, nil)
	if s.OnHelp != nil || s.Prompt != "go" {
		t.Errorf("on_help %v prompt %q", s.OnHelp, s.Prompt)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.TempDir(), "")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

// TestLoadSymlinkEscape: a link inside the project that points outside it
// is refused like a path that says ../ outright.
func TestLoadSymlinkEscape(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.md"), "secret")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "prompt.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "wf.yaml"), "version: 1\nagents: {c: {preset: claude}}\nsteps:\n  - {id: a, agent: c, prompt_file: prompt.md}\n")
	_, err := Load(dir, "wf.yaml")
	want := `wf.yaml:4:36: steps[0].prompt_file: path "prompt.md" resolves to a file that is outside the project directory`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
