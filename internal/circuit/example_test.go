package circuit_test

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/circuit"
)

// A provider fails three times in a row; the breaker opens, lets one trial
// through after two minutes, and closes when it succeeds.
func Example() {
	cfg := circuit.Config{} // defaults: 3 failures, open for 2m, 1 trial
	now := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	b := circuit.New("claude")

	for _, class := range []string{"transient", "schema", "transient", "timeout", "exit_nonzero"} {
		next, gen, ok, _ := circuit.Acquire(b, cfg, now)
		if !ok {
			break
		}
		b = circuit.Record(next, cfg, gen, circuit.OutcomeFor(class), now)
		fmt.Printf("%-12s -> %s, failures %d\n", class, b.State, b.Failures)
		now = now.Add(10 * time.Second)
	}

	_, _, ok, wait := circuit.Acquire(b, cfg, now)
	fmt.Println("admitted:", ok, "wait until", wait.Format(time.TimeOnly))

	b, gen, ok, _ := circuit.Acquire(b, cfg, wait)
	fmt.Println("trial:", ok, b.State)
	b = circuit.Record(b, cfg, gen, circuit.Success, wait)
	fmt.Println("after trial:", b.State)
	// Output:
	// transient    -> closed, failures 1
	// schema       -> closed, failures 0
	// transient    -> closed, failures 1
	// timeout      -> closed, failures 2
	// exit_nonzero -> open, failures 3
	// admitted: false wait until 15:02:40
	// trial: true half_open
	// after trial: closed
}
