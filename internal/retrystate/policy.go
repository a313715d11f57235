package retrystate

import (
	"math"
	"slices"
	"time"
)

// Backoff is how the delay grows from one retry to the next.
type Backoff string

// Backoff strategies. The zero value behaves as [Fixed].
const (
	Fixed       Backoff = "fixed"       // always Initial
	Linear      Backoff = "linear"      // Initial·n
	Exponential Backoff = "exponential" // Initial·Multiplier^(n-1)
)

// Jitter is how a delay is randomised so that retries of many runs against
// the same provider do not arrive in lockstep.
type Jitter string

// Jitter modes. The zero value behaves as [NoJitter].
const (
	NoJitter    Jitter = "none"  // the base delay as is
	FullJitter  Jitter = "full"  // uniform in [0, d]
	EqualJitter Jitter = "equal" // uniform in [d/2, d]
)

// Policy is a step's retry configuration.
//
// MaxAttempts counts every attempt, the first one included, across every
// process that ever worked on the run; waiting (for a backoff, a retry-after
// or an open circuit) never consumes one.
//
// On and Never select which failure classes are retried. By default every
// class is retried except too_large. When On is non-empty only the classes
// it names are retried. Never wins over On. budget, help and config are
// terminal whatever the lists say: a budget is not refilled by waiting, a
// help request is answered by help rounds, and a program that cannot be
// started needs the workflow fixed.
type Policy struct {
	MaxAttempts int // total attempts, first included
	Backoff     Backoff
	Initial     time.Duration
	Multiplier  float64       // exponential growth factor (≥ 1)
	Max         time.Duration // cap on the base delay; 0 means no cap
	Jitter      Jitter
	On, Never   []string // failure classes
}

// Validate checks the policy and returns a *PolicyError (matching
// ErrInvalidPolicy) for the first bad setting found.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 1:
		return &PolicyError{"max_attempts", p.MaxAttempts, "must be at least 1 (the first attempt counts)"}
	case p.Initial < 0:
		return &PolicyError{"initial", p.Initial, "must not be negative"}
	case p.Max < 0:
		return &PolicyError{"max", p.Max, "must not be negative (0 means no cap)"}
	}
	switch p.Backoff {
	case "", Fixed, Linear:
	case Exponential:
		if math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0) || p.Multiplier < 1 {
			return &PolicyError{"multiplier", p.Multiplier, "must be a finite number ≥ 1 for exponential backoff"}
		}
	default:
		return &PolicyError{"backoff", p.Backoff, "must be fixed, linear or exponential"}
	}
	switch p.Jitter {
	case "", NoJitter, FullJitter, EqualJitter:
	default:
		return &PolicyError{"jitter", p.Jitter, "must be none, full or equal"}
	}
	for _, c := range p.On {
		if !knownClass(c) {
			return &PolicyError{"on", c, "unknown failure class"}
		}
		if Terminal(c) {
			return &PolicyError{"on", c, "is terminal and never retried"}
		}
	}
	for _, c := range p.Never {
		if !knownClass(c) {
			return &PolicyError{"never", c, "unknown failure class"}
		}
	}
	return nil
}

// Retryable reports whether a failed attempt of the given class may be
// followed by another attempt (attempt count aside: see Exhausted). The empty
// class is a success and is never retried.
func (p Policy) Retryable(class string) bool {
	switch {
	case class == "" || Terminal(class):
		return false
	case slices.Contains(p.Never, class):
		return false
	case len(p.On) > 0:
		return slices.Contains(p.On, class)
	default:
		return class != ClassTooLarge
	}
}

// Exhausted reports whether used attempts leave none for another try.
func (p Policy) Exhausted(used int) bool {
	return used >= p.MaxAttempts
}
