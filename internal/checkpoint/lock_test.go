package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockExcludesAndReleases(t *testing.T) {
	project := t.TempDir()
	cadenceDir := filepath.Join(project, ".cadence")
	l, err := AcquireLock(cadenceDir)
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(cadenceDir, LockFileName))
	if err != nil || strings.TrimSpace(string(content)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q (%v), want our pid %d", content, err, os.Getpid())
	}

	// flock conflicts between open files even within one process.
	_, err = AcquireLock(cadenceDir)
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("second AcquireLock: %v, want *LockedError", err)
	}
	want := fmt.Sprintf("another cadence process (pid %d) holds the lock on %s", os.Getpid(), project)
	if locked.PID != os.Getpid() || err.Error() != want {
		t.Fatalf("error %q (pid %d), want %q", err, locked.PID, want)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err == nil {
		t.Error("a second Release succeeded")
	}
	l2, err := AcquireLock(cadenceDir)
	if err != nil {
		t.Fatalf("AcquireLock after Release: %v", err)
	}
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}
}

// The OS releases the lock of a process that dies without cleaning up
// (kill -9, a crash), so a crashed run never blocks the next one.
func TestLockReleasedWhenHolderIsKilled(t *testing.T) {
	cadenceDir := filepath.Join(t.TempDir(), ".cadence")
	h := startHelper(t, "lock", cadenceDir)
	pid := h.cmd.Process.Pid

	_, err := AcquireLock(cadenceDir)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != pid {
		t.Fatalf("AcquireLock while pid %d holds it: %v, want LockedError naming it", pid, err)
	}

	if err := h.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	if err := h.cmd.Wait(); err == nil {
		t.Fatal("the killed helper exited cleanly")
	}

	l, err := AcquireLock(cadenceDir)
	if err != nil {
		t.Fatalf("AcquireLock after the holder was killed: %v", err)
	}
	content, err := os.ReadFile(filepath.Join(cadenceDir, LockFileName))
	if err != nil || strings.TrimSpace(string(content)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (%v), want our pid, not the dead holder's", content, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
