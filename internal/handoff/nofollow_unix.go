//go:build unix

package handoff

import "syscall"

// noFollow makes opening a handoff file fail if it was replaced by a
// symbolic link after it was checked.
const noFollow = syscall.O_NOFOLLOW
