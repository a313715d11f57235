package history

import (
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// TestWaitingLeavesOutStops: the waiting between two attempts is the gap
// less the time cadence was stopped; a resume whose stop was not recorded
// (a killed cadence) counts the gap up to it as stopped.
func TestWaitingLeavesOutStops(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name      string
		events    []checkpoint.Event
		end, next float64
		want      time.Duration
	}{
		{"no stop: the whole gap", nil, 0, 2, 2 * time.Second},
		{"stopped during the backoff", []checkpoint.Event{{Kind: EventKindRunStopped, At: at(0.5)}, {Kind: EventKindRunResumed, At: at(18)}},
			0, 19, 1500 * time.Millisecond},
		{"killed, resume recorded only", []checkpoint.Event{{Kind: EventKindRunResumed, At: at(10)}}, 0, 10.25, 250 * time.Millisecond},
		{"a stop in another gap", []checkpoint.Event{{Kind: EventKindRunStopped, At: at(20)}, {Kind: EventKindRunResumed, At: at(30)}},
			0, 2, 2 * time.Second},
		{"two stops in one gap", []checkpoint.Event{{Kind: EventKindRunStopped, At: at(1)}, {Kind: EventKindRunResumed, At: at(5)},
			{Kind: EventKindRunStopped, At: at(6)}, {Kind: EventKindRunResumed, At: at(9)}}, 0, 10, 3 * time.Second},
		{"other events are ignored", []checkpoint.Event{{Kind: "step_reopened", At: at(1)}}, 0, 3, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waiting(at(tc.end), at(tc.next), runStops(tc.events)); got != tc.want {
				t.Errorf("waiting = %s, want %s", got, tc.want)
			}
		})
	}
}
