package attempt

import (
	"io/fs"
	"syscall"
)

// statStamp is the inode and the stamp (without its sum) of a file's
// stat; false when the stat carries none.
func statStamp(fi fs.FileInfo) (fileID, outputStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, outputStamp{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, outputStamp{
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, true
}
