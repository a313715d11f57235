package otelexport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
)

// BenchmarkPlanAndBuild measures what an export costs on top of sending:
// turning a finished run of 1000 steps of three attempts each into SDK
// spans (4001 of them). The run loop pays nothing; this is paid once per
// run or resume process, only with an OTLP endpoint set.
func BenchmarkPlanAndBuild(b *testing.B) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	end := t0.Add(time.Hour)
	// The run, and every step and attempt, is a copy of one taken to its
	// status through the transitions.
	states := checkpointtest.New(b)
	rec := records{run: new(states.Run(checkpoint.Run{ID: "r", StartedAt: t0, FinishedAt: &end}, checkpoint.RunSucceeded)),
		items: map[string][]checkpoint.Step{}, attempts: map[checkpoint.Unit][]checkpoint.Attempt{}}
	cost := 0.01
	succeeded := states.Step(checkpoint.Step{RunID: "r", Agent: "claude", UpdatedAt: end}, checkpoint.StepSucceeded)
	failed := states.Attempt(checkpoint.Attempt{Class: "schema", Error: "missing field", CostUSD: &cost,
		InputTokens: 1000, OutputTokens: 100, Repairs: []string{"trailing_comma"}, SessionID: "s"}, checkpoint.AttemptFailed)
	for i := range 1000 {
		id := fmt.Sprintf("step-%d", i)
		s := succeeded
		s.ID = id
		rec.steps = append(rec.steps, s)
		for n := 1; n <= 3; n++ {
			f := t0.Add(time.Duration(i*3+n) * time.Second)
			a := failed
			a.RunID, a.StepID, a.N, a.StartedAt, a.FinishedAt = "r", id, n, f.Add(-time.Second), &f
			rec.attempts[checkpoint.Unit{RunID: "r", StepID: id}] = append(rec.attempts[checkpoint.Unit{RunID: "r", StepID: id}], a)
		}
	}
	e := &Exporter{res: resource.Empty()}
	tid := deriveTraceID("r")
	b.ReportAllocs()
	b.ResetTimer()
	spans := 0
	for b.Loop() {
		spans = len(e.build(context.Background(), tid, "", plan(rec)))
	}
	b.ReportMetric(float64(spans), "spans/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(spans), "ns/span")
}
