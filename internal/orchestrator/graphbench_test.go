package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// writeGraphWorkflow writes a workflow of n command steps `run: [true]`:
// a chain (each needs the one before, as a workflow written for the
// sequential runner), or a fan-out and fan-in (one first step, n-2 steps
// that need only it, one last step that needs them all).
func writeGraphWorkflow(b *testing.B, dir string, n int, fan bool) {
	b.Helper()
	var w strings.Builder
	w.WriteString("version: 1\nagents: {none: {preset: exec, command: [\"true\"]}}\ndefaults: {agent: none, retry: {max_attempts: 1}}\nsteps:\n")
	ids := benchStepIDs(n)
	for i, id := range ids {
		switch {
		case !fan || i == 0:
			fmt.Fprintf(&w, "  - {id: %s, run: [\"true\"]}\n", id)
		case i < n-1:
			fmt.Fprintf(&w, "  - {id: %s, needs: [%s], run: [\"true\"]}\n", id, ids[0])
		default:
			fmt.Fprintf(&w, "  - {id: %s, needs: [%s], run: [\"true\"]}\n", id, strings.Join(ids[1:n-1], ", "))
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, orchestrator.CadenceDir), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, orchestrator.CadenceDir, "workflow.yaml"), []byte(w.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGraphScheduling runs 1,000 command steps `run: [true]` as a
// chain (the sequential runner's order) and as a fan-out and fan-in
// (max_parallel_steps 4), and in the same iteration starts `true` 1,000
// times with os/exec: what cadence adds per step instance beyond its
// process is the difference (SPEC 16.3; target ≤ 2 ms).
func BenchmarkGraphScheduling(b *testing.B) {
	const steps = 1000
	ctx := context.Background()
	for _, shape := range []struct {
		name string
		fan  bool
	}{{"chain", false}, {"fan-out-fan-in", true}} {
		b.Run(shape.name, func(b *testing.B) {
			var cadence, spawn time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				writeGraphWorkflow(b, dir, steps, shape.fan)
				b.StartTimer()
				cadence += benchRun(ctx, b, dir)
				start := time.Now()
				for range steps {
					if err := exec.CommandContext(ctx, "true").Run(); err != nil {
						b.Fatal(err)
					}
				}
				spawn += time.Since(start)
			}
			n := float64(b.N * steps)
			b.ReportMetric(msOf(cadence)/n, "ms/step")
			b.ReportMetric(msOf(spawn)/n, "spawn-ms/step")
			b.ReportMetric((msOf(cadence)-msOf(spawn))/n, "overhead-ms/step")
		})
	}
}
