package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supervise is the body of `cadence agent supervise --parent PID -- PROGRAM
// ARGS...`, a small process that cadence puts between itself and an agent
// when Spec.Supervisor is set. The parent-death signal only reaches the
// process cadence started; an agent that is a launcher (an npm shim, say)
// leaves its real work to a child that would survive a SIGKILLed cadence.
// The supervisor leads the agent's process group, gets the parent-death
// signal itself (SIGUSR1, which it can catch), and answers it by killing
// every process descended from it and then the whole group. It catches and
// drops SIGTERM, SIGINT and SIGHUP, which cadence sends to the whole group
// anyway, so that it outlives the agent and reports its end: the agent's
// exit code, or the same signal raised on itself.
//
// A process can leave the group (setsid, setpgid: a daemonising tool,
// Node's detached spawn, an agent's background shell), and one whose
// parent exits is reparented. So the supervisor is a child subreaper
// (Linux): every orphan among its descendants is reparented to it, not to
// init, and stays its descendant. When the agent ends, however it ends,
// and when cadence sends SIGUSR1 instead of a SIGKILL of the group, the
// supervisor kills all its descendants, waits for them, and only then
// exits: nothing the agent started outlives the attempt.
//
// Catching, not ignoring: an ignored signal stays ignored across exec, so
// an agent started by a supervisor that ignored SIGTERM could not be
// stopped by it, nor could any tool it starts. A caught signal reverts to
// its default in the child, so the agent gets the dispositions cadence was
// started with.
func Supervise(args []string, stderr io.Writer) int {
	parent, gated, argv, err := parseSupervise(args)
	if err != nil {
		fmt.Fprintf(stderr, "cadence agent supervise: %v\n", err)
		return 2
	}
	stops := make(chan os.Signal, 1)
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		// A signal ignored by the environment cadence was started in
		// (nohup's SIGHUP) stays ignored, for the agent too.
		if !signal.Ignored(sig) {
			signal.Notify(stops, sig)
		}
	}
	go func() {
		for range stops { // dropped: the agent gets its own copy
		}
	}()
	orphaned := make(chan os.Signal, 1)
	signal.Notify(orphaned, syscall.SIGUSR1)
	if os.Getppid() != parent {
		// cadence died before the parent-death signal was armed.
		killOwnGroup()
		return 1
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(stderr, "cadence agent supervise: %v\n", err)
		return 1
	}
	if gated && !waitGate() {
		// cadence never recorded this agent's start, or died: the agent
		// must not run unrecorded.
		return 1
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		msg := argv[0] + ": " + err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Path + ": " + pe.Err.Error()
		}
		fmt.Fprintf(stderr, "%s%s\n", superviseStartPrefix, msg)
		return superviseStartFailed
	}
	// The agent holds stdin and stdout now; the supervisor lets go of
	// them, so that cadence sees the end of the agent's stdout when the
	// agent closes it, not only when the supervisor exits.
	releaseStdio()
	// Not cmd.Wait: orphans reparented to the supervisor are its children
	// too, and are reaped as they exit.
	done := make(chan waitResult, 1)
	go func() { done <- reapUntil(cmd.Process.Pid) }()
	select {
	case <-orphaned:
		killDescendants()
		killOwnGroup()
		return 1
	case r := <-done:
		killDescendants()
		if r.err != nil {
			fmt.Fprintf(stderr, "cadence agent supervise: wait for %s: %v\n", argv[0], r.err)
			return 1
		}
		return exitLike(r.status)
	}
}

// releaseStdio points the supervisor's own stdin and stdout at /dev/null.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	for _, fd := range []int{0, 1} {
		_ = dupTo(int(null.Fd()), fd)
	}
}

// waitResult is how the agent ended.
type waitResult struct {
	status syscall.WaitStatus
	err    error
}

// reapUntil reaps this process's children, the orphans reparented to it
// included, until pid has exited, and returns pid's status.
func reapUntil(pid int) waitResult {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return waitResult{err: err}
		case got == pid:
			return waitResult{status: ws}
		}
	}
}

// killDescendantsBound bounds how long the supervisor keeps killing its
// descendants: a process that forks as fast as it is killed is still
// killed with the group by cadence afterwards.
const killDescendantsBound = 5 * time.Second

// killDescendants kills every process descended from the supervisor,
// waits for those reparented to it, and repeats until none is left: a
// process started between a scan and the kill is found by the next scan.
func killDescendants() {
	deadline := time.Now().Add(killDescendantsBound)
	for {
		pids := descendants(os.Getpid())
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		reapAll()
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reapAll reaps the children that have exited, without waiting.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
	}
}

func parseSupervise(args []string) (int, bool, []string, error) {
	const usage = "usage: --parent PID [--gate] -- PROGRAM [ARGS...]"
	if len(args) < 3 || args[0] != "--parent" {
		return 0, false, nil, errors.New(usage)
	}
	parent, err := strconv.Atoi(args[1])
	if err != nil || parent <= 0 {
		return 0, false, nil, fmt.Errorf("bad parent pid %q", args[1])
	}
	argv := args[2:]
	gate := false
	if argv[0] == "--gate" {
		gate, argv = true, argv[1:]
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return 0, false, nil, errors.New(usage)
	}
	return parent, gate, argv, nil
}

// killOwnGroup kills every process of the supervisor's group, itself
// included.
func killOwnGroup() {
	_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
}

// exitLike ends the supervisor the way the agent ended, so that cadence
// reads the agent's own exit status.
func exitLike(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		raise(sig)
		// Delivery is asynchronous; wait for it. A signal that still does
		// not end this process (one the Go runtime keeps handling, such
		// as SIGSEGV): fall back to the shell's convention.
		time.Sleep(time.Second)
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}

// gateFD is the descriptor of the start gate in the supervisor: the first
// of exec.Cmd's ExtraFiles.
const gateFD = 3

// withGate adds --gate to a supervisor's argv, before its "--".
func withGate(args []string) []string {
	for i, a := range args {
		if a == "--" {
			out := append(append(append([]string(nil), args[:i]...), "--gate"), args[i:]...)
			return out
		}
	}
	return args
}

// waitGate reads the start gate: true when cadence opened it (one byte),
// false when its end was closed without (cadence died, or gave up on the
// attempt before recording it).
func waitGate() bool {
	f := os.NewFile(gateFD, "gate")
	if f == nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n == 1
}

// supervised returns the program and argv that run argv under the
// supervisor at self.
func supervised(self, path string, argv []string) (string, []string) {
	wrapped := append([]string{self, "agent", "supervise", "--parent", strconv.Itoa(os.Getpid()), "--", path}, argv[1:]...)
	return self, wrapped
}

// How the supervisor reports that it could not start the program: this
// exit code, and a last line of stderr that starts with the prefix.
const (
	superviseStartFailed = 127
	superviseStartPrefix = "cadence agent supervise: start "
)

// superviseStartError returns the supervisor's report of a program it
// could not start, from the end of the process's stderr.
func superviseStartError(stderrTail string) (string, bool) {
	lines := strings.Split(strings.TrimRight(stderrTail, "\n"), "\n")
	last := lines[len(lines)-1]
	msg, ok := strings.CutPrefix(last, superviseStartPrefix)
	if !ok {
		return "", false
	}
	return msg, true
}
