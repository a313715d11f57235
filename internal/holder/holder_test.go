package holder

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHolderGoneByPidAndStartTime checks how a process tells whether the
// holder of a run's lease on this machine is alive: by its pid and by the
// start time its owner name recorded, so that a later process that got
// the holder's pid is not taken for the holder.
func TestHolderGoneByPidAndStartTime(t *testing.T) {
	id := Self()
	_, start := processStat(os.Getpid())
	if start == "" {
		t.Fatal("cannot read this process's start time from /proc")
	}
	if !strings.Contains(id.Owner, "/"+start+"/") {
		t.Fatalf("owner %q does not record the start time %s", id.Owner, start)
	}
	// A child that exited and was not waited for yet: a zombie, dead
	// although its pid answers signals.
	child := exec.Command("true")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	zombie := child.Process.Pid
	defer child.Wait()
	var zombieStart string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var state string
		state, zombieStart = processStat(zombie)
		if state == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d did not become a zombie (state %q)", zombie, state)
		}
	}
	other := Self() // another process's view of this machine
	for _, tc := range []struct {
		name  string
		owner string
		pid   int
		gone  bool
	}{
		{"the live holder", id.Owner, os.Getpid(), false},
		{"its pid reused by a later process", id.Machine + "/" + strconv.Itoa(os.Getpid()) + "/1/abc", os.Getpid(), true},
		{"a dead pid", id.Machine + "/999999999/1/abc", 999999999, true},
		{"a zombie", id.Machine + "/" + strconv.Itoa(zombie) + "/" + zombieStart + "/abc", zombie, true},
		{"an older owner without start time, pid alive", id.Machine + "/" + strconv.Itoa(os.Getpid()) + "/abc", os.Getpid(), false},
		{"a holder on another machine", "elsewhere/pid:[1]/" + strconv.Itoa(os.Getpid()) + "/1/abc", os.Getpid(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := other.Gone(tc.owner, tc.pid); got != tc.gone {
				t.Fatalf("gone(%q) = %v, want %v", tc.owner, got, tc.gone)
			}
		})
	}
}
