package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	t.Setenv(helperEnv, "1") // the standby supervisor is this binary, started with this environment
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	exe := selfExe(t)
	spares := agent.NewSpares(exe)
	defer spares.Close()
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
