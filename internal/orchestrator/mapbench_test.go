package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// benchItems is the size of the map benchmarks: SPEC §12's 10,000 items,
// or CADENCE_BENCH_ITEMS for a quick profile.
var benchItems = func() int {
	if n, err := strconv.Atoi(os.Getenv("CADENCE_BENCH_ITEMS")); err == nil && n > 1 {
		return n
	}
	return 10000
}()

// writeMapWorkflow writes a workflow of one map step over DIR/items.json
// (n items keyed by their index) whose exec agent is `echo {}`.
func writeMapWorkflow(b testing.TB, dir, echo string, n, parallel int) {
	b.Helper()
	wf := fmt.Sprintf(`version: 1
name: mapbench
agents:
  echo:
    preset: exec
    command: [%q, "{}"]
    output: text
steps:
  - id: each
    agent: echo
    prompt: 'do {{ .Item.Key }}'
    retry: {max_attempts: 3, backoff: fixed, initial: 1s, jitter: none}
    map: {items: {file: items.json}, max_parallel: %d}
`, echo, parallel)
	cdir := filepath.Join(dir, orchestrator.CadenceDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "workflow.yaml"), []byte(wf), 0o644); err != nil {
		b.Fatal(err)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n": %d}`, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.json"), []byte("["+strings.Join(items, ",")+"]"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMapItems runs a map step of 10,000 items whose agent is
// `echo {}`, at max_parallel 1 and 8, and in the same iteration a plain
// os/exec loop starting the same process 10,000 times one after the other.
// overhead-ms/item is what cadence adds per item over that loop at
// max_parallel 1; wall-ms is the whole map, to set 8 against 1.
func BenchmarkMapItems(b *testing.B) {
	echo := benchEcho(b)
	ctx := context.Background()
	for _, parallel := range []int{1, 8} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			var cadence, spawn time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				writeMapWorkflow(b, dir, echo, benchItems, parallel)
				b.StartTimer()
				cadence += benchRun(ctx, b, dir)

				start := time.Now()
				for i := range benchItems {
					cmd := exec.CommandContext(ctx, echo, "{}")
					cmd.Stdin = strings.NewReader(fmt.Sprintf("do %d", i))
					if out, err := cmd.Output(); err != nil || string(out) != "{}\n" {
						b.Fatalf("echo: %q, %v", out, err)
					}
				}
				spawn += time.Since(start)
			}
			perItem := msOf(cadence) / float64(b.N*benchItems)
			perSpawn := msOf(spawn) / float64(b.N*benchItems)
			b.ReportMetric(perItem, "ms/item")
			b.ReportMetric(perSpawn, "spawn-ms/item")
			b.ReportMetric(perItem-perSpawn, "overhead-ms/item")
			b.ReportMetric(msOf(cadence)/float64(b.N), "wall-ms")
		})
	}
}

// fillMapProject writes a map workflow of n items and a state.db holding an
// interrupted run in which every item but the last succeeded (one attempt
// each, envelope stored) and the last is pending, through the checkpoint
// API in large transactions.
func fillMapProject(b testing.TB, dir, echo string, n int) {
	b.Helper()
	writeMapWorkflow(b, dir, echo, n, 8)
	wf, err := workflow.Load(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, filepath.Join(dir, orchestrator.CadenceDir, "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	t0 := time.Now().UTC().Add(-time.Hour)
	const runID = "20260101-000000-mapb00"
	run := checkpoint.NewRun(checkpoint.Run{ID: runID, WorkflowPath: ".cadence/workflow.yaml",
		WorkflowSHA256: wf.SHA256, WorkflowYAML: wf.Raw}, t0)
	step := checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: "each", Agent: "echo", MaxAttempts: 3, CostKnown: true}, t0)
	if err := store.Update(ctx, func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
			return err
		}
		if err := tx.StepRunning(&step, t0); err != nil {
			return err
		}
		items := make([]checkpoint.Step, n)
		for i := range items {
			items[i] = checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: "each", ItemKey: fmt.Sprint(i), ItemIdx: i + 1,
				ItemJSON: []byte(fmt.Sprintf(`{"n":%d}`, i)), Agent: "echo", MaxAttempts: 3, CostKnown: true}, t0)
		}
		return tx.InsertItems(items)
	}); err != nil {
		b.Fatal(err)
	}
	at := t0
	const batch = 2000
	for lo := 0; lo < n-1; lo += batch {
		hi := min(n-1, lo+batch)
		err := store.Update(ctx, func(tx *checkpoint.Tx) error {
			for i := lo; i < hi; i++ {
				u := checkpoint.Unit{RunID: runID, StepID: "each", Item: fmt.Sprint(i)}
				start, end := at, at.Add(10*time.Millisecond)
				at = end
				a := checkpoint.Attempt{RunID: runID, StepID: "each", ItemKey: u.Item, N: 1, Kind: checkpoint.KindInitial,
					Prompt: benchPrompt, StartedAt: start, FinishedAt: &end,
					SessionID: "session-" + u.Item, OutputFile: fmt.Sprintf(".cadence/attempts/%s/each/%s/1.out", runID, u.Item),
					Repairs: []string{}}
				if err := tx.StartAttempt(&a); err != nil {
					return err
				}
				if err := tx.AttemptSucceeded(&a, false); err != nil {
					return err
				}
				env, err := json.Marshal(handoff.Envelope{Component: "each", SessionID: a.SessionID, Timestamp: end,
					Status: "success", Data: json.RawMessage(`{}`),
					Metadata: handoff.EnvelopeMetadata{Attempts: 1, Repairs: []string{}, PreviousErrors: []string{}}})
				if err != nil {
					return err
				}
				it, err := tx.Unit(u)
				if err != nil {
					return err
				}
				if err := tx.StepRunning(it, start); err != nil {
					return err
				}
				it.SessionID = a.SessionID
				if err := tx.StepSucceeded(it, env, end); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Update(ctx, func(tx *checkpoint.Tx) error {
		return tx.RunEnded(&run, checkpoint.RunInterrupted, at)
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMapResumeFirstAction measures `cadence resume` of a map step of
// 10,000 items, all but one succeeded, from its call to the start of the
// remaining item's agent.
func BenchmarkMapResumeFirstAction(b *testing.B) {
	echo := benchEcho(b)
	template := b.TempDir()
	fillMapProject(b, template, echo, benchItems)
	items, err := os.ReadFile(filepath.Join(template, "items.json"))
	if err != nil {
		b.Fatal(err)
	}
	total := resumeToFirstAction(b, template, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "items.json"), items, 0o644); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(msOf(total)/float64(b.N), "ms/first-action")
}

// BenchmarkMapInspectJSON measures `cadence inspect --json` of a run whose
// map step has 10,000 items: reading every item's history and encoding it.
func BenchmarkMapInspectJSON(b *testing.B) {
	echo := benchEcho(b)
	dir := b.TempDir()
	fillMapProject(b, dir, echo, benchItems)
	inspectJSON(b, dir, func(rep *history.Report) {
		if n := len(rep.Steps[0].Items); n != benchItems {
			b.Fatalf("report has %d items, want %d", n, benchItems)
		}
	})
}
