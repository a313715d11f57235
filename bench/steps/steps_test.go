package steps

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/cadence-dev/cadence/internal/workflow"
)

// TestChainWorkflow checks that the chain the benchmarks run is what
// cadence loads: n command steps, each needing the one before it, each
// running its command.
func TestChainWorkflow(t *testing.T) {
	for _, n := range []int{1, 2, 50} {
		dir := project(t, chainWorkflow(n, stampCmd(n-1)), 0)
		w, err := workflow.Load(dir, "")
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(w.Steps) != n {
			t.Fatalf("n=%d: %d steps", n, len(w.Steps))
		}
		for i, s := range w.Steps {
			var needs []string
			if i > 0 {
				needs = []string{"s" + strconv.Itoa(i-1)}
			}
			want := []string{"/bin/true"}
			if i == n-1 {
				want = []string{"/bin/date", "+%s%N"}
			}
			if s.ID != "s"+strconv.Itoa(i) || !slices.Equal(s.Needs, needs) || s.Run == nil || !slices.Equal(s.Run.Argv, want) {
				t.Errorf("n=%d: step %d is %s needing %v running %v, want s%d needing %v running %v",
					n, i, s.ID, s.Needs, s.Run, i, needs, want)
			}
		}
	}
}

// TestMapWorkflow checks the map the benchmarks run: one command step
// over items.json, 4 at once.
func TestMapWorkflow(t *testing.T) {
	dir := project(t, mapWorkflow(4), 10)
	w, err := workflow.Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Steps) != 1 || w.Steps[0].Map == nil || w.Steps[0].Run == nil {
		t.Fatalf("want one command map step, got %+v", w.Steps)
	}
	if m := w.Steps[0].Map; m.MaxParallel != 4 || m.ItemsFile != "items.json" {
		t.Errorf("map: %d at once over %q, want 4 over items.json", m.MaxParallel, m.ItemsFile)
	}
}

// TestSyncsByFile reads the fsync and fdatasync calls of an strace -y
// trace (lines from a real cadence run), a call interrupted by another
// thread's counted once.
func TestSyncsByFile(t *testing.T) {
	got, err := syncsByFile(filepath.Join("testdata", "strace-y.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"/p/.cadence/lock":                            1,
		"/p/.cadence/state.db-wal":                    3,
		"/p/.cadence/state.db":                        1,
		"/p/.cadence/state.db-journal":                1,
		"/p/.cadence":                                 1,
		"/p/.cadence/handoffs/20261127-122959-3475de": 1,
		"/p/.cadence/handoffs/20261127-122959-3475de/.s0.json.tmp-3727704274": 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if _, err := syncsByFile(filepath.Join("testdata", "missing.txt")); err == nil {
		t.Error("a missing trace: no error")
	}
}

// TestFileKind sorts fsynced files by what they are to cadence.
func TestFileKind(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "state.db-wal"), "wal"},
		{filepath.Join(dir, "state.db"), "db"},
		{filepath.Join(dir, "state.db-journal"), "db"},
		{dir, "dir"},
		{filepath.Join(dir, ".s0.json.tmp-1"), "file"}, // renamed away: gone
		{filepath.Join(dir, "lock"), "file"},
	} {
		if got := fileKind(tt.path); got != tt.want {
			t.Errorf("fileKind(%s) = %s, want %s", tt.path, got, tt.want)
		}
	}
}
