package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// loadHeapLimit is the heap cadence lets garbage pile up to while it
// loads a workflow and its run's rows, before its first attempt. Loading
// 1,000 steps allocates tens of megabytes of short-lived values from a
// heap that starts at 4 MB: at Go's default target the collector ran 8
// times from the exec of `cadence resume` to the first step, and with no
// target but this limit (which counts the runtime's own memory too, so
// the heap collects at about 21 MB) 3 or 4 times, while the process's
// peak resident memory stays where the default left it (55 MB for that
// resume), under SPEC §5's 64 MiB (BENCHMARKS.md, "Resume, second
// round").
const loadHeapLimit = 32 << 20

// loadGC is the collector setting of the load phase: no target, a memory
// limit of loadHeapLimit. It ends, restoring what was set before, at the
// first attempt (whose agent may stream gigabytes through this process
// under Go's default, which SPEC §5's memory bound was measured at), when
// the command returns, or as soon as a collection finds more than half
// the limit live: a workflow that big would make the limit collect again
// and again, so it loads under the default instead.
type loadGC struct {
	once    sync.Once
	percent int
	limit   int64
	done    chan struct{}
}

// startLoadGC begins the load phase, unless the user chose a collector
// setting with a non-empty GOGC or GOMEMLIMIT (lookup is os.LookupEnv),
// which the runtime has applied and cadence leaves alone: then end does
// nothing.
func startLoadGC(lookup func(string) (string, bool)) *loadGC {
	g := &loadGC{done: make(chan struct{})}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, set := lookup(k); set && v != "" {
			g.once.Do(func() { close(g.done) })
			return g
		}
	}
	// The limit first, so that the collector is never off without it.
	g.limit = debug.SetMemoryLimit(loadHeapLimit)
	g.percent = debug.SetGCPercent(-1)
	g.watch()
	return g
}

// end restores the collector setting from before startLoadGC. It may be
// called any number of times, from any goroutine.
func (g *loadGC) end() {
	g.once.Do(func() {
		// The target first, so that the collector is never off without
		// a limit.
		debug.SetGCPercent(g.percent)
		debug.SetMemoryLimit(g.limit)
		close(g.done)
	})
}

// ended is closed once the load phase is over.
func (g *loadGC) ended() <-chan struct{} { return g.done }

// gcSentinel is an object only a finalizer refers to: it is collected by
// the first collection after it was made, and its finalizer runs then.
// It holds a pointer so that the tiny allocator, whose blocks may never
// be finalized, does not place it.
type gcSentinel struct{ _ *int }

// watch ends the phase at the first collection after which more than
// half of loadHeapLimit is live, checking after each collection.
func (g *loadGC) watch() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		select {
		case <-g.done:
			return
		default:
		}
		if liveHeap() > loadHeapLimit/2 {
			g.end()
			return
		}
		g.watch()
	})
}

// liveHeap is the heap the last collection found live, in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return math.MaxUint64 // unknown: assume big, end the phase
	}
	return s[0].Value.Uint64()
}
