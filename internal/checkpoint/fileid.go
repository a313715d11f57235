package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// fileID names one file on one file system: what stays the same while a
// file is renamed or written, and changes when the path is deleted and
// made again or another file is moved over it.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// statID returns the identity of the file at path now.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id, ok := idOf(fi)
	if !ok {
		return fileID{}, fmt.Errorf("stat %s: no device and inode on this system", path)
	}
	return id, nil
}

// samePath checks that path still names the file whose identity was id,
// and returns sentinel, naming path and what happened, when it does not.
func samePath(path string, id fileID, sentinel error) error {
	now, err := statID(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s no longer exists", sentinel, path)
	case err != nil:
		return fmt.Errorf("%w: %w", sentinel, err)
	case now != id:
		return fmt.Errorf("%w: %s is now another file (device %d inode %d, opened as device %d inode %d)",
			sentinel, path, now.dev, now.ino, id.dev, id.ino)
	}
	return nil
}
