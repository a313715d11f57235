package retrystate_test

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/retrystate"
)

// The delays of the default-style policy from workflow.yaml, without jitter.
func ExamplePolicy_BaseDelay() {
	p := retrystate.Policy{
		MaxAttempts: 8,
		Backoff:     retrystate.Exponential,
		Initial:     2 * time.Second,
		Multiplier:  2,
		Max:         60 * time.Second,
	}
	for n := 1; n < p.MaxAttempts; n++ {
		fmt.Print(p.BaseDelay(n), " ")
	}
	fmt.Println()
	// Output: 2s 4s 8s 16s 32s 1m0s 1m0s
}

// After a failed attempt: is it retried, and when?
func ExampleSchedule() {
	p := retrystate.Policy{MaxAttempts: 3, Backoff: retrystate.Linear, Initial: 5 * time.Second, Jitter: retrystate.EqualJitter}
	finishedAt := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	used, class := 1, "transient"
	if p.Retryable(class) && !p.Exhausted(used) {
		drawn := p.Delay(used, func() float64 { return 0.5 }) // 2.5s + 0.5·2.5s
		delay, next := retrystate.Schedule(finishedAt, drawn, 10*time.Second)
		fmt.Println(drawn, delay, next.Format(time.RFC3339))
	}
	// Output: 3.75s 10s 2026-01-02T15:04:15Z
}
