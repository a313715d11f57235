//go:build !linux

package attempt

import "io/fs"

// statStamp gives no stamp outside Linux: every check reads the file.
func statStamp(fs.FileInfo) (fileID, outputStamp, bool) {
	return fileID{}, outputStamp{}, false
}
