//go:build linux

package agent

import (
	"os"
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

// fSetPipeSize is F_SETPIPE_SZ of fcntl(2), which package syscall does not
// name.
const fSetPipeSize = 1031

// stdoutPipeSize is the buffer asked for an agent's stdout pipe: with the
// default 64 KiB, a transcript of hundreds of megabytes costs a context
// switch every 64 KiB between the agent and cadence.
const stdoutPipeSize = 1 << 20

// growPipe enlarges a pipe's buffer (F_SETPIPE_SZ); where the system
// refuses (a lower /proc/sys/fs/pipe-max-size), the pipe keeps its size.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, stdoutPipeSize)
		})
	}
}
