//go:build linux

package agent

import (
	"runtime"
	"syscall"
)

// sysProcAttr puts the agent in a process group of its own, so that it and
// everything it starts can be signalled together, and asks the kernel to
// SIGKILL it if cadence dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// supervisorProcAttr starts the supervisor (see Supervise) as the leader of
// the agent's group, with a parent-death signal it catches to kill the
// group.
func supervisorProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGUSR1}
}

// raise sends sig to the calling thread, which the kernel then delivers
// before the thread runs on: a signal sent to the process as a whole may be
// taken by another thread after this one has already gone on to exit.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), sig)
}
