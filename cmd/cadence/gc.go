package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target for cadence's own process:
// a collection when the heap has grown to five times what the last one
// left live, instead of Go's default of twice. Loading a workflow of
// 1,000 steps and its run's rows allocates tens of megabytes of
// short-lived values from a heap that starts at 4 MB: at the default the
// collector's mark workers took an eighth of the CPU from the exec of
// `cadence resume` to its first step's outcome, and at 400 that CPU falls
// by about a third with the allocations' share of the work (BENCHMARKS.md,
// "Resume"), for a peak heap a few times what is live (70 MB rather than
// 55 MB resident for that resume).
const gcPercent = 400

// gcTarget returns the collector target cadence sets at its start, and
// false when the user chose one with a non-empty GOGC (lookup is
// os.LookupEnv), which the runtime has applied already and cadence leaves
// as it is. An empty GOGC is no choice: the runtime reads it as unset.
func gcTarget(lookup func(string) (string, bool)) (int, bool) {
	if v, set := lookup("GOGC"); set && v != "" {
		return 0, false
	}
	return gcPercent, true
}

// tuneGC applies gcTarget to this process. Agents and commands cadence
// starts are not affected: it sets no environment variable.
func tuneGC() {
	if pct, ok := gcTarget(os.LookupEnv); ok {
		debug.SetGCPercent(pct)
	}
}
