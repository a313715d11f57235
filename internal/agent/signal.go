//go:build unix

package agent

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to every process of the group led by pgid. A group
// that is already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
