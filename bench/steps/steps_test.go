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

// TestSyscallCounts reads strace -c summaries: one of a real cadence run,
// and one with both calls and an errors column.
func TestSyscallCounts(t *testing.T) {
	for _, tt := range []struct {
		file string
		want map[string]int
	}{
		{"strace-fsync.txt", map[string]int{"fsync": 89}},
		{"strace-both.txt", map[string]int{"fsync": 2012, "fdatasync": 1003}},
	} {
		got, err := syscallCounts(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.file, got, tt.want)
		}
	}
	if _, err := syscallCounts(filepath.Join("testdata", "missing.txt")); err == nil {
		t.Error("a missing summary: no error")
	}
}
