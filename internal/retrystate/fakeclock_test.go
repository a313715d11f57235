package retrystate

import (
	"testing"
	"time"
)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFakeClock(t *testing.T) {
	clk := NewFakeClock(t0)
	now := clk.After(0)
	short := clk.After(time.Second)
	long := clk.After(3 * time.Second)
	if !fired(now) {
		t.Error("After(0) did not fire at once")
	}

	clk.SetWall(t0.Add(-time.Hour))
	if fired(short) || fired(long) {
		t.Error("a wall-clock jump fired a timer; only monotonic time may")
	}
	if got := clk.Now(); !got.Equal(t0.Add(-time.Hour)) {
		t.Errorf("Now after SetWall = %v, want %v", got, t0.Add(-time.Hour))
	}

	select {
	case <-clk.Pending(1):
	default:
		t.Error("Pending(1) not closed with two timers waiting")
	}
	clk.Advance(time.Second)
	select {
	case at := <-short:
		if want := t0.Add(-time.Hour + time.Second); !at.Equal(want) {
			t.Errorf("timer delivered %v, want the wall time %v", at, want)
		}
	default:
		t.Error("1s timer did not fire after advancing 1s")
	}
	if fired(long) {
		t.Error("3s timer fired after 1s")
	}
	clk.Advance(2 * time.Second)
	if !fired(long) {
		t.Error("3s timer did not fire after 3s")
	}
	if got := clk.Elapsed(); got != 3*time.Second {
		t.Errorf("Elapsed = %v, want 3s", got)
	}

	pending := clk.Pending(1)
	select {
	case <-pending:
		t.Fatal("Pending(1) closed with no timer waiting")
	default:
	}
	clk.After(time.Minute)
	select {
	case <-pending:
	default:
		t.Error("Pending(1) not closed once a timer was added")
	}
}
