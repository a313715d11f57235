package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// loopBenchIterations is the size of the loop the benchmarks run.
const loopBenchIterations = 1000

// writeLoopWorkflow writes a workflow of one loop of n iterations whose
// inner step is the command `true` (until false, on_exhausted continue:
// every iteration runs).
func writeLoopWorkflow(b *testing.B, dir string, n int) {
	b.Helper()
	wf := fmt.Sprintf(`version: 1
agents: {none: {preset: exec, command: ["true"]}}
defaults: {agent: none, retry: {max_attempts: 1}}
steps:
  - id: loop
    loop:
      max_iterations: %d
      until: "false"
      on_exhausted: continue
      steps:
        - {id: t, run: ["true"]}
`, n)
	if err := os.MkdirAll(filepath.Join(dir, orchestrator.CadenceDir), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, orchestrator.CadenceDir, "workflow.yaml"), []byte(wf), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLoopIterations runs a loop of 1,000 iterations of the command
// `true` and, in the same iteration of the benchmark, the same 1,000
// commands as a chain of 1,000 steps: what an iteration costs beyond a
// step is the difference (SPEC 16.5: an iteration commits its own row and
// its inner steps' rows, and its until decision).
func BenchmarkLoopIterations(b *testing.B) {
	ctx := context.Background()
	var loop, chain time.Duration
	for b.Loop() {
		b.StopTimer()
		loopDir, chainDir := b.TempDir(), b.TempDir()
		writeLoopWorkflow(b, loopDir, loopBenchIterations)
		writeGraphWorkflow(b, chainDir, loopBenchIterations, false)
		b.StartTimer()
		loop += benchRun(ctx, b, loopDir)
		chain += benchRun(ctx, b, chainDir)
	}
	n := float64(b.N * loopBenchIterations)
	b.ReportMetric(msOf(loop)/n, "ms/iteration")
	b.ReportMetric(msOf(chain)/n, "ms/step")
	b.ReportMetric((msOf(loop)-msOf(chain))/n, "overhead-ms/iteration")
}

// stopAtIteration is a Sink that stops the run (cancels its context) once
// the loop's iteration at has started: the state of a run stopped inside
// a long loop.
type stopAtIteration struct {
	at     int
	cancel context.CancelFunc
}

func (s *stopAtIteration) Emit(ev history.Event) {
	if ev.Type == history.EventIterationStarted && ev.Attempt == s.at {
		s.cancel()
	}
}

func (s *stopAtIteration) Tick(string, string, time.Duration) {}

// BenchmarkLoopResumeFirstAction measures `cadence resume` of a run stopped
// in iteration 900 of a loop of 1,000 `true` commands, from its call to
// the start of the first process (iteration 900's inner step): 899
// iterations and their rows are history it must not read one by one
// (target < 100 ms).
func BenchmarkLoopResumeFirstAction(b *testing.B) {
	template := b.TempDir()
	writeLoopWorkflow(b, template, loopBenchIterations)
	ctx, cancel := context.WithCancel(context.Background())
	res, err := orchestrator.Run(ctx, orchestrator.Options{Dir: template, Sink: &stopAtIteration{at: 900, cancel: cancel}})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != orchestrator.StatusInterrupted {
		b.Fatalf("the run to stop at iteration 900 ended %v: %s", res.Status, res.Message)
	}
	if !strings.Contains(res.Message, "interrupted") {
		b.Fatalf("the run stopped: %s", res.Message)
	}
	total := resumeToFirstAction(b, template, nil)
	b.ReportMetric(msOf(total)/float64(b.N), "ms/first-action")
}
