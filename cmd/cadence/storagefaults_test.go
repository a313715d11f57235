package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"

	_ "modernc.org/sqlite" // the driver behind database/sql "sqlite"
)

// twoStepProject is two sim steps that succeed at once; sleep delays step
// one's answer so a test can act while its agent runs.
func twoStepProject(t *testing.T, sleep string) *project {
	t.Helper()
	return newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}', sleep: ` + sleep + `}]
  two: [{answer: '{"ok": true}'}]
`})
}

func (p *project) statePath() string { return filepath.Join(p.dir, ".cadence", "state.db") }

// holdWriteLock opens the project's state.db in this process and holds its
// write lock (an open BEGIN IMMEDIATE transaction) until release is called.
// It returns once the lock is held.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	st, err := checkpoint.Open(ctx, path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	held, unblock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.Update(ctx, func(*checkpoint.Tx) error {
			close(held)
			<-unblock
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("take the write lock: %v", err)
	}
	release = sync.OnceFunc(func() {
		close(unblock)
		if err := <-done; err != nil {
			t.Errorf("the held transaction: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Cleanup(release)
	return release
}

// TestStorageBusyShortHold holds state.db's write lock from another
// connection for less than cadence's 10 s busy timeout while a new run
// starts: cadence waits for it, then runs to success.
func TestStorageBusyShortHold(t *testing.T) {
	p := twoStepProject(t, "0s")
	p.cadence(nil, "run").exits(t, 0)
	first := p.inspect().Run.ID

	release := holdWriteLock(t, p.statePath())
	const hold = 1500 * time.Millisecond
	releasedAt := make(chan time.Time, 1)
	timer := time.AfterFunc(hold, func() { releasedAt <- time.Now(); release() })
	defer timer.Stop()
	r := p.cadence(nil, "run")
	r.noPanic(t)
	r.exits(t, 0)
	released := <-releasedAt

	rep := p.inspect()
	if rep.Run.ID == first || rep.Run.Status != "succeeded" {
		t.Fatalf("latest run %s %s, want a new succeeded run", rep.Run.ID, rep.Run.Status)
	}
	if started := step(rep, "one").Attempts[0].StartedAt; started.Before(released) {
		t.Errorf("the first attempt started at %s, before the lock was released at %s", started, released)
	}
}

// TestStorageBusyLongHold takes state.db's write lock while an agent runs
// and keeps it past the busy timeout, so the attempt's outcome cannot be
// committed: cadence must fail clearly, keep what was committed, and a
// resume afterwards must finish the run without running the step again.
func TestStorageBusyLongHold(t *testing.T) {
	p := twoStepProject(t, "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.command(ctx, nil, "run")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "step one's agent to start", func() bool { return len(p.executions("one")) == 1 })
	release := holdWriteLock(t, p.statePath())
	held := time.Now()
	r := p.finish(cmd, cmd.Wait(), out.String(), errb.String())
	waited := time.Since(held)
	release()
	t.Logf("cadence gave up after %s:\n%s", waited.Round(time.Millisecond), r.stderr)
	r.noPanic(t)
	if r.code == 0 || r.signal != 0 {
		t.Fatalf("cadence exited %d (signal %v) although it could not commit", r.code, r.signal)
	}
	if waited < checkpoint.DefaultBusyTimeout-time.Second {
		t.Errorf("cadence gave up after %s, before its %s busy timeout", waited, checkpoint.DefaultBusyTimeout)
	}
	low := strings.ToLower(r.stderr)
	if !strings.Contains(low, "lock") || !strings.Contains(low, "busy") {
		t.Errorf("stderr does not say the database was locked past the busy timeout:\n%s", r.stderr)
	}

	// What was committed before the lock was taken is all there.
	rep := p.inspect()
	one := step(rep, "one")
	if len(one.Attempts) != 1 || one.Attempts[0].Status != "running" || one.Attempts[0].PID == nil {
		t.Fatalf("step one after the failure: %+v, want its committed running attempt with a pid", one.Attempts)
	}
	p.cadence(nil, "resume").exits(t, 0)
	if n := len(p.executions("one")); n != 1 {
		t.Errorf("step one executed %d times, want 1: its landed handoff must be adopted", n)
	}
	rep = p.inspect()
	if rep.Run.Status != "succeeded" || step(rep, "one").Attempts[0].Status != "adopted" {
		t.Errorf("after resume: run %s, step one %+v, want succeeded with an adopted attempt", rep.Run.Status, step(rep, "one").Attempts)
	}
}

// failingProject is a one-step workflow whose first attempt fails its
// schema (after stdoutBytes of filler) and whose second succeeds.
func failingProject(t *testing.T, stdoutBytes string) *project {
	t.Helper()
	p := newProject(t, simWorkflow(`{max_attempts: 4, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {answer: '{"ok": "no"}', stdout_bytes: ` + stdoutBytes + `}
    - {answer: '{"ok": true}'}
`})
	return p
}

// readOnly makes dir unwritable for this process: a chmod for an ordinary
// user, a read-only bind mount for root (whom permission bits do not stop).
// The returned function makes it writable again.
func readOnly(t *testing.T, dir string) (undo func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "state.db")
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
		return func() { _ = os.Chmod(dir, 0o755); _ = os.Chmod(db, 0o644) }
	}
	mount(t, "--bind", dir, dir)
	mountOnce(t, "-o", "remount,bind,ro", dir)
	return func() { unmount(t, dir) }
}

// mount runs mount(8); this test needs the privilege to mount, and says so
// when it does not have it.
func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v\n%s(this test needs root with CAP_SYS_ADMIN to simulate the fault)", args, err, out)
	}
	target := args[len(args)-1]
	t.Cleanup(func() { _ = exec.Command("umount", target).Run() })
}

// mountOnce runs mount(8) on an existing mount point (a remount).
func mountOnce(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v\n%s", args, err, out)
	}
}

func unmount(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v\n%s", dir, err, out)
	}
}

// TestStorageReadOnly makes .cadence/ read-only under an interrupted run:
// resume fails clearly without a panic, and once it is writable again the
// run resumes with the exact committed counts.
func TestStorageReadOnly(t *testing.T) {
	p := failingProject(t, "0")
	p.cadence([]string{"CADENCE_FAILPOINT=after-outcome-commit"}, "run").killed(t)
	undo := readOnly(t, filepath.Join(p.dir, ".cadence"))
	sum := fileSum(t, p.statePath())

	for _, cmd := range []string{"resume", "run"} {
		r := p.cadence(nil, cmd)
		t.Logf("%s on a read-only .cadence/: exit %d: %s", cmd, r.code, r.stderr)
		r.noPanic(t)
		if r.code == 0 || r.code == 3 || r.signal != 0 {
			t.Errorf("%s on a read-only .cadence/ exited %d (signal %v), want a failure", cmd, r.code, r.signal)
		}
		if low := strings.ToLower(r.stderr); !strings.Contains(low, "read-only") && !strings.Contains(low, "permission denied") {
			t.Errorf("%s: stderr does not say the state is read-only:\n%s", cmd, r.stderr)
		}
	}
	if s := step(p.inspect(), "one"); s.AttemptsUsed != 1 {
		t.Errorf("inspect on the read-only state: attempts_used %d, want 1", s.AttemptsUsed)
	}
	undo()
	if fileSum(t, p.statePath()) != sum {
		t.Error("state.db changed although it was read-only")
	}

	p.cadence(nil, "resume").exits(t, 0)
	if n := len(p.executions("one")); n != 2 {
		t.Errorf("executions %d, want 2: one before, one after the read-only spell", n)
	}
	s := step(p.inspect(), "one")
	if s.AttemptsUsed != 2 || s.Attempts[0].Class != "schema" || s.Attempts[1].Status != "succeeded" {
		t.Errorf("attempts %+v, want the committed schema failure then a success", s.Attempts)
	}
}

// TestStorageDiskFull runs with .cadence/ on a 1 MiB tmpfs and an agent
// whose first attempts print 400 KiB each: the disk fills up. cadence must
// stop with a clear error, and state.db must still be readable; once the
// file system is enlarged the run resumes, keeping every committed attempt.
func TestStorageDiskFull(t *testing.T) {
	const bad = `{answer: '{"ok": "no"}', stdout_bytes: 409600}`
	p := newProject(t, simWorkflow(`{max_attempts: 8, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one: [` + bad + `, ` + bad + `, ` + bad + `, ` + bad + `, {answer: '{"ok": true}'}]
`})
	cad := filepath.Join(p.dir, ".cadence")
	wf, err := os.ReadFile(filepath.Join(cad, "workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mount(t, "-t", "tmpfs", "-o", "size=1m", "tmpfs", cad)
	if err := os.WriteFile(filepath.Join(cad, "workflow.yaml"), wf, 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.cadence(nil, "run")
	t.Logf("exit %d\n%s", r.code, r.stderr)
	r.noPanic(t)
	if r.code == 0 || r.signal != 0 {
		t.Fatalf("cadence exited %d (signal %v) on a full disk", r.code, r.signal)
	}
	if low := strings.ToLower(r.stderr); !strings.Contains(low, "no space left") && !strings.Contains(low, "disk is full") {
		t.Errorf("stderr does not say the disk is full:\n%s", r.stderr)
	}
	before := step(p.inspect(), "one")
	t.Logf("attempts committed before the disk filled: %d", before.AttemptsUsed)
	if before.AttemptsUsed == 0 {
		t.Fatal("inspect shows no committed attempt after the disk filled")
	}

	// Make room, as a user would, then resume.
	mountOnce(t, "-o", "remount,size=64m", cad)
	r = p.cadence(nil, "resume")
	r.noPanic(t)
	r.exits(t, 0)
	after := step(p.inspect(), "one")
	if after.Status != "succeeded" || after.AttemptsUsed < before.AttemptsUsed {
		t.Fatalf("after resume: %s with %d attempts, want succeeded keeping the %d committed", after.Status, after.AttemptsUsed, before.AttemptsUsed)
	}
	for i, a := range before.Attempts {
		if a.Status == "failed" && (after.Attempts[i].Status != "failed" || after.Attempts[i].Class != a.Class) {
			t.Errorf("attempt %d was %s/%s before, %s/%s after resume", a.N, a.Status, a.Class, after.Attempts[i].Status, after.Attempts[i].Class)
		}
	}
	if n := len(p.executions("one")); n != len(after.Attempts) {
		t.Errorf("%d executions for %d recorded attempts: an execution went unrecorded", n, len(after.Attempts))
	}
}

// corruptions damage a copy of a good state.db in the ways a crash of the
// disk or a careless user would.
var corruptions = []struct {
	name string
	fn   func(b []byte) []byte
}{
	{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }},
	{"random bytes in the middle", func(b []byte) []byte {
		rnd := rand.New(rand.NewPCG(1, 2))
		for i := len(b) / 4; i < 3*len(b)/4; i++ {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}},
	{"garbage header", func(b []byte) []byte { copy(b, "this is not a database, it is a text file\n"); return b }},
}

// TestStorageCorruptDatabase damages state.db after a run and checks that
// resume, run and inspect each fail with exit 2 and a message naming the
// file and its state, never a panic, and that the damaged file is left as it
// was (nothing overwrites what a recovery tool might still save).
func TestStorageCorruptDatabase(t *testing.T) {
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := failingProject(t, "20000")
			p.cadence([]string{"CADENCE_FAILPOINT=after-outcome-commit"}, "run").killed(t)
			ran := len(p.executions("one"))
			path := p.statePath()
			checkpointWAL(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.fn(b), 0o644); err != nil {
				t.Fatal(err)
			}
			sum := fileSum(t, path)
			for _, args := range [][]string{{"inspect"}, {"inspect", "--json"}, {"resume"}, {"run", "--new"}} {
				r := p.cadence(nil, args...)
				r.noPanic(t)
				if r.code != 2 || r.signal != 0 {
					t.Errorf("%v exited %d (signal %v), want 2\n%s", args, r.code, r.signal, r.stderr)
				}
				low := strings.ToLower(r.stderr)
				if !strings.Contains(low, "state.db") ||
					!(strings.Contains(low, "not a sqlite database") || strings.Contains(low, "malformed") || strings.Contains(low, "corrupt")) {
					t.Errorf("%v: stderr does not say state.db is damaged:\n%s", args, r.stderr)
				}
			}
			if fileSum(t, path) != sum {
				t.Error("cadence modified the damaged state.db")
			}
			if n := len(p.executions("one")); n != ran {
				t.Errorf("an agent ran on a damaged state: %d executions, want the %d from before", n, ran)
			}
		})
	}
}

// TestStorageNewerSchema marks state.db as written by a newer cadence: every
// command refuses it with exit 2 and says to upgrade, leaving it untouched.
func TestStorageNewerSchema(t *testing.T) {
	p := twoStepProject(t, "0s")
	p.cadence(nil, "run").exits(t, 0)
	path := p.statePath()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	sum := fileSum(t, path)
	for _, args := range [][]string{{"inspect"}, {"inspect", "--stats"}, {"resume"}, {"run"}, {"run", "--new"}} {
		r := p.cadence(nil, args...)
		r.noPanic(t)
		if r.code != 2 || r.signal != 0 {
			t.Errorf("%v exited %d (signal %v), want 2\n%s", args, r.code, r.signal, r.stderr)
		}
		if !strings.Contains(r.stderr, "newer cadence") || !strings.Contains(r.stderr, "upgrade") {
			t.Errorf("%v: stderr does not tell to upgrade cadence:\n%s", args, r.stderr)
		}
	}
	if fileSum(t, path) != sum {
		t.Error("cadence modified a database from a newer version")
	}
	if n := len(p.executions("one")); n != 1 {
		t.Errorf("step one executed %d times, want the 1 from before", n)
	}
}

// checkpointWAL folds the write-ahead log into state.db and removes it, so
// damaging state.db damages the whole committed state.
func checkpointWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Fatalf("%s%s still exists after the checkpoint", path, suffix)
		}
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestStorageDiskFullDatabase fills the file system under .cadence/ to the
// last byte after a first run, so the next run's very first database write
// finds no space: cadence must fail clearly, and once space is freed the
// earlier run is intact and a new run succeeds.
func TestStorageDiskFullDatabase(t *testing.T) {
	p := twoStepProject(t, "0s")
	cad := filepath.Join(p.dir, ".cadence")
	wf, err := os.ReadFile(filepath.Join(cad, "workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mount(t, "-t", "tmpfs", "-o", "size=2m", "tmpfs", cad)
	if err := os.WriteFile(filepath.Join(cad, "workflow.yaml"), wf, 0o644); err != nil {
		t.Fatal(err)
	}
	p.cadence(nil, "run").exits(t, 0)
	first := p.inspect()

	filler := filepath.Join(cad, "filler")
	fillDisk(t, filler)
	// Leave one page: enough for the lock file, not for the database.
	fi, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, fi.Size()-int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	r := p.cadence(nil, "run")
	t.Logf("exit %d (signal %v)\n%s", r.code, r.signal, r.stderr)
	r.noPanic(t)
	if r.code == 0 || r.signal != 0 {
		t.Fatalf("cadence exited %d (signal %v) with no space for its database", r.code, r.signal)
	}
	if low := strings.ToLower(r.stderr); !strings.Contains(low, "no space left") && !strings.Contains(low, "disk is full") {
		t.Errorf("stderr does not say the disk is full:\n%s", r.stderr)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if again := p.inspect(); again.Run.ID != first.Run.ID || again.Run.Status != "succeeded" || len(again.Steps) != len(first.Steps) {
		t.Fatalf("after the full disk: latest run %s %s, want the first run %s succeeded", again.Run.ID, again.Run.Status, first.Run.ID)
	}
	p.cadence(nil, "run").exits(t, 0)
	if n := len(p.executions("one")); n != 2 {
		t.Errorf("step one executed %d times, want 2 (one per successful run)", n)
	}
}

// fillDisk writes path until the file system has no byte left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			break
		}
	}
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			return
		}
	}
}
