package retrystate

import (
	"math"
	"math/rand/v2"
	"time"
)

// maxDuration is the longest representable delay; computations that would
// overflow saturate here instead of wrapping round to a negative value.
const maxDuration = time.Duration(math.MaxInt64)

// BaseDelay is the delay before the next attempt, without jitter, after n
// failed attempts (n is 1 after the first failure; smaller n is taken as 1):
//
//	fixed        Initial
//	linear       Initial·n
//	exponential  Initial·Multiplier^(n-1)
//
// The result is capped at Max when Max is set. Growth saturates rather than
// overflows, so n = 1000 with no cap yields the longest representable
// duration, not a negative one. A negative result (only possible with an
// invalid policy) is returned as 0.
func (p Policy) BaseDelay(n int) time.Duration {
	n = max(n, 1)
	var d time.Duration
	switch p.Backoff {
	case Linear:
		d = mulSaturating(p.Initial, float64(n))
	case Exponential:
		d = mulSaturating(p.Initial, math.Pow(p.Multiplier, float64(n-1)))
	default:
		d = p.Initial
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	return max(d, 0)
}

// Delay is BaseDelay(n) with the policy's jitter applied: full draws
// uniformly in [0, d], equal in [d/2, d]. rnd returns a number in [0, 1);
// values outside are clamped, and a nil rnd uses math/rand/v2. Pass a
// deterministic rnd in tests.
//
// The drawn delay is meant to be stored with the attempt so that a resumed
// run waits for the same deadline instead of drawing again.
func (p Policy) Delay(n int, rnd func() float64) time.Duration {
	d := p.BaseDelay(n)
	if rnd == nil {
		rnd = rand.Float64
	}
	switch p.Jitter {
	case FullJitter:
		return mulSaturating(d, clampUnit(rnd()))
	case EqualJitter:
		half := d / 2
		return half + mulSaturating(d-half, clampUnit(rnd()))
	default:
		return d
	}
}

// mulSaturating returns d·f, saturating at the largest duration. A NaN or
// negative product yields 0.
func mulSaturating(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	switch {
	case math.IsNaN(x) || x <= 0:
		return 0
	case x >= float64(maxDuration):
		return maxDuration
	default:
		return time.Duration(x)
	}
}

// clampUnit keeps a random draw in [0, 1].
func clampUnit(r float64) float64 {
	switch {
	case math.IsNaN(r) || r < 0:
		return 0
	case r > 1:
		return 1
	default:
		return r
	}
}
