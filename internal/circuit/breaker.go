package circuit

import "time"

// BusyRetry is how long a caller refused by a half-open breaker whose trial
// slots are all taken should wait before asking again. Slots are freed by
// Record, so in a sequential run this only happens while an earlier trial of
// the same generation is still unsettled.
const BusyRetry = 5 * time.Second

// Breaker is the state of one agent's circuit, as stored in SQLite. The zero
// value (with Agent set) is a closed breaker; an empty or unknown State is
// read as closed. All times are UTC wall-clock instants.
type Breaker struct {
	Agent string
	State State
	// Failures counts consecutive counted failures while closed (and keeps
	// the count that opened it while open), and failed trials while
	// half-open.
	Failures int
	// Generation is bumped on every state change and on Reset. An attempt
	// remembers the generation it was admitted under; its result is ignored
	// once the breaker has moved on.
	Generation int64
	// OpenedAt is when the breaker last opened; zero when closed.
	OpenedAt time.Time
	// OpenUntil is when an open breaker lets trials through. It is never
	// moved earlier except by Reset, and it is kept after the breaker
	// closes, so that a wall clock that jumped backwards cannot make a
	// later opening end sooner than one already stored (G10). Callers
	// showing the breaker should ignore it unless State is Open.
	OpenUntil time.Time
	// Trials counts half-open trial attempts admitted in this generation
	// and not returned by a neutral outcome.
	Trials int
	// Successes counts half-open trials that succeeded in this generation.
	Successes int
}

// New returns the closed breaker of an agent that has none stored yet.
func New(agent string) Breaker {
	return Breaker{Agent: agent, State: Closed}
}

// Acquire asks to start an attempt at now.
//
// A closed breaker admits it. An open breaker whose OpenUntil has come turns
// half-open (a new generation) first; one still open refuses and returns
// OpenUntil as waitUntil. A half-open breaker admits up to HalfOpenCalls
// trials per generation and counts them; with every slot taken it refuses
// and returns now+BusyRetry.
//
// When ok, gen is the generation the attempt runs under, to be stored with
// the attempt row and passed back to Record, and next must be committed
// with that row (it may have changed state or counted a trial). When not
// ok, the attempt must not run and does not consume one of the step's
// attempts.
func Acquire(b Breaker, cfg Config, now time.Time) (next Breaker, gen int64, ok bool, waitUntil time.Time) {
	cfg = cfg.Normalize()
	b = b.normalized()
	now = now.UTC()
	if b.State == Open {
		if now.Before(b.OpenUntil) {
			return b, b.Generation, false, b.OpenUntil
		}
		b = b.moveTo(HalfOpen)
		b.Failures, b.Trials, b.Successes = 0, 0, 0
	}
	if b.State == HalfOpen {
		if b.Trials >= cfg.HalfOpenCalls {
			return b, b.Generation, false, now.Add(BusyRetry)
		}
		b.Trials++
	}
	return b, b.Generation, true, time.Time{}
}

// Record applies the outcome of an attempt admitted under generation gen and
// returns the breaker to commit with that outcome.
//
// A result from another generation changes nothing. While closed, a Failure
// counts and opens the breaker once cfg.Failures have come in a row
// (OpenUntil = now+OpenFor, or the stored OpenUntil if later); a Success
// resets the count. While half-open, a Failure re-opens the breaker, a
// Success closes it once HalfOpenCalls trials have succeeded, and a Neutral
// outcome gives its trial slot back, since it said nothing about the
// provider. While open, nothing is admitted, so any result is stale.
//
// A crash during a half-open trial is settled on resume by recording Failure
// under that trial's generation: the breaker re-opens rather than staying
// half-open with a slot that will never be returned.
func Record(b Breaker, cfg Config, gen int64, o Outcome, now time.Time) Breaker {
	cfg = cfg.Normalize()
	b = b.normalized()
	now = now.UTC()
	if gen != b.Generation {
		return b
	}
	switch b.State {
	case Closed:
		switch o {
		case Failure:
			b.Failures++
			if b.Failures >= cfg.Failures {
				b = b.open(now, now.Add(cfg.OpenFor))
			}
		case Success:
			b.Failures = 0
		}
	case HalfOpen:
		switch o {
		case Failure:
			b.Failures++
			b = b.open(now, now.Add(cfg.OpenFor))
		case Success:
			if b.Successes < b.Trials {
				b.Successes++
			}
			if b.Successes >= cfg.HalfOpenCalls {
				b = b.close()
			}
		case Neutral:
			if b.Trials > b.Successes {
				b.Trials--
			}
		}
	}
	return b
}

// OpenUntilTime forces the breaker open until t, for a provider that
// reported a usage limit with its reset time. An open breaker keeps its
// OpenUntil if that is later; a stored OpenUntil is never moved earlier. A
// closed or half-open breaker opens (a new generation), so the results of
// attempts admitted before no longer count: record the attempt that hit the
// limit before calling OpenUntilTime.
func OpenUntilTime(b Breaker, t, now time.Time) Breaker {
	b = b.normalized()
	if b.State == Open {
		b.OpenUntil = later(b.OpenUntil, t)
		return b
	}
	return b.open(now.UTC(), t)
}

// Reset closes the breaker by hand (cadence circuit reset): Failures, times
// and trial counts are cleared and a new generation starts, so results of
// attempts admitted before the reset are ignored. It is the only operation
// that moves OpenUntil earlier. now is accepted for symmetry with the other
// operations; a closed breaker records no time.
func Reset(b Breaker, now time.Time) Breaker {
	return Breaker{Agent: b.Agent, State: Closed, Generation: b.Generation + 1}
}

// normalized reads an empty or unknown state as closed.
func (b Breaker) normalized() Breaker {
	if !b.State.Valid() {
		b.State = Closed
	}
	return b
}

// moveTo changes state and starts a new generation.
func (b Breaker) moveTo(s State) Breaker {
	b.State = s
	b.Generation++
	return b
}

// open moves to Open at now until the later of until and the stored
// OpenUntil.
func (b Breaker) open(now, until time.Time) Breaker {
	b = b.moveTo(Open)
	b.OpenedAt = now
	b.OpenUntil = later(b.OpenUntil, until)
	b.Trials, b.Successes = 0, 0
	return b
}

// close moves to Closed, keeping OpenUntil (see Breaker.OpenUntil).
func (b Breaker) close() Breaker {
	b = b.moveTo(Closed)
	b.Failures, b.Trials, b.Successes = 0, 0, 0
	b.OpenedAt = time.Time{}
	return b
}

// later returns the later of two instants, in UTC.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a.UTC()
	}
	return b.UTC()
}
