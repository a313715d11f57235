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
// directory gets the outputs of its i ancestors. The cost per step grows
// with n, since each step's directory is checked file by file against
// the outputs of all its ancestors (inputs/step): the figure to watch is
// ms/step at each n.
func BenchmarkSyncOutputsChain(b *testing.B) {
	for _, n := range []int{100, 200, 400} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("version: 1\nname: chain\nsteps:\n")
			for i := range n {
				fmt.Fprintf(&sb, "  - id: s%d\n    run: [\"/bin/true\"]\n", i)
				if i > 0 {
					fmt.Fprintf(&sb, "    needs: [s%d]\n", i-1)
				}
			}
			wf, err := workflow.Parse(b.TempDir(), "chain.yaml", []byte(sb.String()))
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			files := 0
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				outputs := map[string]any{}
				b.StartTimer()
				start := time.Now()
				for i := range n {
					ws := wf.Find(fmt.Sprintf("s%d", i))
					in := &Instance{Run: &checkpoint.Run{ID: "r1"}, Step: ws, Outputs: outputs}
					if err := syncOutputs(wf, dir, in); err != nil {
						b.Fatal(err)
					}
					files += i
					outputs[ws.ID] = map[string]any{"Output": map[string]any{"exit_code": 0, "stdout": ""}}
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N)/float64(n), "ms/step")
			b.ReportMetric(float64(files)/float64(b.N)/float64(n), "inputs/step")
		})
	}
}
