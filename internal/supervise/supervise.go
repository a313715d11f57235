// Package supervise is the process cadence puts between itself and each
// agent or command it runs (`cadence agent supervise`), so that nothing the
// agent starts outlives the attempt or cadence (SPEC G6). It is a package
// of its own, importing only the standard library's lighter packages,
// because it runs once per attempt: see package supervise/early for how
// the supervisor starts without the rest of cadence's initialisation.
package supervise

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Main is the body of `cadence agent supervise --parent PID -- PROGRAM
// ARGS...`, a small process that cadence puts between itself and an agent
// when agent.Spec.Supervisor is set. The parent-death signal only reaches the
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
//
// With --standby in place of the program, the supervisor is started ahead
// of its attempt and takes its program from cadence later (see
// awaitOrder).
func Main(args []string, stderr io.Writer) int {
	standby := len(args) == 3 && args[2] == "--standby"
	if standby {
		// Its program comes later: parsed as one with a placeholder.
		args = []string{args[0], args[1], "--", "standby"}
	}
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
	if standby {
		return serve(parent, orphaned)
	}
	if gated && !waitGate() {
		// cadence never recorded this agent's start, or died: the agent
		// must not run unrecorded.
		return 1
	}
	attr := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
	proc, code := start(argv, attr, stderr)
	if proc == nil {
		return code
	}
	// The agent holds stdin and stdout now; the supervisor lets go of
	// them, so that cadence sees the end of the agent's stdout when the
	// agent closes it, not only when the supervisor exits.
	releaseStdio()
	r := supervise(proc, orphaned)
	if r.err != nil {
		fmt.Fprintf(stderr, "cadence agent supervise: wait for %s: %v\n", argv[0], r.err)
		return 1
	}
	return exitLike(r.status)
}

// start starts the program argv with attr: nil and the supervisor's exit
// code when it cannot, which it reports on stderr (StartPrefix).
//
// os.StartProcess, not os/exec, whose imports would be initialised before
// the supervisor starts (see package early); cadence passes the program
// as the absolute path it resolved.
func start(argv []string, attr *os.ProcAttr, stderr io.Writer) (*os.Process, int) {
	proc, err := os.StartProcess(argv[0], argv, attr)
	if err != nil {
		msg := argv[0] + ": " + err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Path + ": " + pe.Err.Error()
		}
		fmt.Fprintf(stderr, "%s%s\n", StartPrefix, msg)
		return nil, StartFailed
	}
	return proc, 0
}

// supervise waits for the started program to end and then kills every
// process descended from the supervisor; on the parent-death signal (or
// cadence's SIGUSR1) it kills them all and the group, itself included.
// The result's clean says no descendant is left.
func supervise(proc *os.Process, orphaned <-chan os.Signal) waitResult {
	// Not proc.Wait: orphans reparented to the supervisor are its children
	// too, and are reaped as they exit.
	done := make(chan waitResult, 1)
	go func() { done <- reapUntil(proc.Pid) }()
	select {
	case <-orphaned:
		killDescendants()
		killOwnGroup()
		os.Exit(1) // not reached: killed with the group
		return waitResult{}
	case r := <-done:
		r.clean = killDescendants()
		return r
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

// waitResult is how the agent ended, and whether every process it
// started has been killed and reaped since (clean).
type waitResult struct {
	status syscall.WaitStatus
	err    error
	clean  bool
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

// KillBound bounds how long the supervisor keeps killing its
// descendants: a process that forks as fast as it is killed is still
// killed with the group by cadence afterwards.
const KillBound = 5 * time.Second

// killDescendants kills every process descended from the supervisor,
// waits for those reparented to it, and repeats until none is left: a
// process started between a scan and the kill is found by the next scan.
//
// Every descendant descends from one of the supervisor's children: the
// agent's orphans are reparented to it, a child subreaper, before the
// agent's exit can be reaped. So once no child is left, none is left at
// all, and the walk of /proc that finds grandchildren (a millisecond and
// more on a busy machine, at the end of every attempt) is skipped: the
// usual command or agent leaves nothing behind. It reports whether none
// is left: false when KillBound passed first.
func killDescendants() bool {
	deadline := time.Now().Add(KillBound)
	for {
		if !reapAll() {
			return true
		}
		pids := descendants(os.Getpid())
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !reapAll() {
			return true
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reapAll reaps the children that have exited, without waiting, and
// reports whether any child is left (or whether that is unknown).
func reapAll() bool {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD):
			return false
		case err != nil || got <= 0:
			return true
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
// of the ExtraFiles of the exec.Cmd that starts it.
const gateFD = 3

// How the supervisor reports that it could not start the program: this
// exit code, and a last line of stderr that starts with the prefix.
const (
	StartFailed = 127
	StartPrefix = "cadence agent supervise: start "
)

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
