package orchestrator

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// BenchmarkRestoreEnvelopes checks the 900 intact envelope files a resume
// after step 900 checks before its first step (restoreEnvelopes), and
// decodes their 900 stored envelopes as the graph's read does: the part
// of a resume's start that grows with the steps done before it.
func BenchmarkRestoreEnvelopes(b *testing.B) {
	const n = 900
	dir := b.TempDir()
	units := make([]checkpoint.Step, n)
	for i := range units {
		units[i] = checkpoint.Step{RunID: "r1", ID: fmt.Sprintf("s%d", i),
			HandoffJSON: fmt.Appendf(nil, `{"component":"s%d","session_id":"","timestamp":"2026-11-27T20:00:00Z","status":"success",`+
				`"data":{"exit_code":0,"stdout":""},"metadata":{"attempts":1,"repairs":[],"provenance":"whole"}}`, i)}
	}
	log := slog.New(slog.DiscardHandler)
	if err := restoreEnvelopes(log, dir, units); err != nil { // the files, written once
		b.Fatal(err)
	}
	for b.Loop() {
		if err := restoreEnvelopes(log, dir, units); err != nil {
			b.Fatal(err)
		}
		for i := range units {
			if _, err := attempt.EnvelopeData(units[i].HandoffJSON); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/step")
}
