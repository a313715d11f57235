//go:build unix && !linux

package supervise

import "syscall"

// raise sends sig to this process.
func raise(sig syscall.Signal) {
	_ = syscall.Kill(syscall.Getpid(), sig)
}

// dupTo makes descriptor to a copy of from (dup2).
func dupTo(from, to int) error { return syscall.Dup2(from, to) }
