package retrystate

import (
	"context"
	"time"
)

// MaxSlice is the longest WaitUntil sleeps before it re-reads the wall
// clock. It bounds how late a wait notices a clock jump or reports progress.
const MaxSlice = time.Second

// WaitUntil blocks until clock.Now() is at or past deadline, or ctx is done,
// in which case it returns ctx.Err().
//
// It sleeps in slices of at most MaxSlice (or the remaining time when
// shorter) and re-reads the wall clock after each. The deadline is absolute,
// so a wall clock that jumped backwards makes the wait longer, never
// shorter (G10), one that jumped forwards ends it at the new time, and a
// resumed run waits only what remains (G4). onTick, when not nil, is called
// with the remaining time before each slice, for a progress display.
func WaitUntil(ctx context.Context, clock Clock, deadline time.Time, onTick func(remaining time.Duration)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		left := Remaining(clock.Now(), deadline)
		if left == 0 {
			return nil
		}
		if onTick != nil {
			onTick(left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clock.After(min(left, MaxSlice)):
		}
	}
}
