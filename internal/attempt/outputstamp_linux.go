package attempt

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// statStamp is the inode and the stamp (without its sum) of a file's
// stat; false when the stat carries none.
func statStamp(fi fs.FileInfo) (fileID, outputStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, outputStamp{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, outputStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

// statAt is statStamp of the regular file name in the directory d, by a
// stat relative to d that does not follow a link (a path walked once per
// directory, not once per file); false for anything else.
func statAt(d *os.File, name string) (fileID, outputStamp, bool) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, outputStamp{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, outputStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
