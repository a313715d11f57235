package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// helperSpec runs the test binary as the helper agent with the given args.
func helperSpec(t *testing.T, args ...string) agent.Spec {
	t.Helper()
	return agent.Spec{
		Argv:  append([]string{selfExe(t)}, args...),
		Env:   helperEnviron(),
		Dir:   t.TempDir(),
		Grace: time.Second,
	}
}

// helperEnviron is the environment of helper processes: this test's, but
// for CADENCE_* variables (the test may itself run inside a cadence step),
// so that the simulated agent sees only those a test sets. The race
// runtime otherwise sleeps a second at every successful exit of the test
// binary.
func helperEnviron(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CADENCE_") {
			env = append(env, kv)
		}
	}
	env = append(env, helperEnv+"=1", "GORACE=atexit_sleep_ms=0")
	return append(env, extra...)
}

func selfExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	return exe
}

func mustRun(t *testing.T, ctx context.Context, spec agent.Spec) *agent.Result {
	t.Helper()
	res, err := agent.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Argv, err)
	}
	return res
}

// processGone reports whether pid no longer runs. A zombie counts as gone:
// it has exited and only waits for its new parent to reap it.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if rerr != nil {
		return errors.Is(rerr, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// waitGone polls, with a bound, until every pid is gone.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still running after Run returned", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// watchWriter is an Output that runs fire once when the output so far
// contains want: tests act on what the agent printed instead of sleeping.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	fire func()
	done bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		w.fire()
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// fmtSscanf reads the "pids PARENT CHILD" line of the tree helper, which
// the child's own "sleeping" line may precede: both write to one stdout.
func fmtSscanf(s string, parent, child *int) (int, error) {
	if i := strings.Index(s, "pids "); i >= 0 {
		s = s[i:]
	}
	return fmt.Sscanf(s, "pids %d %d", parent, child)
}
