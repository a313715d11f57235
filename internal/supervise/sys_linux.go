//go:build linux

package supervise

import (
	"runtime"
	"syscall"
)

// raise sends sig to the calling thread, which the kernel then delivers
// before the thread runs on: a signal sent to the process as a whole may be
// taken by another thread after this one has already gone on to exit.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), sig)
}

// dupTo makes descriptor to a copy of from (dup2).
func dupTo(from, to int) error { return syscall.Dup3(from, to, 0) }
