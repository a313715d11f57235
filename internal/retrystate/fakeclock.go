package retrystate

import (
	"sync"
	"time"
)

// FakeClock is a Clock for tests, in this package and in packages that wait
// through one. Its wall time changes only when a test says so, and its After
// channels fire only when the test advances it, so a test can reproduce a
// wall clock that jumps while a wait is in progress.
//
// Advance moves wall and monotonic time forward together, as time passing
// does; SetWall moves only the wall clock, as an operator or NTP would.
// Pending lets a test wait, without sleeping, until the code under test is
// blocked in After. A FakeClock is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	wall    time.Time
	elapsed time.Duration // monotonic time since creation
	timers  []fakeTimer
	waiters []fakeWaiter
}

type fakeTimer struct {
	at time.Duration // monotonic instant at which it fires
	ch chan time.Time
}

type fakeWaiter struct {
	n    int
	done chan struct{}
}

// NewFakeClock returns a FakeClock whose wall clock reads wall.
func NewFakeClock(wall time.Time) *FakeClock {
	return &FakeClock{wall: wall}
}

// Now returns the fake wall time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// Elapsed returns the monotonic time advanced since the clock was created.
func (c *FakeClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

// After returns a channel that receives the wall time once the clock has
// been advanced by d. A d of zero or less fires at once.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.wall
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: c.elapsed + d, ch: ch})
	c.notifyLocked()
	return ch
}

// Advance lets d pass: wall and monotonic time move forward by d and every
// After channel that is due fires.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed += d
	c.wall = c.wall.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at <= c.elapsed {
			t.ch <- c.wall
			continue
		}
		kept = append(kept, t)
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

// SetWall makes the wall clock jump to t, backwards or forwards. Monotonic
// time does not move, so no After channel fires.
func (c *FakeClock) SetWall(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = t
}

// Pending returns a channel that is closed once at least n After channels
// are waiting to fire. Tests use it to know that the code under test is
// blocked before they advance the clock.
func (c *FakeClock) Pending(n int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := fakeWaiter{n: n, done: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.notifyLocked()
	return w.done
}

// notifyLocked closes the channels of the Pending calls now satisfied.
func (c *FakeClock) notifyLocked() {
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if len(c.timers) >= w.n {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}
