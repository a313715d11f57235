//go:build linux

package agent

import "syscall"

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
