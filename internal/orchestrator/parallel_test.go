package orchestrator

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestInParallel calls inParallel below and above the size at which it
// starts goroutines, with and without failures: every call is made once,
// and the error returned is that of the lowest index that failed, as a
// loop in order would return it.
func TestInParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two workers even on one core
	tests := []struct {
		n       int
		failAt  []int // indexes whose call fails
		wantErr int   // index whose error is returned; -1 for none
		// wantCalls counts the calls made: all of them once goroutines
		// share the work, up to the first failure in a loop in order.
		wantCalls int
	}{
		{0, nil, -1, 0},
		{1, nil, -1, 1},
		{parallelMin*2 - 1, nil, -1, parallelMin*2 - 1},
		{parallelMin * 2, nil, -1, parallelMin * 2},
		{5000, nil, -1, 5000},
		{10, []int{3, 7}, 3, 4},
		{5000, []int{4999}, 4999, 5000},
		{5000, []int{4000, 17, 2500}, 17, 5000},
		{5000, []int{0}, 0, 5000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d/fail=%v", tt.n, tt.failAt), func(t *testing.T) {
			calls := make([]atomic.Int32, tt.n)
			var total atomic.Int32
			fails := map[int]error{}
			for _, i := range tt.failAt {
				fails[i] = fmt.Errorf("call %d failed", i)
			}
			err := inParallel(tt.n, func(i int) error {
				calls[i].Add(1)
				total.Add(1)
				return fails[i]
			})
			switch {
			case tt.wantErr < 0 && err != nil:
				t.Fatalf("inParallel = %v, want nil", err)
			case tt.wantErr >= 0 && !errors.Is(err, fails[tt.wantErr]):
				t.Fatalf("inParallel = %v, want %v", err, fails[tt.wantErr])
			}
			if got := int(total.Load()); got != tt.wantCalls {
				t.Errorf("%d calls, want %d", got, tt.wantCalls)
			}
			for i := range calls {
				if c := calls[i].Load(); c > 1 {
					t.Errorf("index %d called %d times", i, c)
				}
			}
		})
	}
}
