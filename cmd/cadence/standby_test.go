package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// standbySupervisors returns the pids of the standby supervisors whose
// parent is the cadence process pid (from their command lines in /proc).
func standbySupervisors(pid int) []int {
	want := []byte("\x00--parent\x00" + strconv.Itoa(pid) + "\x00--standby\x00")
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append(b, 0), want) {
			continue
		}
		if n, err := strconv.Atoi(strings.Split(p, "/")[2]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// While an agent runs, a supervisor for the next attempt is started ahead
// and waits; it has started nothing, and it ends with cadence however
// cadence ends: killed (the parent-death signal, its control socket
// closed), or stopped by a signal and exiting.
func TestG6StandbySupervisorEndsWithCadence(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			_, cmd, _, _ := startHangingAgent(t)
			// The agent's own supervisor, and the one waiting for the next
			// attempt.
			waitFor(t, "a standby supervisor beside the agent's", func() bool { return len(standbySupervisors(cmd.Process.Pid)) == 2 })
			sups := standbySupervisors(cmd.Process.Pid)
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
			for _, pid := range sups {
				waitFor(t, "the supervisors to be gone", func() bool { return !alive(pid) })
			}
		})
	}
}
