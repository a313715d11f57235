package workflow

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A map step's keys are read as written, with the defaults of SPEC §12 for
// those left out, and the source step of its items counts as needed.
func TestLoadMap(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"sim.yaml": "steps: []\n",
		".cadence/workflow.yaml": `version: 1
defaults: {agent: sim}
agents:
  sim: {preset: sim, scenario: sim.yaml}
steps:
  - id: plan
    prompt: Plan.
  - id: fix
    prompt: "Fix {{ .Item.title }} ({{ .Item.Key }})"
    map:
      items: {step: plan, pointer: /tasks}
      key: /id
      max_parallel: 4
      max_failures: 2
      workspace: worktree
      merge: true
  - id: each
    prompt: "Each {{ .Item }}"
    map:
      items: {file: ./work/../work/items.jsonl}
`,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	fix, each := w.Steps[1], w.Steps[2]
	want := &Map{ItemsStep: "plan", ItemsPointer: "/tasks", Key: "/id", MaxParallel: 4, MaxFailures: 2,
		Workspace: WorkspaceWorktree, Merge: true}
	if !reflect.DeepEqual(fix.Map, want) {
		t.Errorf("fix.Map = %+v, want %+v", fix.Map, want)
	}
	if !reflect.DeepEqual(fix.Reads, []string{"plan"}) {
		t.Errorf("fix.Reads = %v, want [plan]", fix.Reads)
	}
	wantEach := &Map{ItemsFile: "work/items.jsonl", MaxParallel: 1, Workspace: WorkspaceShared}
	if !reflect.DeepEqual(each.Map, wantEach) {
		t.Errorf("each.Map = %+v, want %+v", each.Map, wantEach)
	}
	if w.Steps[0].Map != nil {
		t.Errorf("plan.Map = %+v, want nil", w.Steps[0].Map)
	}
}

// A changed max_parallel is a change a resume reports.
func TestChangesSeeMap(t *testing.T) {
	old := []byte(`version: 1
agents: {sim: {preset: sim, scenario: s.yaml}}
steps:
  - {id: fix, agent: sim, prompt: x, map: {items: {file: i.json}, max_parallel: 2}}
`)
	changed := []byte(strings.Replace(string(old), "max_parallel: 2", "max_parallel: 8", 1))
	got := Changes(old, changed)
	if len(got) != 1 || !strings.Contains(got[0], "map.max_parallel") || !strings.Contains(got[0], "2") || !strings.Contains(got[0], "8") {
		t.Errorf("Changes = %q, want one change of map.max_parallel from 2 to 8", got)
	}
}
