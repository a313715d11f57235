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
// the whole group. It catches and drops SIGTERM, SIGINT and SIGHUP, which
// cadence sends to the whole group anyway, so that it outlives the agent and
// reports its end: the agent's exit code, or the same signal raised on
// itself.
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
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-orphaned:
		killOwnGroup()
		<-done
		return 1
	case err := <-done:
		return exitLike(cmd, err)
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
func exitLike(cmd *exec.Cmd, err error) int {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 1
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		raise(sig)
		// Delivery is asynchronous; wait for it. A signal that still does
		// not end this process (one the Go runtime keeps handling, such
		// as SIGSEGV): fall back to the shell's convention.
		time.Sleep(time.Second)
		return 128 + int(sig)
	}
	return cmd.ProcessState.ExitCode()
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
