package attempt

// end is how an attempt ends, as its outcome records it: the one list the
// decisions after an attempt (decide) map to, so that the outcome's
// transaction, what the step does next and what the run is told are
// chosen by one switch each over the same names.
type end int

const (
	// endSucceeded: the handoff (and its checks) passed; the attempt and
	// the step succeed.
	endSucceeded end = iota
	// endRetry: a counted failure; the step waits for its next attempt
	// until the backoff's deadline.
	endRetry
	// endUsageLimit: a usage limit with a reset time; the failure does not
	// count, and the step waits for the reset.
	endUsageLimit
	// endHelp: the agent asked for help; the step waits for the advisor's
	// round.
	endHelp
	// endFailed: no retry; the attempt fails and so does the step.
	endFailed
	// endLoginNeeded: the agent's login failed; the failure does not
	// count, and the run stops, resumable, until someone logs in (or a
	// fallback serves).
	endLoginNeeded
	// endStopped: cadence stopped the attempt itself; it does not count,
	// and the step runs again when the run does.
	endStopped
)

var endNames = [...]string{"succeeded", "retry", "usage_limit", "help", "failed", "login_needed", "stopped"}

func (e end) String() string { return endNames[e] }

// endOf is the ending a decision gives an attempt.
func endOf(d Decision) end {
	switch d {
	case Succeed:
		return endSucceeded
	case RetryFollowup, RetryInSession, RetryFresh:
		return endRetry
	case WaitUsageLimit:
		return endUsageLimit
	case HelpRound:
		return endHelp
	case Stop:
		return endStopped
	case WaitLogin:
		return endLoginNeeded
	}
	return endFailed
}

// stepWaits reports whether the step, after an attempt that ended so,
// waits for a next attempt of its own (its row's next_retry_at): a
// retry, a usage limit or a help round.
func (e end) stepWaits() bool { return e == endRetry || e == endUsageLimit || e == endHelp }
