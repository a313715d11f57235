package orchestrator

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelMin is the fewest calls inParallel gives a goroutine of its
// own: below it, starting one costs more than it saves.
const parallelMin = 64

// inParallel calls fn(i) for each i in [0, n) and returns the error of the
// lowest i that failed, or nil. When n is large it spreads the calls over
// up to GOMAXPROCS goroutines: a resume reads and decodes hundreds of
// envelopes, each independent of the others, before its first step can
// start, and on an idle machine the second core would otherwise wait. All
// n calls are made even when one fails (each must be safe to make
// whatever the others did); the one error returned is the one a loop in
// order would have stopped at.
func inParallel(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/parallelMin)
	if workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[i] = fn(i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
