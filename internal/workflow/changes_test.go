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

const graphBase = `version: 1
defaults: {agent: claude}
agents:
  claude: {preset: claude}
inputs:
  issue: {type: string}
steps:
  - id: plan
    prompt: Plan.
  - id: build
    needs: [plan]
    run: [make, build]
  - id: implement
    needs: [plan]
    when: "steps.plan.status == 'succeeded'"
    loop:
      max_iterations: 3
      until: steps.review.output.ok
      steps:
        - {id: code, prompt: Code.}
        - {id: review, prompt: Review.}
  - id: gate
    needs: [build, implement]
    approval: {prompt: Merge?}
`

// TestGraphChanges: a change to the graph (needs, when, run, a loop and
// its inner steps, a gate, the inputs) is listed by Changes and by
// GraphChanges, which resume --allow-changed refuses; other changes are in
// Changes only.
func TestGraphChanges(t *testing.T) {
	g := func(pairs ...string) string { return strings.NewReplacer(pairs...).Replace(graphBase) }
	tests := []struct {
		name  string
		new   string
		want  []string // Changes
		graph []string // GraphChanges
	}{
		{"identical", graphBase, nil, nil},
		{"spelled-out defaults", g("approval: {prompt: Merge?}", "approval: {prompt: Merge?, on_reject: fail}", "max_iterations: 3", "max_iterations: 3\n      session: continue"), nil, nil},
		{"needs", g("needs: [build, implement]", "needs: [implement]"),
			[]string{"step gate: needs [build implement] → [implement]"}, []string{"step gate: needs [build implement] → [implement]"}},
		{"when", g("'succeeded'", "'failed'"),
			[]string{"step implement: when changed"}, []string{"step implement: when changed"}},
		{"run", g("[make, build]", "[make, all]"),
			[]string{"step build: run changed"}, []string{"step build: run changed"}},
		// An edited until or max_iterations takes the loop's next decision:
		// a setting, not a change of the graph.
		{"loop", g("max_iterations: 3", "max_iterations: 4", "ok\n", "ok == true\n"),
			[]string{"step implement: loop.until changed", "step implement: loop.max_iterations 3 → 4"}, nil},
		{"loop.session", g("max_iterations: 3", "max_iterations: 3\n      session: fresh"),
			[]string{"step implement: loop.session continue → fresh"}, []string{"step implement: loop.session continue → fresh"}},
		{"inner step added", g("        - {id: review, prompt: Review.}\n", "        - {id: review, prompt: Review.}\n        - {id: fix, prompt: Fix.}\n"),
			[]string{"step fix added (inside loop implement)"}, []string{"step fix added (inside loop implement)"}},
		{"inner step removed", g("        - {id: review, prompt: Review.}\n", "", "until: steps.review.output.ok", "until: steps.code.output.ok"),
			[]string{"step review removed (inside loop implement)", "step implement: loop.until changed"},
			[]string{"step review removed (inside loop implement)"}},
		{"inner steps reordered", g("        - {id: code, prompt: Code.}\n        - {id: review, prompt: Review.}\n", "        - {id: review, prompt: Review.}\n        - {id: code, prompt: Code.}\n"),
			[]string{"steps of loop implement reordered: code, review → review, code"}, []string{"steps of loop implement reordered: code, review → review, code"}},
		{"top step added at the end", graphBase + "  - {id: docs, prompt: Docs.}\n", []string{"step docs added"}, nil},
		{"inner prompt", g("prompt: Code.", "prompt: Code well."), []string{"step code: prompt changed"}, nil},
		{"approval", g("approval: {prompt: Merge?}", "approval: {prompt: Merge?, timeout: 1h}"),
			[]string{"step gate: approval.timeout 0s → 1h0m0s"}, []string{"step gate: approval.timeout 0s → 1h0m0s"}},
		{"kind", g("run: [make, build]", "prompt: Build."),
			[]string{"step build: kind command → agent", "step build: run changed", "step build: start_timeout 0s → 2m0s", "step build: agent (none) → claude",
				"step build: prompt changed", "step build: timeout 30m0s → 1h0m0s", "step build: idle_timeout 0s → 15m0s", "step build: exit_grace 0s → 5s"},
			[]string{"step build: kind command → agent", "step build: run changed"}},
		{"inputs", g("issue: {type: string}", "issue: {type: string, default: x}"), []string{"inputs changed"}, []string{"inputs changed"}},
		{"allow_failure and parallelism apply", g("approval: {prompt: Merge?}", "approval: {prompt: Merge?}\n    allow_failure: true", "steps:\n  - id: plan", "max_parallel_steps: 2\nsteps:\n  - id: plan"),
			[]string{"max_parallel_steps 4 → 2", "step gate: allow_failure false → true"}, nil},
		{"agent keys", g("claude: {preset: claude}", "claude: {preset: claude, max_concurrent: 2, fallback: [other]}\n  other: {preset: codex}"),
			[]string{"agent claude: max_concurrent 0 → 2", "agent claude: fallback [] → [\"other\"]", "agent other added"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "identical" && tt.new == graphBase {
				t.Fatal("the edit did not apply")
			}
			if got := Changes([]byte(graphBase), []byte(tt.new)); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if got := GraphChanges([]byte(graphBase), []byte(tt.new)); strings.Join(got, "\n") != strings.Join(tt.graph, "\n") {
				t.Errorf("GraphChanges:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.graph, "\n"))
			}
		})
	}
}
