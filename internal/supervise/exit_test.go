package supervise

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSupervisorEndsLikeItsProgramLeavingNothing runs the supervisor (this
// test binary, see TestMain) around shell programs that end in different
// ways, some leaving processes behind that left the group or were
// orphaned. The supervisor must end as its program did, and no process the
// program started may be alive once the supervisor has exited: on the
// path where nothing is left it skips its walk of /proc, which must not
// let a survivor through.
func TestSupervisorEndsLikeItsProgramLeavingNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string // prints the pid of each process it leaves behind
		leaves int    // how many pids it prints
		code   int    // exit status, or -1 with sig
		sig    syscall.Signal
	}{
		{name: "exits 3, nothing left", script: "exit 3", code: 3},
		{name: "child in a session of its own", script: "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!", leaves: 1},
		{name: "child in a group of its own", script: "set -m; sleep 600 </dev/null >/dev/null 2>&1 & echo $!", leaves: 1},
		{name: "orphaned grandchild", script: "sh -c 'sleep 600 </dev/null >/dev/null 2>&1 & echo $!'", leaves: 1},
		{name: "two left, one of them orphaned", script: "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!; sh -c 'sleep 600 </dev/null >/dev/null 2>&1 & echo $!'", leaves: 2},
		{name: "child left, then killed by a signal", script: "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!; kill -TERM $$", leaves: 1, code: -1, sig: syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			sh, err := exec.LookPath("sh")
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, "--parent", strconv.Itoa(os.Getpid()), "--", sh, "-c", tc.script)
			cmd.Env = append(os.Environ(), helperEnv+"=1", "GORACE=atexit_sleep_ms=0")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var left []int
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
				if err != nil {
					t.Fatalf("program printed %q, want a pid", sc.Text())
				}
				left = append(left, pid)
			}
			t.Cleanup(func() {
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			err = cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil && tc.code == 0:
			case errors.As(err, &ee):
				ws := ee.Sys().(syscall.WaitStatus)
				if tc.code >= 0 && ws.ExitStatus() != tc.code || tc.code < 0 && (!ws.Signaled() || ws.Signal() != tc.sig) {
					t.Fatalf("supervisor ended with %v, want exit %d / signal %v", ws, tc.code, tc.sig)
				}
			default:
				t.Fatalf("supervisor: %v, want exit %d / signal %v", err, tc.code, tc.sig)
			}
			if len(left) != tc.leaves {
				t.Fatalf("program printed pids %v, want %d", left, tc.leaves)
			}
			for _, pid := range left {
				// The supervisor reaps what it kills before it exits, so
				// a survivor shows at once; the poll only covers the
				// kernel's bookkeeping of a process being torn down.
				deadline := time.Now().Add(2 * time.Second)
				for alive(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("process %d the program left is alive after the supervisor exited", pid)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}
