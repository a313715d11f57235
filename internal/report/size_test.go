package report

import (
	"bytes"
	"strings"
	"testing"
)

// maxReportBytes is the size SPEC §14 allows the report of a run of
// 10,000 attempts.
const maxReportBytes = 5 << 20

// TestLongRunReportStaysSmall renders runs of 10,000 attempts, with their
// failed-handoff records on disk, and requires a file under 5 MB that still
// draws every attempt.
func TestLongRunReportStaysSmall(t *testing.T) {
	tests := []struct {
		name      string
		failEvery int
	}{
		{"a third of the items fail once", 3},
		{"every item fails", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := syntheticRun(10000, tc.failEvery)
			if n := attemptCount(rep); n != 10000 {
				t.Fatalf("the synthetic run has %d attempts, want 10000", n)
			}
			dir := t.TempDir()
			writeRecords(t, dir, rep)
			var buf bytes.Buffer
			if err := Render(&buf, rep, Options{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d attempts: %d bytes", attemptCount(rep), buf.Len())
			if buf.Len() >= maxReportBytes {
				t.Errorf("report is %d bytes, want under %d", buf.Len(), maxReportBytes)
			}
			if got := strings.Count(buf.String(), `<rect class="bar `); got != 10000 {
				t.Errorf("report draws %d attempt bars, want 10000", got)
			}
			// The map step has more items than maxItemLanes: its lanes are folded.
			if !strings.Contains(buf.String(), `<details class="items" data-step="fix"><summary>`) {
				t.Error("the item lanes of a map step of thousands of items are not folded")
			}
		})
	}
}

// BenchmarkRender10000Attempts measures rendering the report of a run of
// 10,000 attempts (a third of its items failing once, their records read
// from disk): time per render and the size of the file.
func BenchmarkRender10000Attempts(b *testing.B) {
	rep := syntheticRun(10000, 3)
	dir := b.TempDir()
	writeRecords(b, dir, rep)
	var size int
	b.ResetTimer()
	for b.Loop() {
		var buf bytes.Buffer
		if err := Render(&buf, rep, Options{Dir: dir}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/render")
}
