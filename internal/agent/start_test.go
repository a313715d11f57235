package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// TestRunStartTimeout runs real processes: one that never prints anything
// (a CLI hung at start) is stopped once StartTimeout has passed, and the
// result says so apart from an idle timeout; one whose first output comes
// in time is left alone however long its later silences last.
func TestRunStartTimeout(t *testing.T) {
	const start = 500 * time.Millisecond
	tests := []struct {
		name       string
		args       []string
		supervised bool
		wantStop   agent.StopReason
		wantSilent bool
	}{
		{"silent from the start", []string{"silent"}, false, agent.StopStuck, true},
		{"silent from the start, supervised", []string{"silent"}, true, agent.StopStuck, true},
		// The first line comes at once, then silences of twice the start
		// timeout: the deadline is only for the first output.
		{"output in time, silences later", []string{"tick", "3", "1s"}, false, agent.StopNone, false},
		// A line on stderr is output too (Gemini CLI's warnings come first).
		{"stderr in time", []string{"stderr-then-sleep", "2s"}, true, agent.StopNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // they wait on the clock
			spec := helperSpec(t, tt.args...)
			spec.StartTimeout = start
			spec.Timeout = 30 * time.Second
			if tt.supervised {
				spec.Supervisor = selfExe(t)
			}
			res := mustRun(t, context.Background(), spec)
			if res.Stop != tt.wantStop || res.NoOutputSinceStart != tt.wantSilent {
				t.Fatalf("Stop %q NoOutputSinceStart %v after %v, want %q %v",
					res.Stop, res.NoOutputSinceStart, res.Elapsed, tt.wantStop, tt.wantSilent)
			}
			if tt.wantSilent {
				if res.Elapsed < start || res.Elapsed > start+10*time.Second {
					t.Errorf("stopped after %v, want soon after the start timeout %v", res.Elapsed, start)
				}
				if res.StdoutBytes != 0 {
					t.Errorf("StdoutBytes = %d from an agent that printed nothing", res.StdoutBytes)
				}
			}
			waitGone(t, res.PID)
		})
	}
}

// TestRunStartTimeoutOff: zero is off, and an idle timeout alone still
// reports a plain stuck agent, not one silent since its start.
func TestRunStartTimeoutOff(t *testing.T) {
	spec := helperSpec(t, "silent")
	spec.IdleTimeout = 500 * time.Millisecond
	spec.Timeout = 30 * time.Second
	res := mustRun(t, context.Background(), spec)
	if res.Stop != agent.StopStuck || res.NoOutputSinceStart {
		t.Errorf("Stop %q NoOutputSinceStart %v, want stuck by the idle timeout", res.Stop, res.NoOutputSinceStart)
	}
	waitGone(t, res.PID)
}
