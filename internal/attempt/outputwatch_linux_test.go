package attempt

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// watchFixture is step c of outputsWorkflow (a → b → c) with a and b
// succeeded: its CADENCE_OUTPUTS_DIR holds a.json and b.json.
type watchFixture struct {
	wf      *workflow.Workflow
	project string
	in      *Instance
	seen    *outputStamps
}

func newWatchFixture(t *testing.T) *watchFixture {
	t.Helper()
	project := t.TempDir()
	wf, err := workflow.Parse(project, "w.yaml", []byte(outputsWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]any{
		"a": map[string]any{"Output": map[string]any{"from": "a"}},
		"b": map[string]any{"Output": map[string]any{"from": "b"}},
	}
	seen := &outputStamps{}
	t.Cleanup(seen.close)
	return &watchFixture{wf: wf, project: project, seen: seen,
		in: &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: wf.Find("c"), Outputs: outputs}}
}

func (f *watchFixture) dir() string { return outputsDir(f.project, f.in) }

func (f *watchFixture) sync(t *testing.T) {
	t.Helper()
	if err := syncOutputs(f.wf, f.project, f.in, f.seen); err != nil {
		t.Fatal(err)
	}
}

// known reports whether the watches say the directory is as c wants it,
// with nothing to read.
func (f *watchFixture) known(t *testing.T) bool {
	t.Helper()
	want := map[string]*encoded{}
	for _, id := range []string{"a", "b"} {
		e, err := f.seen.content(id, f.in.Outputs[id].(map[string]any))
		if err != nil {
			t.Fatal(err)
		}
		want[id] = e
	}
	w := f.seen.watch()
	if w == nil {
		t.Fatal("no inotify watches on this machine")
	}
	defer f.seen.unwatch()
	return w.fresh(f.dir(), want) != nil && len(want) == 0
}

// holdsExactly fails unless the directory holds a.json and b.json with
// their outputs and nothing else.
func (f *watchFixture) holdsExactly(t *testing.T) {
	t.Helper()
	got := listDir(t, f.dir())
	want := map[string]string{"a.json": `{"from":"a"}` + "\n", "b.json": `{"from":"b"}` + "\n"}
	if !maps.Equal(got, want) {
		t.Errorf("the directory holds %q, want %q", got, want)
	}
}

// Whatever a process does to a checked CADENCE_OUTPUTS_DIR, by any path,
// the watches say it is no longer known, and the next check finds and
// mends it; a directory nothing touched is known without a read.
func TestOutputWatchSeesEveryChange(t *testing.T) {
	other := []byte(`{"from":"X"}` + "\n") // the size of a's output
	write := func(t *testing.T, path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		// before runs before the first check; change after it.
		before, change func(t *testing.T, dir, outside string)
		known          bool
	}{
		{name: "untouched", change: func(*testing.T, string, string) {}, known: true},
		{name: "read", change: func(t *testing.T, dir, _ string) {
			_, err := os.ReadFile(filepath.Join(dir, "a.json"))
			must(t, err)
		}, known: true},
		{name: "rewritten in place, same size", change: func(t *testing.T, dir, _ string) { write(t, filepath.Join(dir, "a.json"), other) }},
		{name: "rewritten with the same bytes", change: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "a.json"), []byte(`{"from":"a"}`+"\n"))
		}},
		{name: "truncated", change: func(t *testing.T, dir, _ string) { must(t, os.Truncate(filepath.Join(dir, "b.json"), 0)) }},
		{name: "mode changed", change: func(t *testing.T, dir, _ string) { must(t, os.Chmod(filepath.Join(dir, "a.json"), 0o600)) }},
		{name: "times set back", change: func(t *testing.T, dir, _ string) {
			old := time.Now().Add(-time.Hour)
			must(t, os.Chtimes(filepath.Join(dir, "a.json"), old, old))
		}},
		{name: "replaced by a rename", change: func(t *testing.T, dir, _ string) {
			write(t, filepath.Join(dir, "x"), other)
			must(t, os.Rename(filepath.Join(dir, "x"), filepath.Join(dir, "a.json")))
		}},
		{name: "removed", change: func(t *testing.T, dir, _ string) { must(t, os.Remove(filepath.Join(dir, "b.json"))) }},
		{name: "a file added", change: func(t *testing.T, dir, _ string) { write(t, filepath.Join(dir, "z.json"), []byte("{}\n")) }},
		{name: "a symlink in place of a file", change: func(t *testing.T, dir, outside string) {
			write(t, filepath.Join(outside, "fake"), other)
			must(t, os.Remove(filepath.Join(dir, "a.json")))
			must(t, os.Symlink(filepath.Join(outside, "fake"), filepath.Join(dir, "a.json")))
		}},
		{name: "a hard link made elsewhere", change: func(t *testing.T, dir, outside string) {
			must(t, os.Link(filepath.Join(dir, "a.json"), filepath.Join(outside, "a")))
		}},
		{name: "written through a hard link made before the check",
			before: func(t *testing.T, dir, outside string) {
				must(t, os.Link(filepath.Join(dir, "a.json"), filepath.Join(outside, "a")))
			},
			change: func(t *testing.T, _, outside string) {
				f, err := os.OpenFile(filepath.Join(outside, "a"), os.O_WRONLY, 0)
				must(t, err)
				_, err = f.WriteAt([]byte("X"), 10)
				must(t, err)
				must(t, f.Close())
			}},
		{name: "written through a shared mapping", change: func(t *testing.T, dir, _ string) {
			f, err := os.OpenFile(filepath.Join(dir, "b.json"), os.O_RDWR, 0)
			must(t, err)
			m, err := syscall.Mmap(int(f.Fd()), 0, 4, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
			must(t, err)
			must(t, f.Close()) // the mapping outlives the descriptor
			copy(m, "{\"X\"")
			must(t, syscall.Munmap(m))
		}},
		{name: "the directory replaced by a copy", change: func(t *testing.T, dir, outside string) {
			must(t, os.Rename(dir, filepath.Join(outside, "moved")))
			must(t, os.Mkdir(dir, 0o755))
			for _, id := range []string{"a", "b"} {
				write(t, filepath.Join(dir, id+".json"), []byte(`{"from":"`+id+`"}`+"\n"))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newWatchFixture(t)
			outside := t.TempDir()
			if c.before != nil {
				f.sync(t) // with the files in place, then the link, then the check
				c.before(t, f.dir(), outside)
				f.seen.close()
				f.seen = &outputStamps{}
			}
			f.sync(t)
			f.holdsExactly(t)
			if !f.known(t) {
				t.Fatal("the directory just checked is not known")
			}
			c.change(t, f.dir(), outside)
			if got := f.known(t); got != c.known {
				t.Errorf("after the change the directory is known: %v, want %v", got, c.known)
			}
			f.sync(t)
			f.holdsExactly(t)
			if !f.known(t) {
				t.Error("the directory checked again is not known")
			}
		})
	}
}

// In a chain, each step's directory is the one of the step before it,
// renamed: after the first check, none reads or lists a file again, and
// each holds exactly its ancestors' outputs.
func TestOutputWatchKnowsAChainWithoutReading(t *testing.T) {
	f := newWatchFixture(t)
	const n = 30
	wf, err := workflow.Parse(f.project, "chain.yaml", chainSource(n))
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]any{}
	for i := range n {
		in := &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: wf.Find("s" + strconv.Itoa(i)), Outputs: outputs}
		dir := outputsDir(f.project, in)
		if i > 1 {
			// Known before the check: the previous step's directory,
			// which this one takes, is, and only the output of the step
			// before is missing.
			w := f.seen.watch()
			prev := outputsDir(f.project, &Instance{Run: in.Run, Step: wf.Find("s" + strconv.Itoa(i-1))})
			want := map[string]*encoded{}
			for j := range i - 1 {
				e, err := f.seen.content("s"+strconv.Itoa(j), outputs["s"+strconv.Itoa(j)].(map[string]any))
				if err != nil {
					t.Fatal(err)
				}
				want["s"+strconv.Itoa(j)] = e
			}
			if w.fresh(prev, want) == nil || len(want) != 0 {
				t.Errorf("step %d: the directory of step %d is not known", i, i-1)
			}
			f.seen.unwatch()
		}
		if err := syncOutputs(wf, f.project, in, f.seen); err != nil {
			t.Fatal(err)
		}
		names := slices.Collect(maps.Keys(listDir(t, dir)))
		if len(names) != i {
			t.Fatalf("step %d: its directory holds %v", i, names)
		}
		outputs["s"+strconv.Itoa(i)] = map[string]any{"Output": map[string]any{"exit_code": 0, "stdout": ""}}
	}
}

// TestOutputWatchFirstCheckOfManyFiles: the first check of a directory of
// many files (a resumed run's first step) leaves each wanted file right, a
// regular file and watched; wrong, linked, missing and unwanted files are
// mended or removed.
func TestOutputWatchFirstCheckOfManyFiles(t *testing.T) {
	const n = 200
	project := t.TempDir()
	wf, err := workflow.Parse(project, "chain.yaml", chainSource(n))
	if err != nil {
		t.Fatal(err)
	}
	seen := &outputStamps{}
	defer seen.close()
	outputs := map[string]any{}
	for i := range n - 1 {
		outputs["s"+strconv.Itoa(i)] = map[string]any{"Output": map[string]any{"n": i}}
	}
	in := &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: wf.Find("s" + strconv.Itoa(n-1)), Outputs: outputs}
	dir := outputsDir(project, in)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	wantFiles := map[string]string{}
	for i := range n - 1 {
		id := "s" + strconv.Itoa(i)
		right := `{"n":` + strconv.Itoa(i) + "}\n"
		wantFiles[id+".json"] = right
		path := filepath.Join(dir, id+".json")
		switch {
		case i%13 == 0: // missing
		case i%11 == 0: // a link to a file holding the right content
			target := filepath.Join(elsewhere, id)
			if err := os.WriteFile(target, []byte(right), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		case i%7 == 0: // wrong, of the same length
			if err := os.WriteFile(path, []byte(right[:len(right)-2]+"9\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(path, []byte(right), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, junk := range []string{"junk.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, junk), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syncOutputs(wf, project, in, seen); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !maps.Equal(got, wantFiles) {
		t.Fatalf("the directory holds %d files, want %d; differing: %v", len(got), len(wantFiles), differing(got, wantFiles))
	}
	for name := range wantFiles {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s is not a regular file: %v", name, err)
		}
	}
	known := func() bool {
		want := map[string]*encoded{}
		for i := range n - 1 {
			id := "s" + strconv.Itoa(i)
			e, err := seen.content(id, outputs[id].(map[string]any))
			if err != nil {
				t.Fatal(err)
			}
			want[id] = e
		}
		w := seen.watch()
		defer seen.unwatch()
		return w.fresh(dir, want) != nil && len(want) == 0
	}
	if !known() {
		t.Fatal("after the check the directory is not known by its watches")
	}
	// A file checked is watched: a write through a hard link made
	// elsewhere is seen.
	for _, i := range []int{1, n / 2, n - 2} {
		link := filepath.Join(elsewhere, "link"+strconv.Itoa(i))
		if err := os.Link(filepath.Join(dir, "s"+strconv.Itoa(i)+".json"), link); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(link, []byte(`{"n":-1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if known() {
			t.Fatalf("a write to s%d through a hard link was not seen", i)
		}
		if err := syncOutputs(wf, project, in, seen); err != nil {
			t.Fatal(err)
		}
		if !known() {
			t.Fatalf("after mending s%d the directory is not known", i)
		}
	}
	if got := listDir(t, dir); !maps.Equal(got, wantFiles) {
		t.Fatalf("after the writes through links: differing %v", differing(got, wantFiles))
	}
}

// differing lists the names whose content differs between a and b.
func differing(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
