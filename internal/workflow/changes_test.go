package workflow

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

const changesBase = `version: 1
name: demo
defaults:
  agent: claude
  retry: {max_attempts: 3}
agents:
  claude:
    preset: claude
    args: [--model, sonnet]
steps:
  - id: plan
    prompt: Plan.
  - id: implement
    prompt: Implement {{ .Steps.plan.Output }}.
`

// edit applies replacements (old, new, old, new, …) to changesBase.
func edit(pairs ...string) string {
	return strings.NewReplacer(pairs...).Replace(changesBase)
}

func TestChanges(t *testing.T) {
	tests := []struct {
		name string
		new  string
		want []string
	}{
		{"identical", changesBase, nil},
		{"comments and layout only", "# a comment\n" + edit("retry: {max_attempts: 3}", "retry:\n    max_attempts: 3 # same"), nil},
		{"spelled-out default", edit("prompt: Plan.", "prompt: Plan.\n    timeout: 60m"), nil},
		{"step override", edit("prompt: Implement", "retry: {max_attempts: 5}\n    prompt: Implement"),
			[]string{"step implement: retry.max_attempts 3 → 5"}},
		{"default changes every step", edit("retry: {max_attempts: 3}", "retry: {max_attempts: 3, backoff: fixed}"),
			[]string{"step plan: retry.backoff exponential → fixed", "step implement: retry.backoff exponential → fixed"}},
		{"check added", edit("prompt: Plan.", "prompt: Plan.\n    checks: [{name: tests, run: go test ./...}]"),
			[]string{"step plan: checks changed"}},
		{"step added", changesBase + "  - id: review\n    prompt: Review.\n", []string{"step review added"}},
		{"step removed", edit("  - id: plan\n    prompt: Plan.\n", "", "{{ .Steps.plan.Output }}", ""),
			[]string{"step plan removed", "step implement: prompt changed"}},
		{"steps reordered", edit("  - id: plan\n    prompt: Plan.\n", "", "{{ .Steps.plan.Output }}", "") + "  - id: plan\n    prompt: Plan.\n",
			[]string{"step implement: prompt changed", "steps reordered: plan, implement → implement, plan"}},
		{"agent args", edit("sonnet", "opus"), []string{"agent claude: args changed"}},
		{"agent added, prompt changed", edit("prompt: Plan.", "prompt: Plan well.", "agents:\n", "agents:\n  lint: {preset: exec, command: [lint]}\n"),
			[]string{"agent lint added", "step plan: prompt changed"}},
		{"agent circuit", edit("args: [--model, sonnet]", "args: [--model, sonnet]\n    circuit: {open_for: 5m}"),
			[]string{"agent claude: circuit.open_for 2m0s → 5m0s"}},
		{"name", edit("name: demo", "name: demo2"), []string{"name demo → demo2"}},
		{"now broken", edit("version: 1", "version: 3"),
			[]string{"the workflow changed and no longer loads (line 1: unsupported version 3 (want 1))"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Changes([]byte(changesBase), []byte(tt.new))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestChangesBrokenBefore(t *testing.T) {
	got := Changes([]byte("version: ["), []byte(changesBase))
	if len(got) != 1 || got[0] != "the workflow changed (the previous version did not load)" {
		t.Errorf("Changes from a broken file = %q", got)
	}
	if got := Changes([]byte("version: ["), []byte("version: [")); got != nil {
		t.Errorf("Changes between equal broken files = %q, want none", got)
	}
}

// TestChangesChecksDefaults: a check whose defaults are spelled out is the
// same check.
func TestChangesChecksDefaults(t *testing.T) {
	base := strings.Replace(changesBase, "prompt: Plan.", "prompt: Plan.\n    checks: [{name: t, run: [x]}]", 1)
	spelled := strings.Replace(changesBase, "prompt: Plan.", "prompt: Plan.\n    checks: [{name: t, run: [x], timeout: 10m, feedback_lines: 60}]", 1)
	if base == changesBase || spelled == changesBase {
		t.Fatal("the edit did not apply")
	}
	if got := Changes([]byte(base), []byte(spelled)); got != nil {
		t.Fatalf("Changes = %q, want none", got)
	}
}

// TestHashCoversNamedFiles checks that a change to any file a workflow
// names changes its hash, that FileChanges names that file, and that a
// workflow naming no file keeps the hash of its file alone.
func TestHashCoversNamedFiles(t *testing.T) {
	raw := strings.Repeat("ab", 32)
	files := map[string]string{"s.json": "11", "prompts/one.md": "22"}
	base := Hash(raw, files)
	if Hash(raw, nil) != raw || Hash(raw, map[string]string{}) != raw {
		t.Fatal("a workflow naming no file does not keep its file's hash")
	}
	for path := range files {
		changed := maps.Clone(files)
		changed[path] = "33"
		if Hash(raw, changed) == base {
			t.Errorf("changing %s leaves the hash as it was", path)
		}
		got := FileChanges(files, changed)
		if want := []string{"file " + path + " changed"}; !slices.Equal(got, want) {
			t.Errorf("FileChanges = %q, want %q", got, want)
		}
	}
	if got := FileChanges(nil, files); got != nil {
		t.Errorf("FileChanges from a run that recorded no files = %q, want none", got)
	}
}
