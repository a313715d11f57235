package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// TestSupervisedAgentEndsOnTerm: an agent with no signal handler of its own
// (sleep(1), not a Go program: the Go runtime re-enables SIGTERM itself),
// stopped as stuck, is ended by the SIGTERM, not by the SIGKILL that follows
// the grace period. Before the supervisor caught its signals instead of
// ignoring them, the agent inherited SIGTERM ignored and every stop waited
// the full grace.
func TestSupervisedAgentEndsOnTerm(t *testing.T) {
	spec := helperSpec(t)
	spec.Argv = []string{"sleep", "600"}
	spec.Supervisor = selfExe(t)
	spec.IdleTimeout = time.Second
	spec.Timeout = 2 * time.Minute
	spec.Grace = time.Minute // a KILL would come only after this
	res := mustRun(t, context.Background(), spec)
	if res.Stop != agent.StopStuck {
		t.Fatalf("Stop = %q, want stuck", res.Stop)
	}
	if res.Signal != syscall.SIGTERM {
		t.Fatalf("the agent ended by signal %v (exit %d) after %v, want SIGTERM", res.Signal, res.ExitCode, res.Elapsed)
	}
	if res.Elapsed >= spec.Grace {
		t.Fatalf("stopping took %v, as long as the grace period", res.Elapsed)
	}
	waitGone(t, res.PID)
}

// TestSupervisedAgentSignalDispositions: the agent under the supervisor, and
// a tool the agent starts, ignore exactly the signals this test process
// was started with ignored: cadence adds none. Both are sh and grep, which
// keep what they inherit (a Go program would re-enable some signals).
func TestSupervisedAgentSignalDispositions(t *testing.T) {
	base := mask(t, sigIgnOf(t, "/proc/self/status"))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if base&bit(sig) != 0 {
			t.Logf("%v is ignored by the environment of this test; it must stay so", sig)
		}
	}
	spec := helperSpec(t)
	spec.Argv = []string{"sh", "-c", `echo agent $(grep SigIgn /proc/$$/status | cut -f2); sh -c 'echo tool $(grep SigIgn /proc/$$/status | cut -f2)'`}
	spec.Supervisor = selfExe(t)
	spec.Timeout = time.Minute
	res := mustRun(t, context.Background(), spec)
	if res.ExitCode != 0 {
		t.Fatalf("helper exited %d: %s", res.ExitCode, res.StderrTail)
	}
	lines := strings.Fields(string(res.Text))
	got := map[string]uint64{}
	for i := 0; i+1 < len(lines); i += 2 {
		got[lines[i]] = mask(t, lines[i+1])
	}
	for _, who := range []string{"agent", "tool"} {
		m, ok := got[who]
		if !ok {
			t.Fatalf("no mask for the %s in %q", who, res.Text)
		}
		if m != base {
			t.Errorf("the %s ignores signals %#x; cadence was started ignoring %#x", who, m, base)
		}
	}
}

func sigIgnOf(t *testing.T, path string) string {
	t.Helper()
	v := sigIgn(path)
	if _, err := strconv.ParseUint(v, 16, 64); err != nil {
		t.Fatalf("SigIgn of %s: %q", path, v)
	}
	return v
}

func mask(t *testing.T, hex string) uint64 {
	t.Helper()
	m, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		t.Fatalf("mask %q: %v", hex, err)
	}
	return m
}

func bit(sig syscall.Signal) uint64 { return 1 << (uint(sig) - 1) }

// TestSupervisedAgentWaitsForItsStartToBeRecorded: under the supervisor the
// agent does not run until OnStart has returned (cadence has recorded its
// pid), and never runs when OnStart fails. Without the gate an agent could
// act, for instance write its handoff file, after a crash of cadence that
// left no trace of its start.
func TestSupervisedAgentWaitsForItsStartToBeRecorded(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			spec := helperSpec(t)
			marker := filepath.Join(spec.Dir, "ran")
			spec.Argv = []string{"sh", "-c", "touch " + marker}
			spec.Supervisor = selfExe(t)
			spec.Timeout = time.Minute
			running := false
			spec.OnStart = func(pid int) error {
				// Long enough for an ungated agent to have run.
				time.Sleep(300 * time.Millisecond)
				if _, err := os.Stat(marker); err == nil {
					t.Error("the agent ran before OnStart returned")
				}
				if fail {
					return errors.New("the store is gone")
				}
				return nil
			}
			spec.OnRunning = func() { running = true }
			res, err := agent.Run(context.Background(), spec)
			_, statErr := os.Stat(marker)
			switch {
			case fail && (err == nil || statErr == nil || running):
				t.Errorf("OnStart failed, yet Run = %v, %v, marker %v, OnRunning %v", res, err, statErr, running)
			case !fail && (err != nil || statErr != nil || !running || res.ExitCode != 0):
				t.Errorf("Run = %+v, %v; marker %v; OnRunning %v: want the agent run once its start was recorded", res, err, statErr, running)
			}
		})
	}
}

// TestSupervisorKillsEscapedDescendantsOnKill: an agent that ignores
// SIGTERM is killed after the grace period; a process it started in a
// session of its own dies with it. A SIGKILL of the group would have
// killed the supervisor first, leaving the escaped process to init.
func TestSupervisorKillsEscapedDescendantsOnKill(t *testing.T) {
	spec := helperSpec(t, "escape-hang", "ignore-term")
	spec.Supervisor = selfExe(t)
	spec.Timeout = 500 * time.Millisecond
	spec.Grace = 200 * time.Millisecond
	res := mustRun(t, context.Background(), spec)
	if res.Stop != agent.StopTimeout {
		t.Fatalf("Stop = %q, want timeout", res.Stop)
	}
	var escaped int
	if _, err := fmt.Sscanf(string(res.Text), "escaped %d", &escaped); err != nil {
		t.Fatalf("no escaped pid in %q: %v", res.Text, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })
	waitGone(t, res.PID, escaped)
}
