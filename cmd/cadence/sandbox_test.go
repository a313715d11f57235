package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sandboxProbe is a command that reports, one line each, what its box let
// it do: write in the project, outside it (OUTSIDE, a directory on the
// host's disk), into cadence's state, read a private key in HOME, and
// connect to a server on the loopback (PORT).
const sandboxProbe = `#!/bin/sh
r=report-$CADENCE_STEP.txt
(echo in > inside.txt) 2>/dev/null && echo "inside: written" >> $r || echo "inside: refused" >> $r
(echo out > "$OUTSIDE/out.txt") 2>/dev/null && echo "outside: written" >> $r || echo "outside: refused" >> $r
(echo evil >> .cadence/state.db) 2>/dev/null && echo "state: written" >> $r || echo "state: refused" >> $r
cat "$HOME/.ssh/id_rsa" >/dev/null 2>&1 && echo "ssh key: read" >> $r || echo "ssh key: hidden" >> $r
bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$PORT" 2>/dev/null && echo "loopback: connected" >> $r || echo "loopback: refused" >> $r
`

// TestSandboxedCommandStep runs command steps under the real bwrap:
// inside the project they write, outside it and into .cadence they
// cannot, a private key under HOME is hidden, and with network: false a
// server on the loopback cannot be reached (with network on, it can).
func TestSandboxedCommandStep(t *testing.T) {
	outside, err := os.MkdirTemp("/var/tmp", "cadence-sandbox-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
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
	p := newProject(t, `version: 1
defaults:
  sandbox: {network: false}
  retry: {max_attempts: 1}
steps:
  - {id: closed, run: [sh, probe.sh]}
  - {id: open, run: [sh, probe.sh], sandbox: {network: true}}
`, map[string]string{"probe.sh": sandboxProbe, "home/.ssh/id_rsa": "PRIVATE KEY\n"})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p.env = []string{"HOME=" + filepath.Join(p.dir, "home"), "OUTSIDE=" + outside, "PORT=" + port}
	r := p.cadence(nil, "run")
	r.exits(t, 0)

	want := map[string]string{
		"closed": "inside: written\noutside: refused\nstate: refused\nssh key: hidden\nloopback: refused\n",
		"open":   "inside: written\noutside: refused\nstate: refused\nssh key: hidden\nloopback: connected\n",
	}
	for step, w := range want {
		b, err := os.ReadFile(filepath.Join(p.dir, "report-"+step+".txt"))
		if err != nil {
			t.Fatalf("step %s left no report: %v\nstdout:\n%s", step, err, r.stdout)
		}
		if string(b) != w {
			t.Errorf("step %s reported:\n%s\nwant:\n%s", step, b, w)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a boxed write landed outside the project (stat: %v)", err)
	}
	// The state the box could not touch still reads, and says both ran.
	for _, id := range []string{"closed", "open"} {
		if s := step(p.inspect(), id); s.Status != "succeeded" {
			t.Errorf("step %s is %s, want succeeded", id, s.Status)
		}
	}
}

// TestSandboxedAgentDaemonDiesWithCadence: a daemon a boxed agent started
// (setsid, out of the agent's session and group) dies when cadence is
// killed with SIGKILL (G6), and the boxed file handoff inside .cadence is
// written where cadence reads it.
func TestSandboxedAgentDaemonDiesWithCadence(t *testing.T) {
	mark := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1_000_000_000)
	p := newProject(t, `version: 1
defaults: {agent: launcher}
agents:
  launcher:
    preset: exec
    command: [sh, -c, 'cat >/dev/null; setsid sleep `+mark+` </dev/null >/dev/null 2>&1 & echo started > started.txt; exec sleep 1000']
    sandbox: {}
steps:
  - {id: one, prompt: go}
`, nil)
	t.Cleanup(func() {
		for _, pid := range sleeping(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	p.killWhen(t, "run", func() bool { return len(sleeping(mark)) == 1 })
	waitFor(t, "the boxed daemon to be gone", func() bool { return len(sleeping(mark)) == 0 })
}

// TestSandboxedAgentHandoffAndIdle: in its box, an agent writes its file
// handoff under .cadence/out (hidden but for that directory), and the
// CPU-aware idle detection still sees its work: an agent silent but busy
// for several idle_timeouts is not stuck, one silent and idle is.
func TestSandboxedAgentHandoffAndIdle(t *testing.T) {
	p := newProject(t, `version: 1
defaults: {retry: {max_attempts: 1}, idle_timeout: 1s}
agents:
  busy:
    preset: exec
    command: [sh, busy.sh]
    sandbox: {network: false}
  idle:
    preset: exec
    command: [sh, -c, 'cat >/dev/null; exec sleep 1000']
    sandbox: {network: false}
steps:
  - id: work
    agent: busy
    prompt: go
    handoff: {from: file, path: .cadence/out/work.json, schema: s.json}
  - {id: wait, agent: idle, prompt: go, allow_failure: true}
`, map[string]string{"s.json": boolSchema, "busy.sh": `cat >/dev/null
end=$(( $(date +%s) + 4 ))
while [ "$(date +%s)" -lt "$end" ]; do :; done
echo '{"ok": true}' > "$CADENCE_HANDOFF_PATH"
`})
	r := p.cadence(nil, "run")
	r.exits(t, 0)
	rep := p.inspect()
	if s := step(rep, "work"); s.Status != "succeeded" || len(s.Attempts) != 1 {
		t.Errorf("busy step: %s after %d attempts, want succeeded after 1\nstdout:\n%s", s.Status, len(s.Attempts), r.stdout)
	}
	s := step(rep, "wait")
	if s.Status != "failed" || len(s.Attempts) != 1 || s.Attempts[0].Class != "stuck" {
		t.Fatalf("idle step: %+v, want failed with class stuck\nstdout:\n%s", s, r.stdout)
	}
}

// sleeping lists the live processes running `sleep arg`.
func sleeping(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == "sleep\x00"+arg+"\x00" && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A missing bwrap is refused before anything runs, naming the package.
func TestSandboxWithoutBwrap(t *testing.T) {
	p := newProject(t, `version: 1
steps:
  - {id: one, run: [/bin/true], sandbox: {}}
`, nil)
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "cadence")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "check"} {
		r := p.cadence([]string{"PATH=" + bin}, cmd)
		if r.code == 0 || !strings.Contains(r.stderr, "steps[0].sandbox: step one (sandbox): program bwrap not found on PATH (install the bubblewrap package") {
			t.Errorf("cadence %s without bwrap: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".cadence", "state.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run without bwrap started (stat state.db: %v)", err)
	}
}
