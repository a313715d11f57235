//go:build unix

package agent

import (
	"os"
	"path/filepath"
	"syscall"
)

// systemFileSecure reports whether Gemini CLI reads a system settings
// file at path: the file and every folder above it must belong to root
// and be writable by no group and no other user, with no symbolic link on
// the way (Gemini CLI checks links too; refusing them keeps this simple).
// A file it refuses is skipped with a security warning, so the preset does
// not offer one.
func systemFileSecure(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}
