//go:build unix && !linux

package agent

import (
	"os"
	"syscall"
)

// sysProcAttr puts the agent in a process group of its own, so that it and
// everything it starts can be signalled together. Only Linux offers a
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// supervisorProcAttr: without a parent-death signal the supervisor only
// leads the group.
func supervisorProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// growPipe leaves the pipe as it is: only Linux can enlarge one.
func growPipe(*os.File) {}
