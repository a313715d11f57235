package retrystate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// step is how far the tests advance the fake clock at a time. Deadlines in
// these tests are multiples of it, so a wait ends exactly at its deadline.
const step = 250 * time.Millisecond

// waiting is a WaitUntil running in its own goroutine.
type waiting struct {
	done  chan error
	ticks []time.Duration // read only after done has delivered
}

func startWait(ctx context.Context, clk Clock, deadline time.Time) *waiting {
	w := &waiting{done: make(chan error, 1)}
	go func() {
		w.done <- WaitUntil(ctx, clk, deadline, func(d time.Duration) { w.ticks = append(w.ticks, d) })
	}()
	return w
}

// drive advances clk by step each time the wait is blocked on it, calling
// before (when not nil) first, until the wait returns.
func drive(t *testing.T, clk *FakeClock, w *waiting, before func()) error {
	t.Helper()
	for {
		select {
		case err := <-w.done:
			return err
		case <-clk.Pending(1):
		case <-time.After(10 * time.Second):
			t.Fatal("WaitUntil neither blocked on the clock nor returned")
		}
		if before != nil {
			before()
		}
		clk.Advance(step)
	}
}

func TestWaitUntilSteadyClock(t *testing.T) {
	clk := NewFakeClock(t0)
	deadline := t0.Add(3500 * time.Millisecond)
	w := startWait(context.Background(), clk, deadline)
	if err := drive(t, clk, w, nil); err != nil {
		t.Fatalf("WaitUntil = %v", err)
	}
	if got := clk.Elapsed(); got != 3500*time.Millisecond {
		t.Errorf("waited %v, want 3.5s", got)
	}
	want := []time.Duration{3500 * time.Millisecond, 2500 * time.Millisecond, 1500 * time.Millisecond, 500 * time.Millisecond}
	if !slices.Equal(w.ticks, want) {
		t.Errorf("ticks = %v, want one per slice of at most 1s: %v", w.ticks, want)
	}
}

func TestWaitUntilWallClockJumps(t *testing.T) {
	deadline := t0.Add(5 * time.Second)
	jumpAt := 1500 * time.Millisecond // mid-slice: the wait is blocked in After
	tests := []struct {
		name        string
		jump        time.Duration // added to the wall clock at jumpAt
		wantElapsed time.Duration
	}{
		// Wall clock reads t0-8.5s after the jump: 13.5s more to wait.
		{"backwards extends the wait", -10 * time.Second, jumpAt + 13500*time.Millisecond},
		// Past the deadline: the wait ends when the current 1s slice does.
		{"forwards ends it", time.Hour, 2 * time.Second},
		// Still before the deadline: 5s-1.5s-2s = 1.5s left after the jump.
		{"forwards shortens it to the new remaining", 2 * time.Second, jumpAt + 1500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := NewFakeClock(t0)
			w := startWait(context.Background(), clk, deadline)
			jumped := false
			err := drive(t, clk, w, func() {
				if !jumped && clk.Elapsed() == jumpAt {
					clk.SetWall(clk.Now().Add(tt.jump))
					jumped = true
				}
			})
			if err != nil {
				t.Fatalf("WaitUntil = %v", err)
			}
			if got := clk.Elapsed(); got != tt.wantElapsed {
				t.Errorf("waited %v of monotonic time, want %v", got, tt.wantElapsed)
			}
			if clk.Now().Before(deadline) {
				t.Errorf("returned at wall time %v, before the deadline %v", clk.Now(), deadline)
			}
		})
	}
}

func TestWaitUntilBackwardsJumpReportsLongerRemaining(t *testing.T) {
	clk := NewFakeClock(t0)
	w := startWait(context.Background(), clk, t0.Add(2*time.Second))
	jumped := false
	if err := drive(t, clk, w, func() {
		if !jumped && clk.Elapsed() == 500*time.Millisecond {
			clk.SetWall(clk.Now().Add(-time.Minute))
			jumped = true
		}
	}); err != nil {
		t.Fatalf("WaitUntil = %v", err)
	}
	// Slice one started at 2s left; after it, the wall clock reads t0-59s.
	if len(w.ticks) < 2 || w.ticks[0] != 2*time.Second || w.ticks[1] != 61*time.Second {
		t.Errorf("ticks start %v, want [2s 1m1s ...]", w.ticks[:min(len(w.ticks), 2)])
	}
}

func TestWaitUntilContextCancel(t *testing.T) {
	clk := NewFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := startWait(ctx, clk, t0.Add(time.Hour))
	select {
	case <-clk.Pending(1):
	case <-time.After(10 * time.Second):
		t.Fatal("WaitUntil never blocked on the clock")
	}
	cancel()
	select {
	case err := <-w.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("WaitUntil = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitUntil did not return after its context was cancelled")
	}
	if clk.Elapsed() != 0 {
		t.Errorf("clock advanced by %v; cancellation must not need time to pass", clk.Elapsed())
	}
}

func TestWaitUntilContextAlreadyDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	cancel()
	if err := WaitUntil(ctx, NewFakeClock(t0), t0.Add(time.Hour), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitUntil = %v, want context.Canceled", err)
	}
}

// A resumed run waits only what remains of a deadline stored before the
// interruption (G4): not the full delay again, and not nothing.
func TestWaitUntilResumeWaitsRemainder(t *testing.T) {
	finishedAt := t0
	_, next := Schedule(finishedAt, 30*time.Second, 0)
	tests := []struct {
		name        string
		resumeAt    time.Time
		wantElapsed time.Duration
	}{
		{"resume before the deadline", t0.Add(20 * time.Second), 10 * time.Second},
		{"resume right after the failure", t0, 30 * time.Second},
		{"resume after the deadline", t0.Add(time.Minute), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := NewFakeClock(tt.resumeAt)
			w := startWait(context.Background(), clk, next)
			if err := drive(t, clk, w, nil); err != nil {
				t.Fatalf("WaitUntil = %v", err)
			}
			if got := clk.Elapsed(); got != tt.wantElapsed {
				t.Errorf("waited %v, want %v", got, tt.wantElapsed)
			}
			if tt.wantElapsed > 0 && (len(w.ticks) == 0 || w.ticks[0] != tt.wantElapsed) {
				t.Errorf("first tick = %v, want the remaining %v", w.ticks, tt.wantElapsed)
			}
		})
	}
}

func TestWaitUntilSystemClock(t *testing.T) {
	deadline := time.Now().Add(30 * time.Millisecond).UTC()
	if err := WaitUntil(context.Background(), SystemClock(), deadline, nil); err != nil {
		t.Fatalf("WaitUntil = %v", err)
	}
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("returned at %v, before the deadline %v", now, deadline)
	}
}
