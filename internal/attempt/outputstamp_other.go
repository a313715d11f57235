//go:build !linux

package attempt

import (
	"io/fs"
	"os"
)

// statStamp gives no stamp outside Linux: every check reads the file.
func statStamp(fs.FileInfo) (fileID, outputStamp, bool) {
	return fileID{}, outputStamp{}, false
}

// statAt gives no stamp outside Linux.
func statAt(*os.File, string) (fileID, outputStamp, bool) {
	return fileID{}, outputStamp{}, false
}
