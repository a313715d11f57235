package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFileAtomic writes data to a temporary file in path's directory,
// fsyncs it, renames it over path and fsyncs the directory, so that after a
// crash path holds either its old content or all of data, never a mix.
// Parent directories are created (0o755) as needed. The file gets exactly
// perm (the umask does not apply).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := CreateAtomic(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Abort())
	}
	return f.Commit()
}

// WriteFileAtomicNoSync is WriteFileAtomic without any fsync, for a file
// that is a copy of committed state and is checked against that state
// before anything relies on it (CreateAtomicNoSync): a crash of the
// process leaves path with its old content or all of data, a power cut
// may leave it missing, empty or old.
func WriteFileAtomicNoSync(path string, data []byte, perm os.FileMode) error {
	f, err := CreateAtomicNoSync(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Abort())
	}
	return f.Commit()
}

// AtomicFile is a file being written at a temporary name beside its final
// path. Nothing appears at the final path until Commit. Use it for output
// that is streamed rather than held in memory.
type AtomicFile struct {
	f    *os.File
	path string
	perm os.FileMode
	done bool
	// noSync skips every fsync (CreateAtomicNoSync).
	noSync bool
}

// CreateAtomicNoSync is CreateAtomic for a copy that no guarantee depends
// on, such as an attempt's transcript, kept for people and tools to read:
// it is still published whole by a rename, so a crash of the process never
// leaves half of it at path, but nothing is fsynced, so after a power cut
// it may be missing or short. An fsync of a transcript of hundreds of MB,
// and of its directory, would otherwise be paid by every attempt.
func CreateAtomicNoSync(path string, perm os.FileMode) (*AtomicFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	return &AtomicFile{f: f, path: path, perm: perm, noSync: true}, nil
}

// CreateAtomic returns a file open for writing at a temporary name beside
// path, creating parent directories (0o755) as needed. Call Commit to
// publish it at path, or Abort to discard it; Abort after Commit does
// nothing, so `defer f.Abort()` is safe.
func CreateAtomic(path string, perm os.FileMode) (*AtomicFile, error) {
	dir := filepath.Dir(path)
	if err := mkdirAllSynced(dir); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	return &AtomicFile{f: f, path: path, perm: perm}, nil
}

// Write implements io.Writer.
func (a *AtomicFile) Write(p []byte) (int, error) {
	if a.done {
		return 0, fmt.Errorf("write %s: %w", a.path, os.ErrClosed)
	}
	n, err := a.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", a.path, err)
	}
	return n, nil
}

// Commit makes the written data durable and visible at the final path:
// fsync, close, rename over the path, fsync the directory. On failure the
// temporary file is removed and the path keeps its old content.
func (a *AtomicFile) Commit() error {
	if a.done {
		return fmt.Errorf("commit %s: %w", a.path, os.ErrClosed)
	}
	a.done = true
	tmp := a.f.Name()
	err := a.f.Chmod(a.perm)
	if err == nil && !a.noSync {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("commit %s: %w", a.path, err)
	}
	if a.noSync {
		return nil
	}
	if err := syncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("commit %s: %w", a.path, err)
	}
	return nil
}

// Abort discards the temporary file. It does nothing after Commit or a
// previous Abort.
func (a *AtomicFile) Abort() error {
	if a.done {
		return nil
	}
	a.done = true
	tmp := a.f.Name()
	cerr := a.f.Close()
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("abort %s: %w", a.path, err)
	}
	if cerr != nil {
		return fmt.Errorf("abort %s: %w", a.path, cerr)
	}
	return nil
}

// SyncDir fsyncs a directory, so that the creation, removal or renaming
// of a name in it survives a power cut.
func SyncDir(dir string) error { return syncDir(dir) }

// MkdirAllSynced creates dir and its missing parents (0o755), each made
// durable in its parent, as CreateAtomic does for the directories of the
// files it writes.
func MkdirAllSynced(dir string) error { return mkdirAllSynced(dir) }

// syncDir fsyncs a directory so a rename in it survives a power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// mkdirAllSynced creates dir and its missing parents like os.MkdirAll, and
// fsyncs the parent of each directory it creates, so that after a power
// cut a new directory, and the file renamed into it, are still there.
func mkdirAllSynced(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return syncDir(parent)
}
