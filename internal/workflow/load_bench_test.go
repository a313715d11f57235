package workflow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// chainYAML is a workflow of n command steps s0…s(n-1), each needing the
// one before it: the longest ancestry a workflow of n steps can have, so
// any per-step walk of ancestors shows as quadratic time.
func chainYAML(n int) []byte {
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

// BenchmarkParseAndCheckChain loads and checks chains of 1,000 and 10,000
// steps as `cadence check` does. Linear loading shows as an ns/step that
// stays flat from the first size to the second (issue 34: 10,000 steps in
// well under a second).
func BenchmarkParseAndCheckChain(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			raw := chainYAML(n)
			dir := b.TempDir()
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				wf, err := ParseAndCheck(dir, DefaultPath, raw)
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if len(wf.Steps) != n {
					b.Fatalf("loaded %d steps, want %d", len(wf.Steps), n)
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/float64(n), "ns/step")
		})
	}
}
