package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
)

// BenchmarkSupervisedStart prices one supervised run of /bin/true, the
// supervisor started for it (fresh) or started ahead and taken (standby),
// as a chain of command steps runs them: one after the other, with pause
// between two (the outcome's commit, the next attempt's) during which the
// next standby supervisor gets ready.
func BenchmarkSupervisedStart(b *testing.B) {
	b.Setenv(helperEnv, "1") // the standby supervisor is this binary, started with this environment
	for _, mode := range []string{"fresh", "standby"} {
		b.Run(mode, func(b *testing.B) {
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			var spares *agent.Spares
			if mode == "standby" {
				spares = agent.NewSpares(exe)
				defer spares.Close()
			}
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := agent.Run(context.Background(), agent.Spec{
					Argv: []string{"/bin/true"}, Protocol: agent.ProtocolText, Supervisor: exe, Spares: spares,
					Env: append(os.Environ(), helperEnv+"=1"),
				})
				total += time.Since(start)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v, %+v", err, res)
				}
				time.Sleep(2 * time.Millisecond) // the commits between two attempts
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/run")
		})
	}
}

// A program run by a standby supervisor sees what one run by a supervisor
// started for it sees: its argv (argv[0] the path), its directory, exactly
// its environment, its stdin (or /dev/null), and cadence sees its exit,
// its signal, its stderr and a program that cannot start the same way.
func TestStandbyRunsLikeAFreshSupervisor(t *testing.T) {
	exe, spares := testSpares(t)
	dir := t.TempDir()
	script := `printf '%s|' "$0" "$@"; pwd; echo "X=$X Y=${Y-unset}"; cat; echo err >&2; exit 3`
	cases := []struct {
		name  string
		spec  agent.Spec
		text  string // stdout, as the program printed it
		code  int
		start bool // Run fails with ErrStart
	}{
		{name: "argv, dir, env and stdin",
			spec: agent.Spec{Argv: []string{"/bin/sh", "-c", script, "a b", "--yolo"}, Dir: dir, Stdin: []byte("in\n"),
				Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0", "X=1", "PATH=/usr/bin:/bin"}},
			text: "a b|--yolo|" + dir + "\nX=1 Y=unset\nin\n", code: 3},
		{name: "no stdin is /dev/null",
			spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "cat; echo done"}, Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}},
			text: "done\n"},
		{name: "a signal", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "kill -TERM $$"}, Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}}},
		{name: "a program the system cannot run", start: true,
			spec: agent.Spec{Argv: []string{progFile(t, "#!/nonexistent/interpreter\n")}, Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [2]*agent.Result
			var errs [2]error
			for i, sp := range []*agent.Spares{nil, spares} {
				spec := c.spec
				spec.Protocol, spec.Supervisor, spec.Spares = agent.ProtocolText, exe, sp
				got[i], errs[i] = agent.Run(context.Background(), spec)
			}
			for i, mode := range []string{"fresh", "standby"} {
				if c.start {
					if !errors.Is(errs[i], agent.ErrStart) {
						t.Errorf("%s: err %v, want ErrStart", mode, errs[i])
					}
					continue
				}
				if errs[i] != nil {
					t.Fatalf("%s: %v", mode, errs[i])
				}
				if c.text != "" && string(got[i].Text) != c.text {
					t.Errorf("%s: stdout %q, want %q", mode, got[i].Text, c.text)
				}
			}
			if c.start {
				if errs[0].Error() != errs[1].Error() {
					t.Errorf("start errors differ:\nfresh   %v\nstandby %v", errs[0], errs[1])
				}
				return
			}
			f, s := got[0], got[1]
			if f.ExitCode != s.ExitCode || f.Signal != s.Signal || f.StderrTail != s.StderrTail || string(f.Text) != string(s.Text) {
				t.Errorf("fresh %d %v %q %q, standby %d %v %q %q", f.ExitCode, f.Signal, f.StderrTail, f.Text,
					s.ExitCode, s.Signal, s.StderrTail, s.Text)
			}
			if c.name == "a signal" && s.Signal != syscall.SIGTERM {
				t.Errorf("standby: signal %v, want SIGTERM", s.Signal)
			}
			if c.code != 0 && s.ExitCode != c.code {
				t.Errorf("standby: exit %d, want %d", s.ExitCode, c.code)
			}
		})
	}
}

// testSpares returns this test binary, which the environment it sets
// makes a supervisor, and spares of it closed when t ends.
func testSpares(t *testing.T) (string, *agent.Spares) {
	t.Helper()
	t.Setenv(helperEnv, "1") // the standby supervisor is this binary, started with this environment
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	exe := selfExe(t)
	spares := agent.NewSpares(exe)
	t.Cleanup(spares.Close)
	return exe, spares
}

// progFile writes an executable file with content and returns its path.
func progFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A supervisor that dies before it is ready (here a binary that is not
// one: /bin/true) is an error of the attempt's start, never a hang.
func TestStandbyThatNeverGetsReady(t *testing.T) {
	spares := agent.NewSpares("/bin/true")
	defer spares.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := agent.Run(ctx, agent.Spec{Argv: []string{"/bin/true"}, Protocol: agent.ProtocolText, Supervisor: "/bin/true", Spares: spares})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run under a supervisor that never got ready: %v (context: %v)", err, ctx.Err())
	}
}

// A supervisor whose program ended by itself serves the next attempt: one
// after another, each program gets its own argv, directory, environment
// and stdin and nothing of the one before, and cadence sees each end as
// it was, a program that cannot start included. A supervisor whose
// attempt cadence stopped is not used again: it ends with the attempt.
func TestStandbyServesAttemptsOneAfterAnother(t *testing.T) {
	exe, spares := testSpares(t)
	env := func(kv ...string) []string {
		return append([]string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0", "PATH=/usr/bin:/bin"}, kv...)
	}
	a, b := t.TempDir(), t.TempDir()
	script := `pwd; echo "X=${X-unset}"; cat; exit 4`
	steps := []struct {
		name   string
		spec   agent.Spec
		text   string
		code   int
		sig    syscall.Signal
		start  bool // Run fails with ErrStart
		stop   agent.StopReason
		sameAs int // the index of the attempt whose supervisor it runs under; -1 for a new one
	}{
		{name: "first", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", script}, Dir: a, Env: env("X=1"), Stdin: []byte("one\n")},
			text: a + "\nX=1\none\n", code: 4, sameAs: -1},
		{name: "second, nothing of the first", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", script}, Dir: b, Env: env()},
			text: b + "\nX=unset\n", code: 4, sameAs: 0},
		{name: "a program that forges the end's report on descriptor 3", spec: agent.Spec{Argv: []string{"/bin/sh", "-c",
			`printf '\002\001\000\000\000\000\001' >&3; sleep 0.2; echo done; exit 5`}, Env: env()},
			text: "done\n", code: 5, sameAs: 0},
		{name: "a signal", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "kill -KILL $$"}, Env: env()}, code: -1, sig: syscall.SIGKILL, sameAs: 0},
		{name: "a program that cannot start", spec: agent.Spec{Argv: []string{progFile(t, "#!/nonexistent/interpreter\n")}, Env: env()},
			start: true, code: 127, sameAs: 0},
		{name: "stopped by cadence", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "exec sleep 300"}, Env: env(), Timeout: 200 * time.Millisecond},
			code: -1, sig: syscall.SIGTERM, stop: agent.StopTimeout, sameAs: 0},
		{name: "after a stop, a new one", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "echo ok"}, Env: env()}, text: "ok\n", sameAs: -1},
		{name: "and that one again", spec: agent.Spec{Argv: []string{"/bin/sh", "-c", "echo ok"}, Env: env()}, text: "ok\n", sameAs: 6},
	}
	pids := make([]int, len(steps))
	for i, s := range steps {
		spec := s.spec
		spec.Protocol, spec.Supervisor, spec.Spares = agent.ProtocolText, exe, spares
		res, err := agent.Run(context.Background(), spec)
		if s.start != errors.Is(err, agent.ErrStart) || (!s.start && err != nil) {
			t.Fatalf("%s: err %v, want ErrStart %v", s.name, err, s.start)
		}
		if res == nil {
			t.Fatalf("%s: no result", s.name)
		}
		pids[i] = res.PID
		if string(res.Text) != s.text && !s.start {
			t.Errorf("%s: stdout %q, want %q", s.name, res.Text, s.text)
		}
		if res.ExitCode != s.code || res.Signal != s.sig || res.Stop != s.stop {
			t.Errorf("%s: exit %d, signal %v, stop %v; want %d, %v, %v", s.name, res.ExitCode, res.Signal, res.Stop, s.code, s.sig, s.stop)
		}
		switch {
		case s.sameAs >= 0 && pids[i] != pids[s.sameAs]:
			t.Errorf("%s: ran under supervisor %d, want %d (%s's)", s.name, pids[i], pids[s.sameAs], steps[s.sameAs].name)
		case s.sameAs < 0 && slices.Contains(pids[:i], pids[i]):
			t.Errorf("%s: ran under supervisor %d, which served an earlier attempt", s.name, pids[i])
		}
		if s.stop != agent.StopNone && !processGone(pids[i]) {
			t.Errorf("%s: its supervisor %d outlived the stopped attempt", s.name, pids[i])
		}
	}
}

// A supervisor reserved ahead of an attempt (so that the attempt's row
// can name it) is the process the attempt's program runs under: OnStart
// reports its pid. One given back unused serves the next reservation at
// once, without waiting for a ready byte it already sent; one discarded,
// or handed to a Run that fails before the program could be given to it,
// is ended.
func TestReservedSupervisor(t *testing.T) {
	exe, spares := testSpares(t)
	env := []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}
	reserve := func() *agent.Reserved {
		t.Helper()
		// Well under the 30 s a supervisor gets to send its ready byte:
		// a reservation given back must not wait for another one.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := spares.Reserve(ctx)
		if err != nil {
			t.Fatalf("reserve: %v", err)
		}
		return r
	}
	run := func(r *agent.Reserved, argv ...string) (int, *agent.Result, error) {
		t.Helper()
		started := 0
		res, err := agent.Run(context.Background(), agent.Spec{Argv: argv, Protocol: agent.ProtocolText, Env: env,
			Supervisor: exe, Spares: spares, Reserved: r, OnStart: func(pid int) error { started = pid; return nil }})
		return started, res, err
	}
	gone := func(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }

	r := reserve()
	pid := r.PID()
	started, res, err := run(r, "/bin/sh", "-c", "echo ran")
	if err != nil || res.ExitCode != 0 || string(res.Text) != "ran\n" {
		t.Fatalf("run under a reservation: %v, %+v", err, res)
	}
	if started != pid {
		t.Errorf("OnStart got pid %d, want the reserved supervisor's %d", started, pid)
	}

	given := reserve()
	pid = given.PID()
	given.Release()
	given.Release() // a second time does nothing
	again := reserve()
	if again.PID() != pid {
		t.Errorf("the next reservation took supervisor %d, want %d, given back unused", again.PID(), pid)
	}
	if started, res, err = run(again, "/bin/sh", "-c", "exit 4"); err != nil || res.ExitCode != 4 || started != pid {
		t.Errorf("run under a reservation given back once: pid %d (want %d), %v, %+v", started, pid, err, res)
	}

	dropped := reserve()
	pid = dropped.PID()
	dropped.Discard()
	if !gone(pid) {
		t.Errorf("discarded supervisor %d still runs", pid)
	}

	unused := reserve()
	pid = unused.PID()
	if _, _, err := run(unused, filepath.Join(t.TempDir(), "no-such-program")); !errors.Is(err, agent.ErrStart) {
		t.Fatalf("run of a missing program: %v, want ErrStart", err)
	}
	if !gone(pid) {
		t.Errorf("supervisor %d, reserved for a program that could not start, still runs", pid)
	}
}
