// Package holder names a cadence process in the holds it takes on a run or
// an item (leases, SPEC section 13), and tells whether the process that a
// recorded hold names is still alive. A hold's owner name carries where the
// process runs (host and pid namespace), its pid and its start time, so that
// a process on the same machine can tell a live holder from a dead one, or
// from a later process that was given the same pid.
package holder

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Identity names one process.
type Identity struct {
	// Owner is unique: where the process runs (Machine), its pid, its
	// start time and a random part.
	Owner string
	// Machine is the host name and the pid namespace: two containers may
	// share a host name, but a pid means the same process only within
	// one namespace.
	Machine string
	Host    string
	PID     int
}

// Self returns this process's identity.
func Self() Identity {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		ns = "pid:[?]"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	pid := os.Getpid()
	machine := host + "/" + ns
	// The process's start time tells this process from a later one that
	// gets its pid: a holder whose pid runs again, started at another
	// time, is dead.
	_, start := processStat(pid)
	if start == "" {
		start = "?"
	}
	owner := fmt.Sprintf("%s/%d/%s/%s", machine, pid, start, hex.EncodeToString(b[:]))
	return Identity{Owner: owner, Machine: machine, Host: host, PID: pid}
}

// Gone reports whether the holder named owner, with pid, is known to be
// dead: a process on this machine (and pid namespace) whose pid no longer
// runs, is a zombie, or runs a process that started at another time than
// the holder (the pid was reused). A holder elsewhere is never known dead
// here: only the expiry of its hold tells.
func (id Identity) Gone(owner string, pid int) bool {
	if !id.Local(owner) || pid <= 0 {
		return false
	}
	if !processAlive(pid) {
		return true
	}
	state, start := processStat(pid)
	if state == "Z" {
		return true
	}
	want := ownerStart(owner, id.Machine)
	return want != "" && start != "" && start != want
}

// Local reports whether the holder named owner ran on this machine, in this
// pid namespace, so that its pids mean the same processes here.
func (id Identity) Local(owner string) bool {
	return strings.HasPrefix(owner, id.Machine+"/")
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processStat returns the state of process pid (field 3 of
// /proc/PID/stat: "Z" for a zombie) and its start time in clock ticks
// after boot (field 22), or "" for both when they cannot be read.
func processStat(pid int) (state, start string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields that follow start after the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19]
}

// ownerStart returns the start time an owner name recorded for its
// process, or "" when it recorded none (an older cadence's hold).
func ownerStart(owner, machine string) string {
	rest, ok := strings.CutPrefix(owner, machine+"/")
	if !ok {
		return ""
	}
	f := strings.Split(rest, "/")
	if len(f) != 3 || f[1] == "?" {
		return ""
	}
	return f[1]
}
