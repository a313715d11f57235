package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the uid and gid read-only commands run as in these tests: a
// user who may read the project but not write its .cadence directory.
const nobody = 65534

// readerBinary copies the cadence binary where any user may run it.
func readerBinary(t *testing.T) string {
	t.Helper()
	src, err := exec.LookPath("cadence")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "cadence-reader-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, "cadence")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// readable lets every user read the project (and reach it), as a
// teammate's checkout on a shared machine is; nobody may write it.
func (p *project) readable(t *testing.T) {
	t.Helper()
	for d := p.dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.Walk(p.dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return os.Chmod(path, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// asNobody runs the cadence binary bin as uid and gid 65534.
func (p *project) asNobody(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, p.dir)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "NO_COLOR=1", "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return p.finish(cmd, err, out.String(), errb.String())
}

// TestReadOnlyCommandsAsAnotherUser runs the commands that only read the
// state as a user who can read the project but not write .cadence/ (the
// run was made by another user): each opens the state read-only and
// works, on a finished run whose WAL is gone and on a run going on, whose
// WAL and shared-memory files belong to its process. report, which writes
// a file, says so when it cannot write where it was told to.
func TestReadOnlyCommandsAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs commands as another user, which needs root")
	}
	bin := readerBinary(t)
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go, handoff: {schema: s.json}}
  - {id: two, prompt: go}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one: [{answer: '{"ok": "no"}'}, {answer: '{"ok": true}'}]
  two: [{hang: true}]
`})
	p.readable(t)
	pid, wait := p.startCadence(t, "run")
	waitFor(t, "step two's agent to start", func() bool { return len(p.executions("two")) == 1 })
	p.readable(t)

	// While the run goes on: its process holds the WAL.
	r := p.asNobody(t, bin, "inspect", "--json")
	r.exits(t, 0)
	if !strings.Contains(r.stdout, `"status":"running"`) {
		t.Fatalf("inspect --json during the run does not show it running:\n%s", r.stdout)
	}

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait().exits(t, 3)
	p.readable(t)
	// The run's id, read without opening the state (a read as root would
	// leave a -wal and -shm behind).
	runs, err := os.ReadDir(filepath.Join(p.dir, ".cadence", "attempts"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one run's attempts directory: %v %v", runs, err)
	}
	runID := runs[0].Name()
	for _, name := range []string{"state.db-wal", "state.db-shm"} {
		if _, err := os.Stat(filepath.Join(p.dir, ".cadence", name)); err == nil {
			t.Fatalf("%s is left after the run ended: the test wants a state without one", name)
		}
	}
	writable := t.TempDir()
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect"}, 0, "two"},
		{[]string{"inspect", "--json"}, 0, `"status":"interrupted"`},
		{[]string{"inspect", "--stats"}, 0, "ATTEMPTS"},
		{[]string{"dlq", "list"}, 0, ""},
		{[]string{"validate", "--failed"}, 0, "one"},
		{[]string{"report", "-o", filepath.Join(writable, "r.html")}, 0, "r.html"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := p.asNobody(t, bin, tc.args...)
			if r.code != tc.code || strings.Contains(r.stderr, "readonly") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("stdout lacks %q:\n%s", tc.want, r.stdout)
			}
		})
	}
	// --follow replays the stopped run and then waits for its resume:
	// it got that far reading the state read-only.
	t.Run("inspect --follow", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "inspect", "--follow", p.dir)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "NO_COLOR=1", "GORACE=atexit_sleep_ms=0"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var seen []string
		for line := range lines {
			seen = append(seen, line)
			if strings.Contains(line, "readonly") {
				break
			}
			if strings.Contains(line, "waiting for it to be resumed") {
				break
			}
		}
		_ = cmd.Process.Kill()
		for range lines {
		}
		_ = cmd.Wait()
		if len(seen) == 0 || !strings.Contains(seen[len(seen)-1], "waiting for it to be resumed") {
			t.Fatalf("inspect --follow as another user did not reach the wait for a resume:\n%s", strings.Join(seen, "\n"))
		}
		if !strings.Contains(out.String(), "run "+runID+" interrupted") {
			t.Fatalf("inspect --follow did not replay the stopped run:\n%s", out.String())
		}
	})
	t.Run("report into .cadence", func(t *testing.T) {
		r := p.asNobody(t, bin, "report")
		if r.code == 0 || !strings.Contains(r.stderr, "-o") || !strings.Contains(r.stderr, filepath.Join(".cadence", "reports")) {
			t.Fatalf("report where it cannot write: exit %d, want an error naming the directory and -o:\n%s", r.code, r.stderr)
		}
	})
	t.Run("a -wal without its -shm", func(t *testing.T) {
		wal := filepath.Join(p.dir, ".cadence", "state.db-wal")
		if err := os.WriteFile(wal, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(wal)
		r := p.asNobody(t, bin, "inspect")
		if r.code != 2 || !strings.Contains(r.stderr, "needs state.db-shm") || !strings.Contains(r.stderr, "give it write access to "+filepath.Join(p.dir, ".cadence")) {
			t.Fatalf("exit %d, want 2 and what is needed:\n%s", r.code, r.stderr)
		}
	})
	// Nothing a reader did wrote the state.
	for _, name := range []string{"state.db-wal", "state.db-shm"} {
		if _, err := os.Stat(filepath.Join(p.dir, ".cadence", name)); err == nil {
			t.Errorf("a read-only command left %s", name)
		}
	}
}

// TestReadOnlyOpenDoesNotMigrate opens, read-only and as a user who
// cannot write it, a state database of an older schema: the command must
// fail with an error that says what to do, and leave the schema as it
// was.
func TestReadOnlyOpenDoesNotMigrate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs commands as another user, which needs root")
	}
	bin := readerBinary(t)
	p := newProject(t, simWorkflow(`{max_attempts: 1}`, `
  - {id: one, prompt: go}
`), map[string]string{"scenario.yaml": "steps:\n  one: [{answer: '{\"ok\": true}'}]\n"})
	p.cadence(nil, "run").exits(t, 0)
	path := filepath.Join(p.dir, ".cadence", "state.db")
	// Make it the previous version's schema: without workflow_files.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE runs DROP COLUMN workflow_files", "PRAGMA user_version = 8"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	p.readable(t)
	for _, owner := range []string{"another user", "the owner"} {
		t.Run(owner, func(t *testing.T) {
			var r result
			if owner == "the owner" {
				r = p.cadence(nil, "inspect")
			} else {
				r = p.asNobody(t, bin, "inspect")
			}
			if r.code != 2 || !strings.Contains(r.stderr, "schema 8") || !strings.Contains(r.stderr, "cadence resume") {
				t.Fatalf("inspect of an older schema: exit %d, want 2 and a message naming the schema and what to run:\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v int
			if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 8 {
				t.Fatalf("schema version after a read-only open: %d (%v), want 8 still", v, err)
			}
		})
	}
}
