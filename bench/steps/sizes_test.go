package steps

import (
	"os"
	"strconv"
	"testing"
)

// The sizes, each overridable for a quick run.
const (
	defaultSteps      = 1000   // BENCH_STEPS: a chain's steps, a map's items
	defaultCheckSteps = 10000  // BENCH_CHECK_STEPS: the chain `cadence check` loads
	defaultHistory    = 100000 // BENCH_HISTORY: attempts already in the state before a resume
)

// size reads a positive count from the environment variable name, or
// returns def when it is unset. A value that is not a positive integer
// fails the benchmark rather than silently measuring something else.
func size(b testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// reportPerStep reports elapsed nanoseconds over steps units of work as
// ms/step, the figure issue 34 compares.
func reportPerStep(b *testing.B, elapsedNS int64, steps int, unit string) {
	b.ReportMetric(float64(elapsedNS)/1e6/float64(steps), "ms/"+unit)
}
