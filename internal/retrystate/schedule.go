package retrystate

import "time"

// Schedule turns a drawn delay into the retry deadline that is stored with
// the failed attempt. A transient failure may carry the provider's
// retry-after; the longer of the two wins, so cadence never comes back
// before the provider said it would accept a call. Negative inputs count as
// zero. next is an absolute UTC instant with no monotonic clock reading: it
// must mean the same thing to a process that reads it back after a crash.
func Schedule(finishedAt time.Time, drawn, retryAfter time.Duration) (delay time.Duration, next time.Time) {
	delay = max(drawn, retryAfter, 0)
	return delay, finishedAt.UTC().Add(delay)
}

// Later returns the later of an already stored deadline and a proposed one,
// in UTC. A stored deadline is never moved earlier (G10): if the wall clock
// jumped backwards between storing and recomputing, the recomputed deadline
// would come too early. A zero stored deadline means none.
func Later(stored, proposed time.Time) time.Time {
	if stored.After(proposed) {
		return stored.UTC()
	}
	return proposed.UTC()
}

// Remaining is how long is left from now until deadline, never negative.
// Both instants are compared by wall clock, as a stored deadline must be:
// monotonic readings do not survive a restart.
func Remaining(now, deadline time.Time) time.Duration {
	return max(deadline.Round(0).Sub(now.Round(0)), 0)
}
