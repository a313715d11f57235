package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent/sim"
	"github.com/cadence-dev/cadence/internal/history"
)

// project is a scratch cadence project on disk for process-level tests.
type project struct {
	t   *testing.T
	dir string
	// state is the CADENCE_STATE of every cadence process of the project
	// and of in-process reads: empty for the project's .cadence/state.db.
	state string
	// ledgerFile is the sim agents' ledger when it is kept outside the
	// project ("": ledger.jsonl in it).
	ledgerFile string
	// env is added to the environment of every cadence process.
	env []string
	// workflow, when set, is the workflow file (relative to dir) every
	// cadence process of this view of the project is given with
	// --workflow, and the run the durability checks follow: several
	// workflows of one project each have a view of their own. Only for
	// commands that take --workflow (run, resume, approve, inspect, runs).
	workflow string
	// cwd is where cadence processes start when not in the project:
	// a process that serves the project's filesystem itself must never
	// start a child there (the child's chdir would wait for a server
	// that cannot run while the parent waits for the child's exec).
	cwd string
}

// newProject writes files (path → content) into a fresh directory; the
// workflow goes to .cadence/workflow.yaml.
func newProject(t *testing.T, workflowYAML string, files map[string]string) *project {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{".cadence/workflow.yaml": workflowYAML}
	for k, v := range files {
		all[k] = v
	}
	for name, content := range all {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &project{t: t, dir: dir}
}

// result is how one cadence process ended.
type result struct {
	code           int // -1 when killed by a signal
	signal         syscall.Signal
	stdout, stderr string
}

// cadence runs the cadence binary (this test binary, installed on PATH by
// TestMain) as a real subprocess in the project, with extra environment.
func (p *project) cadence(env []string, args ...string) result {
	p.t.Helper()
	return p.cadenceWithin(60*time.Second, env, args...)
}

// cadenceWithin is cadence with a time limit of d instead of a minute, for
// runs of real agent CLIs, which take seconds each to start.
func (p *project) cadenceWithin(d time.Duration, env []string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := p.command(ctx, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return p.finish(cmd, err, out.String(), errb.String())
}

func (p *project) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	if p.workflow != "" {
		args = append(append([]string(nil), args...), "--workflow", filepath.Join(p.dir, filepath.FromSlash(p.workflow)))
	}
	cmd := exec.CommandContext(ctx, "cadence", append(args, p.dir)...)
	cmd.Dir = p.dir
	if p.cwd != "" {
		cmd.Dir = p.cwd
	}
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=", "CADENCE_STOREFAULT=",
		"CADENCE_STATE="+p.state, "GORACE=atexit_sleep_ms=0"), append(p.env, env...)...)
	return cmd
}

func (p *project) finish(cmd *exec.Cmd, err error, stdout, stderr string) result {
	p.t.Helper()
	r := result{stdout: stdout, stderr: stderr}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signal = ws.Signal()
		}
	default:
		p.t.Fatalf("cadence did not run: %v", err)
	}
	return r
}

// killWhen starts cadence with args, waits until cond holds, then kills it
// with SIGKILL, as a crash would.
func (p *project) killWhen(t *testing.T, cmdName string, cond func() bool) {
	t.Helper()
	p.killWhenWithin(t, 30*time.Second, cmdName, cond)
}

// killWhenWithin is killWhen waiting up to d for cond.
func (p *project) killWhenWithin(t *testing.T, d time.Duration, cmdName string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	cmd := p.command(ctx, nil, cmdName)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, d, "the moment to kill cadence", cond)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	p.finish(cmd, cmd.Wait(), out.String(), errb.String()).killed(t)
}

// killed asserts that a run was ended by the given failpoint's SIGKILL.
func (r result) killed(t *testing.T) {
	t.Helper()
	if r.signal != syscall.SIGKILL {
		t.Fatalf("cadence was not killed by its failpoint: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func (r result) exits(t *testing.T, code int) {
	t.Helper()
	if r.signal != 0 || r.code != code {
		t.Fatalf("cadence exited %d (signal %v), want %d\nstdout:\n%s\nstderr:\n%s", r.code, r.signal, code, r.stdout, r.stderr)
	}
}

// inspect returns the parsed `cadence inspect --json` of the latest run.
func (p *project) inspect() history.Report {
	p.t.Helper()
	r := p.cadence(nil, "inspect", "--json")
	r.exits(p.t, 0)
	var rep history.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		p.t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
	}
	return rep
}

// ledger returns the sim agent's execution ledger: one record per real
// execution of an agent process.
func (p *project) ledger() []sim.LedgerRecord {
	p.t.Helper()
	path := p.ledgerFile
	if path == "" {
		path = filepath.Join(p.dir, "ledger.jsonl")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	var recs []sim.LedgerRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r sim.LedgerRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			p.t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// executions counts the ledger records of one step.
func (p *project) executions(step string) []sim.LedgerRecord {
	var out []sim.LedgerRecord
	for _, r := range p.ledger() {
		if r.Step == step {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes: a wait on a
// condition, never a fixed sleep.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 30*time.Second, what, cond)
}

// waitForWithin is waitFor with a time limit of d.
func waitForWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	return !bytes.Contains(b, []byte(") Z "))
}

func itoa(n int) string { return strconv.Itoa(n) }

func step(rep history.Report, id string) history.StepReport {
	for _, s := range rep.Steps {
		if s.ID == id {
			return s
		}
	}
	return history.StepReport{}
}
