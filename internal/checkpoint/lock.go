package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the name of the lock file inside the .cadence directory.
const LockFileName = "lock"

// LockedError reports that another process holds the project lock (G7).
type LockedError struct {
	PID int    // the holder's pid, 0 if it had not written it yet
	Dir string // the project directory
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("another cadence process holds the lock on %s", e.Dir)
	}
	return fmt.Sprintf("another cadence process (pid %d) holds the lock on %s", e.PID, e.Dir)
}

// Lock is the held project lock.
type Lock struct {
	f    *os.File
	path string
	id   fileID // the locked file's identity, for Check
}

// AcquireLock takes the project lock: an exclusive, non-blocking flock on
// cadenceDir/lock, where cadenceDir is the project's .cadence directory
// (created 0o755 if missing). It writes the holder's pid into the file for
// the message other processes show. If another process holds the lock it
// returns *LockedError at once. The operating system releases the lock when
// the process dies, however it dies, so a crash never leaves a stale lock.
func AcquireLock(cadenceDir string) (*Lock, error) {
	return AcquireLockNamed(cadenceDir, LockFileName)
}

// WorkflowLockName is the name of the lock file, in the .cadence
// directory, that one workflow's runs are worked under: LockFileName for
// the project's .cadence/workflow.yaml, "lock-" and the file's path made
// safe (SafeName) for another. Runs of different workflows are worked at
// the same time under their own locks; two processes never work runs of
// one workflow at once (G7), which has at most one unfinished run.
func WorkflowLockName(workflowRel string) string {
	if workflowRel == "" || filepath.Clean(workflowRel) == filepath.Join(CadenceDir, "workflow.yaml") {
		return LockFileName
	}
	return LockFileName + "-" + SafeName(filepath.ToSlash(filepath.Clean(workflowRel)))
}

// AcquireLockNamed is AcquireLock on the lock file name in cadenceDir.
func AcquireLockNamed(cadenceDir, name string) (*Lock, error) {
	projectDir := filepath.Dir(filepath.Clean(cadenceDir))
	if err := os.MkdirAll(cadenceDir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", projectDir, err)
	}
	path := filepath.Join(cadenceDir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", projectDir, err)
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := readPID(f)
			f.Close()
			return nil, &LockedError{PID: pid, Dir: projectDir}
		}
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := writePID(f); err != nil {
		_ = flock(f, syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = flock(f, syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	id, _ := idOf(fi)
	l := &Lock{f: f, path: path, id: id}
	// The file may have been deleted between the open and the flock, by a
	// holder releasing it or by hand: a lock on a file no path names
	// keeps nobody out.
	if err := l.Check(); err != nil {
		_ = flock(f, syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", projectDir, err)
	}
	return l, nil
}

// Check returns ErrLockGone, naming the file, when the lock file's path no
// longer names the file this lock holds: someone deleted it (or moved
// another file over it), and another process may now take a lock on the
// new file. The holder must then stop; the run's holder row in the state
// (the run lease) still keeps a second process from running the run
// meanwhile. It costs a stat(2).
func (l *Lock) Check() error {
	if l.f == nil {
		return fmt.Errorf("check lock: %w", os.ErrClosed)
	}
	return samePath(l.path, l.id, ErrLockGone)
}

// Release clears the pid and releases the lock. Releasing twice is an error.
func (l *Lock) Release() error {
	if l.f == nil {
		return fmt.Errorf("release lock: %w", os.ErrClosed)
	}
	f := l.f
	l.f = nil
	// Clear the pid while still holding the lock, so nobody reads a stale one.
	terr := f.Truncate(0)
	uerr := flock(f, syscall.LOCK_UN)
	cerr := f.Close()
	if err := errors.Join(terr, uerr, cerr); err != nil {
		return fmt.Errorf("release lock %s: %w", f.Name(), err)
	}
	return nil
}

// flock calls flock(2), retrying when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return f.Sync()
}

// readPID returns the pid written in the lock file, or 0 if it holds none.
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// LockHolder returns the pid of the process that holds the project lock of
// cadenceDir, or 0 when none does. It never takes the lock itself, so it
// cannot make a cadence that is starting fail: it reads the pid the holder
// wrote and checks that the process is alive. A crashed holder leaves its
// pid behind and is reported as none once it is gone.
func LockHolder(cadenceDir string) int {
	f, err := os.Open(filepath.Join(cadenceDir, LockFileName))
	if err != nil {
		return 0
	}
	defer f.Close()
	pid := readPID(f)
	if pid == 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0
	}
	return pid
}
