package circuit

import (
	"errors"
	"fmt"
)

// State is the position of a breaker in its state machine. The values are
// stored in SQLite and shown by inspect, so they must not change.
type State string

// Breaker states.
const (
	Closed   State = "closed"    // attempts run; counted failures accumulate
	Open     State = "open"      // attempts wait until OpenUntil
	HalfOpen State = "half_open" // a limited number of trial attempts run
)

// Valid reports whether s is one of the three states.
func (s State) Valid() bool {
	return s == Closed || s == Open || s == HalfOpen
}

// ErrInvalidTransition is returned by Transition for a change of state the
// state machine does not allow.
var ErrInvalidTransition = errors.New("invalid circuit transition")

// Transition checks a change of state against the table of allowed changes:
//
//	closed    → open       failures reached the threshold, or a usage limit
//	open      → half_open  OpenUntil passed
//	half_open → open       a trial failed, or a usage limit
//	half_open → closed     enough trials succeeded, or a manual reset
//	open      → closed     manual reset
//
// Anything else, staying in the same state included, returns an error
// wrapping ErrInvalidTransition. (A manual reset of a closed breaker is not a
// change of state.)
func Transition(from, to State) error {
	switch {
	case from == Closed && to == Open,
		from == Open && to == HalfOpen,
		from == Open && to == Closed,
		from == HalfOpen && to == Open,
		from == HalfOpen && to == Closed:
		return nil
	}
	return fmt.Errorf("%w: %q to %q", ErrInvalidTransition, from, to)
}
