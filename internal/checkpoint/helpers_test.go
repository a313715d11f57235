package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a helper process, so tests can hold a lock or a
// write transaction in a real second process and kill it.
const (
	helperEnv     = "CHECKPOINT_TEST_HELPER" // which helper to run
	helperPathEnv = "CHECKPOINT_TEST_PATH"   // the directory or database it works on
	helperLockEnv = "CHECKPOINT_TEST_LOCK"   // the .cadence directory it locks, if not the database's
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode, os.Getenv(helperPathEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// runHelper takes a resource, prints "ready" and holds it until stdin closes.
func runHelper(mode, path string) error {
	waitStdin := func() { _, _ = io.Copy(io.Discard, os.Stdin) }
	switch mode {
	case "lock":
		l, err := AcquireLock(path)
		if err != nil {
			return err
		}
		fmt.Println("ready")
		waitStdin()
		return l.Release()
	case "write":
		// Holds the project lock and an open write transaction that has
		// inserted run "uncommitted", as a running cadence would.
		lockDir := os.Getenv(helperLockEnv)
		if lockDir == "" {
			lockDir = filepath.Dir(path)
		}
		l, err := AcquireLock(lockDir)
		if err != nil {
			return err
		}
		defer l.Release()
		s, err := Open(context.Background(), path)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.CreateRun(sampleRun("uncommitted", time.Now()), nil); err != nil {
				return err
			}
			fmt.Println("ready")
			waitStdin()
			return nil
		})
	case "relaxed":
		// Commits run "relaxed" with UpdateRelaxed, then dies by SIGKILL
		// before anything else is written: nothing is closed or synced.
		s, err := Open(context.Background(), path)
		if err != nil {
			return err
		}
		if err := s.UpdateRelaxed(context.Background(), func(tx *Tx) error {
			return tx.CreateRun(sampleRun("relaxed", time.Now()), nil)
		}); err != nil {
			return err
		}
		fmt.Println("ready")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "race":
		return runRaceHelper(path)
	case "synced-next":
		return runSyncedNextHelper(path, os.Getenv(syncCaseEnv))
	case "runs":
		return printRuns(path)
	}
	return fmt.Errorf("unknown helper %q", mode)
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHelper starts the test binary as a helper and waits for its "ready".
// env adds variables to its environment.
func startHelper(t *testing.T, mode, path string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode, helperPathEnv+"="+path), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper %s did not get ready: %q, %v", mode, line, err)
	}
	return h
}

// finish closes the helper's stdin and waits for it to exit cleanly.
func (h *helper) finish(t *testing.T) {
	t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
}

// newStore opens a fresh store in a temporary directory.
func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func update(t *testing.T, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// t0 is a timestamp with every nanosecond digit significant and a non-UTC
// zone, to catch precision loss and zone mix-ups.
var t0 = time.Date(2026, 11, 22, 15, 4, 5, 123456789, time.FixedZone("CET", 3600))

func sampleRun(id string, started time.Time) Run {
	return NewRun(Run{
		ID: id, WorkflowPath: ".cadence/workflow.yaml",
		WorkflowSHA256: strings.Repeat("ab", 32), WorkflowYAML: []byte("version: 1\n"),
	}, started)
}

func sampleStep(runID, id string, idx int) Step {
	return NewStep(Step{RunID: runID, ID: id, Idx: idx, Agent: "sim", MaxAttempts: 3}, t0)
}

func sampleAttempt(runID, stepID string, n int) Attempt {
	return Attempt{RunID: runID, StepID: stepID, N: n, Kind: KindInitial, status: AttemptRunning, StartedAt: t0}
}

// seedRun creates run id with the given steps, all pending.
func seedRun(t *testing.T, s *Store, id string, started time.Time, stepIDs ...string) {
	t.Helper()
	steps := make([]Step, len(stepIDs))
	for i, sid := range stepIDs {
		steps[i] = sampleStep(id, sid, i)
	}
	update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun(id, started), steps) })
}

func errorsJoin(errs ...error) error { return errors.Join(errs...) }
