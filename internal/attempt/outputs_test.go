package attempt

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// outputsWorkflow: a chain a → b → c, d beside b (both need a), e needing
// b and d.
const outputsWorkflow = `version: 1
name: outputs
steps:
  - {id: a, run: ["/bin/true"]}
  - {id: b, run: ["/bin/true"], needs: [a]}
  - {id: c, run: ["/bin/true"], needs: [b]}
  - {id: d, run: ["/bin/true"], needs: [a]}
  - {id: e, run: ["/bin/true"], needs: [b, d]}
`

// listDir returns name → content of the files in dir.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// Each step's CADENCE_OUTPUTS_DIR holds exactly the outputs of its
// ancestors, whether it started from the directory of a step it needs
// (renamed to it) or from nothing; what a process changed in the adopted
// directory is rewritten, what it added is removed.
//
// With stamps, every file is old enough to be stamped when it is checked
// and each step's directory is checked twice (as a second attempt does)
// before its process changes it: a change of the same size is still seen.
//
// With watches, each directory is also checked twice, and what the
// process changed is told by the kernel's events.
func TestSyncOutputsAdoptsANeededStepsDir(t *testing.T) {
	for _, mode := range []string{"reading every file", "with stamps", "with watches"} {
		t.Run(mode, func(t *testing.T) {
			var seen *outputStamps
			if mode != "reading every file" {
				seen = &outputStamps{}
				seen.w.off = mode == "with stamps"
				defer seen.close()
			}
			testSyncOutputsAdopts(t, seen)
		})
	}
}

func testSyncOutputsAdopts(t *testing.T, seen *outputStamps) {
	project := t.TempDir()
	stamped := seen != nil
	wf, err := workflow.Parse(project, "w.yaml", []byte(outputsWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	sync := func(in *Instance) error {
		if !stamped {
			return syncOutputs(wf, project, in, nil)
		}
		for range 2 {
			ageTree(t, filepath.Join(project, checkpoint.CadenceDir))
			if err := syncOutputs(wf, project, in, seen); err != nil {
				return err
			}
		}
		return nil
	}
	run := &checkpoint.Run{ID: "r1"}
	outputs := map[string]any{}
	inst := func(id string) *Instance { return &Instance{Run: run, Step: wf.Find(id), Outputs: outputs} }
	dirOf := func(id string) string { return outputsDir(project, inst(id)) }
	out := func(id string) string { return `{"from":"` + id + `"}` + "\n" }
	succeed := func(id string) { outputs[id] = map[string]any{"Output": map[string]any{"from": id}} }

	steps := []struct {
		id   string
		want []string // the files of its directory: its ancestors'
		// tamper, when set, is what step id's process does to its own
		// directory before it ends.
		tamper func(dir string) error
	}{
		{id: "a", want: nil},
		{id: "b", want: []string{"a.json"}, tamper: func(dir string) error {
			// The same size as a's output: only its content differs.
			if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"from":"X"}`+"\n"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "extra.json"), []byte(`{}`), 0o644)
		}},
		{id: "c", want: []string{"a.json", "b.json"}},
		{id: "d", want: []string{"a.json"}},
		{id: "e", want: []string{"a.json", "b.json", "d.json"}},
	}
	for _, st := range steps {
		in := inst(st.id)
		if err := sync(in); err != nil {
			t.Fatalf("step %s: %v", st.id, err)
		}
		got := listDir(t, dirOf(st.id))
		var names []string
		for name, content := range got {
			names = append(names, name)
			if want := out(name[:len(name)-len(".json")]); content != want {
				t.Errorf("step %s: %s holds %q, want %q", st.id, name, content, want)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, st.want) {
			t.Errorf("step %s: its directory holds %v, want %v", st.id, names, st.want)
		}
		if st.tamper != nil {
			if err := st.tamper(dirOf(st.id)); err != nil {
				t.Fatal(err)
			}
		}
		succeed(st.id)
	}
	// b took a's directory (its only need) and c took b's; d, which needs a
	// too, found a's gone and filled its own; e took b's… which c had, so
	// it took d's.
	for _, gone := range []string{"a", "b", "d"} {
		if _, err := os.Lstat(dirOf(gone)); !os.IsNotExist(err) {
			t.Errorf("the directory of %s is still there after a step that needs it started: %v", gone, err)
		}
	}
	// A step whose directory exists keeps it: a second attempt of c
	// checks its own again and takes nothing.
	if err := sync(inst("c")); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dirOf("c")); len(got) != 2 {
		t.Errorf("c's second attempt: %v", got)
	}
}

// A symlink a process left in place of a CADENCE_OUTPUTS_DIR, its own or
// the one of a step that a later step would take, is never followed: the
// files it points at stay, and the step gets a directory of its own.
func TestSyncOutputsNeverFollowsASymlink(t *testing.T) {
	for _, whose := range []string{"its own", "the needed step's"} {
		t.Run(whose, func(t *testing.T) {
			project := t.TempDir()
			wf, err := workflow.Parse(project, "w.yaml", []byte(outputsWorkflow))
			if err != nil {
				t.Fatal(err)
			}
			run := &checkpoint.Run{ID: "r1"}
			outputs := map[string]any{"a": map[string]any{"Output": map[string]any{"from": "a"}}}
			b := &Instance{Run: run, Step: wf.Find("b"), Outputs: outputs}
			victim := t.TempDir()
			if err := os.WriteFile(filepath.Join(victim, "keep.txt"), []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := outputsDir(project, b)
			if whose != "its own" {
				link = outputsDir(project, &Instance{Run: run, Step: wf.Find("a")})
			}
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			if err := syncOutputs(wf, project, b, nil); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(victim, "keep.txt")); err != nil || string(got) != "mine" {
				t.Fatalf("the symlink's target was cleared: %q, %v", got, err)
			}
			if entries, _ := os.ReadDir(victim); len(entries) != 1 {
				t.Errorf("files written into the symlink's target: %v", entries)
			}
			fi, err := os.Lstat(outputsDir(project, b))
			if err != nil || !fi.IsDir() {
				t.Fatalf("b's CADENCE_OUTPUTS_DIR is %v, %v; want a directory", fi, err)
			}
			if got := listDir(t, outputsDir(project, b)); len(got) != 1 || got["a.json"] != `{"from":"a"}`+"\n" {
				t.Errorf("b's directory holds %v, want a.json", got)
			}
		})
	}
}
