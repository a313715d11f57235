package retrystate

import "time"

// Clock is the time source of waits. Now is the wall clock, against which
// stored deadlines are compared; After measures elapsed (monotonic) time, so
// one slice of a wait is not cut short or stretched by a wall-clock jump.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// After returns a channel that fires after d of monotonic time.
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns the clock of the operating system.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
