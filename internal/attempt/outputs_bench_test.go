package attempt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// BenchmarkSyncOutputsChain prices CADENCE_OUTPUTS_DIR in a chain of n
// command steps, as a run fills it: before step i's attempt, its own
// directory gets the outputs of its i ancestors (inputs/step), and each is
// checked against the file found there. The figure to watch is ms/step at
// each n: flat is linear in the run.
//
// known=read reads every file back at every check, as a resumed run's
// first check does. known=stamps keeps what the run's process learnt of
// its files by their stat (outputStamps) in a chain whose steps take 3 ms
// each, as the process of a short command does: the 3 ms pass between
// the checks, off the timer, since a file is known by its stat only once
// it is stampMargin older than its last read. known=watches knows them by
// inotify (outputWatch), as cadence does on Linux, with the same pause.
func BenchmarkSyncOutputsChain(b *testing.B) {
	for _, known := range []string{"read", "stamps", "watches"} {
		for _, n := range []int{100, 400, 1000} {
			b.Run(fmt.Sprintf("known=%s/steps=%d", known, n), func(b *testing.B) {
				benchSyncOutputsChain(b, n, known)
			})
		}
	}
}

func benchSyncOutputsChain(b *testing.B, n int, known string) {
	stamped := known != "read"
	wf, err := workflow.Parse(b.TempDir(), "chain.yaml", chainSource(n))
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	files := 0
	for b.Loop() {
		dir := b.TempDir()
		outputs := map[string]any{}
		var seen *outputStamps
		if stamped {
			seen = &outputStamps{}
			seen.w.off = known == "stamps"
		}
		for i := range n {
			ws := wf.Find(fmt.Sprintf("s%d", i))
			in := &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: ws, Outputs: outputs}
			start := time.Now()
			if err := syncOutputs(wf, dir, in, seen); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			files += i
			outputs[ws.ID] = map[string]any{"Output": map[string]any{"exit_code": 0, "stdout": ""}}
			if stamped {
				time.Sleep(3 * time.Millisecond) // the step's process
			}
		}
		if seen != nil {
			seen.close()
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N)/float64(n), "ms/step")
	b.ReportMetric(float64(files)/float64(b.N)/float64(n), "inputs/step")
}

// BenchmarkSyncOutputsFirstCheck is the first check of a resumed run's
// first step, whose directory holds the outputs of the 999 steps before it
// and which this process knows nothing of: each file is watched and read
// back.
func BenchmarkSyncOutputsFirstCheck(b *testing.B) {
	const n = 1000
	project := b.TempDir()
	wf, err := workflow.Parse(project, "chain.yaml", chainSource(n))
	if err != nil {
		b.Fatal(err)
	}
	outputs := map[string]any{}
	for i := range n - 1 {
		outputs[fmt.Sprintf("s%d", i)] = map[string]any{"Output": map[string]any{"exit_code": 0, "stdout": ""}}
	}
	in := &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: wf.Find(fmt.Sprintf("s%d", n-1)), Outputs: outputs}
	if err := syncOutputs(wf, project, in, nil); err != nil { // the files, as a killed process left them
		b.Fatal(err)
	}
	for b.Loop() {
		seen := &outputStamps{}
		if err := syncOutputs(wf, project, in, seen); err != nil {
			b.Fatal(err)
		}
		seen.close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/check")
}

// chainSource is a workflow of n command steps s0…s(n-1), each needing the
// one before it.
func chainSource(n int) []byte {
	var sb strings.Builder
	sb.WriteString("version: 1\nname: chain\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&sb, "  - id: s%d\n    run: [\"/bin/true\"]\n", i)
		if i > 0 {
			fmt.Fprintf(&sb, "    needs: [s%d]\n", i-1)
		}
	}
	return []byte(sb.String())
}
