//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probeEnv makes the test binary a probe run inside a box: it does what
// the variable says (write FILE, read FILE, dial ADDR) and prints one line
// saying what happened.
const probeEnv = "CADENCE_SANDBOX_PROBE"

func TestMain(m *testing.M) {
	if p := os.Getenv(probeEnv); p != "" {
		os.Exit(probe(p))
	}
	os.Exit(m.Run())
}

func probe(p string) int {
	what, arg, _ := strings.Cut(p, " ")
	var err error
	switch what {
	case "write":
		err = os.WriteFile(arg, []byte("written in the box\n"), 0o644)
	case "read":
		var b []byte
		if b, err = os.ReadFile(arg); err == nil {
			fmt.Printf("read %q\n", b)
			return 0
		}
	case "dial", "dialunix":
		network := map[string]string{"dial": "tcp", "dialunix": "unix"}[what]
		var c net.Conn
		if c, err = net.DialTimeout(network, arg, 2*time.Second); err == nil {
			c.Close()
		}
	default:
		err = errors.New("unknown probe " + what)
	}
	if err != nil {
		fmt.Printf("refused: %v\n", err)
		return 0
	}
	fmt.Println("done")
	return 0
}

// bwrapOrFail finds the real bwrap: these tests are about it, and a
// machine without it must install it (scripts/test-deps does).
func bwrapOrFail(t *testing.T) string {
	t.Helper()
	p, err := Find("")
	if err != nil {
		t.Fatalf("%v (scripts/test-deps installs it)", err)
	}
	return p
}

// runBoxed runs argv in box b and returns its stdout.
func runBoxed(t *testing.T, b Box, env []string, argv ...string) string {
	t.Helper()
	prefix, err := b.Argv(bwrapOrFail(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append(prefix, argv...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...) // no race detector pause at the probe's exit
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v\nstderr: %s", full, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// TestBoxWithRealBwrap runs the test binary as a probe in a real box:
// what it may write, read and reach.
func TestBoxWithRealBwrap(t *testing.T) {
	root := tree(t, "home/.ssh/id_rsa", "home/.ssh/known_hosts", "proj/.cadence/cadence.db", "proj/.cadence/out/", "shared/")
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
	// Outside /tmp, which the box replaces with a private one, so that a
	// write there would land on the host's filesystem.
	outsideDir, err := os.MkdirTemp("/var/tmp", "cadence-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outsideDir) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	box := func(network bool) Box {
		return Box{
			Config:    Config{Network: network, Write: []string{filepath.Join(root, "shared")}, Read: []string{"~/.ssh/known_hosts"}},
			Home:      home,
			WorkDir:   proj,
			StateDirs: []string{filepath.Join(proj, ".cadence")},
			Writable:  []string{filepath.Join(proj, ".cadence/out")},
			Readable:  []string{self}, // the program: under /tmp, which the box replaces
		}
	}
	tests := []struct {
		name, probe string
		network     bool
		want        string
		landed      string // a file the probe's write must have made on the host; "" for none
		absent      string // a file the probe's write must not have made on the host
	}{
		{"write in the work dir", "write " + filepath.Join(proj, "in.txt"), true, "done", filepath.Join(proj, "in.txt"), ""},
		{"write in a write: path", "write " + filepath.Join(root, "shared/s.txt"), true, "done", filepath.Join(root, "shared/s.txt"), ""},
		{"write in the handoff directory inside .cadence", "write " + filepath.Join(proj, ".cadence/out/h.json"), true, "done", filepath.Join(proj, ".cadence/out/h.json"), ""},
		{"write outside the work dir", "write " + filepath.Join(outsideDir, "out.txt"), true, "refused: open " + filepath.Join(outsideDir, "out.txt") + ": read-only file system", "", filepath.Join(outsideDir, "out.txt")},
		{"write cadence's state", "write " + filepath.Join(proj, ".cadence/cadence.db"), true, "refused: open " + filepath.Join(proj, ".cadence/cadence.db") + ": read-only file system", "", ""},
		{"read a private key", "read " + filepath.Join(home, ".ssh/id_rsa"), true, "refused: open " + filepath.Join(home, ".ssh/id_rsa") + ": no such file or directory", "", ""},
		{"read a read: file inside a hidden directory", "read " + filepath.Join(home, ".ssh/known_hosts"), true, `read "x"`, "", ""},
		{"read cadence's state", "read " + filepath.Join(proj, ".cadence/cadence.db"), true, "refused: open " + filepath.Join(proj, ".cadence/cadence.db") + ": no such file or directory", "", ""},
		{"dial loopback with network", "dial " + ln.Addr().String(), true, "done", "", ""},
		{"dial loopback without network", "dial " + ln.Addr().String(), false, "refused: dial tcp " + ln.Addr().String() + ": connect: connection refused", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runBoxed(t, box(tc.network), []string{probeEnv + "=" + tc.probe}, self)
			if got != tc.want {
				t.Errorf("probe %q printed %q, want %q", tc.probe, got, tc.want)
			}
			if tc.landed != "" {
				if b, err := os.ReadFile(tc.landed); err != nil || string(b) != "written in the box\n" {
					t.Errorf("the write did not land on the host: %q, %v", b, err)
				}
			}
			if tc.absent != "" {
				if _, err := os.Stat(tc.absent); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists on the host after a refused write (stat: %v)", tc.absent, err)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(proj, ".cadence/cadence.db")); err != nil || string(b) != "x" {
		t.Errorf("cadence's state changed: %q, %v", b, err)
	}
}

// TestBoxDaemonDies: a process that left the boxed program's session
// (setsid) dies with the box, both when the program exits and when bwrap
// itself is killed with SIGKILL (as it is when cadence dies).
func TestBoxDaemonDies(t *testing.T) {
	proj := tree(t, "p/")
	bwrap := bwrapOrFail(t)
	prefix, err := Box{Config: Config{Network: true}, Home: proj, WorkDir: proj}.Argv(bwrap)
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"program exits", "bwrap killed"} {
		t.Run(how, func(t *testing.T) {
			// A unique duration names the daemon in /proc.
			mark := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1_000_000_000)
			// The program exits when its stdin closes, once the test has
			// seen the daemon run.
			script := "setsid sleep " + mark + " </dev/null >/dev/null 2>&1 & echo spawned; read line || true"
			full := append(append([]string(nil), prefix...), "/bin/sh", "-c", script)
			cmd := exec.Command(full[0], full[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for _, pid := range processesRunning(mark) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			line := make([]byte, len("spawned\n"))
			if _, err := out.Read(line); err != nil || string(line) != "spawned\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			waitUntil(t, "the daemon to run", func() bool { return len(processesRunning(mark)) == 1 })
			if how == "bwrap killed" {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			} else {
				in.Close()
			}
			err = cmd.Wait()
			if how == "program exits" && err != nil {
				t.Errorf("the program did not exit 0: %v", err)
			}
			waitUntil(t, "the daemon to be gone", func() bool { return len(processesRunning(mark)) == 0 })
		})
	}
}

// processesRunning lists the live (not zombie) processes running sleep
// with argument arg.
func processesRunning(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || string(b) != "sleep\x00"+arg+"\x00" {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitUntil polls cond until it holds, for at most 20 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBoxProgramByLink: a program named by a symbolic link the box does
// not show (node_modules/.bin under the private /tmp) still starts, and
// one named by a link the box shows (/usr/bin/awk, an alternatives link)
// is left as it is.
func TestBoxProgramByLink(t *testing.T) {
	root := tree(t, "proj/", "bin/")
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "bin", "sh-link")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		program string
		argv    []string
	}{
		{link, []string{link, "-c", "echo started"}},
		{"/usr/bin/awk", []string{"/usr/bin/awk", "BEGIN { print \"started\" }"}},
	} {
		if _, err := os.Lstat(tc.program); err != nil {
			t.Fatalf("%s: %v", tc.program, err)
		}
		b := Box{Home: root, WorkDir: filepath.Join(root, "proj"), Readable: []string{tc.program}}
		if got := runBoxed(t, b, nil, tc.argv...); got != "started" {
			t.Errorf("%s in the box printed %q, want started", tc.program, got)
		}
	}
}

// TestBoxUnixSocket: a unix socket on the read-only filesystem can still
// be connected to (what makes a container engine's socket a way out); a
// hidden one cannot. The server runs on the host, the client in the box.
func TestBoxUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "cadence-sandbox-sock-") // not under the private /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proj := tree(t, "p/")
	for _, tc := range []struct {
		hide []string
		want string
	}{
		{nil, "done"},
		{[]string{sock}, "refused: dial unix " + sock + ": connect: connection refused"},
	} {
		b := Box{Config: Config{Network: false, Hide: tc.hide}, Home: proj, WorkDir: filepath.Join(proj, "p"), Readable: []string{self}}
		if got := runBoxed(t, b, []string{probeEnv + "=dialunix " + sock}, self); got != tc.want {
			t.Errorf("hide %q: the probe printed %q, want %q", tc.hide, got, tc.want)
		}
	}
}
