package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkProject is a one-step project on the sim agent, whose answer is
// always valid, with the given checks section and retry policy.
func checkProject(t *testing.T, retry, checks string, files map[string]string) *project {
	t.Helper()
	all := map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: [{answer: '{\"ok\": true}'}]\n"}
	for k, v := range files {
		all[k] = v
	}
	return newProject(t, simWorkflow(retry, "  - id: one\n    prompt: go\n    handoff: {schema: s.json}\n    checks:\n"+checks), all)
}

// TestCheckTimeoutAndChildren: a check that runs past its timeout is killed
// with everything it started, and fails its attempt with class check; a
// check that leaves a child running in the background when it exits has
// the child killed with its group. No check process outlives the step.
func TestCheckTimeoutAndChildren(t *testing.T) {
	tests := []struct {
		name     string
		checks   string
		timedOut bool
		status   string
	}{
		{"past its timeout, with a child", "      - {name: slow, run: 'sleep 300 & echo $! > child.pid; sleep 300', timeout: 1s}\n", true, "failed"},
		{"a child left running in the background", "      - {name: bg, run: 'sleep 300 & echo $! > child.pid'}\n", false, "passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkProject(t, `{max_attempts: 1}`, tt.checks, nil)
			r := p.cadence(nil, "run")
			r.noPanic(t)
			want := 0
			if tt.status == "failed" {
				want = 1
			}
			r.exits(t, want)
			a := step(p.inspect(), "one").Attempts[0]
			if len(a.Checks) != 1 || a.Checks[0].Status != tt.status || a.Checks[0].TimedOut != tt.timedOut {
				t.Fatalf("checks %+v, want one %s (timed out %v)", a.Checks, tt.status, tt.timedOut)
			}
			if tt.timedOut && (a.Class != "check" || !strings.Contains(a.Error, "timeout of 1s")) {
				t.Errorf("attempt %s: %s, want class check naming the timeout", a.Class, a.Error)
			}
			b, err := os.ReadFile(filepath.Join(p.dir, "child.pid"))
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the check's child to be gone", func() bool { return !alive(child) })
		})
	}
}

// TestCheckNotRetried: with retry.never: [check], a failed check fails the
// step at once.
func TestCheckNotRetried(t *testing.T) {
	p := checkProject(t, `{max_attempts: 3, never: [check]}`, "      - {name: no, run: 'echo nope; exit 3'}\n", nil)
	r := p.cadence(nil, "run")
	r.exits(t, 1)
	s := step(p.inspect(), "one")
	if len(s.Attempts) != 1 || s.Attempts[0].Class != "check" || s.Status != "failed" {
		t.Fatalf("step %s with attempts %+v, want failed after one check failure", s.Status, s.Attempts)
	}
	if !strings.Contains(r.stdout, "class check is not retried") {
		t.Errorf("stdout does not say why:\n%s", r.stdout)
	}
	if e := s.Attempts[0].Checks[0].ExitCode; e == nil || *e != 3 {
		t.Errorf("exit code %v, want 3", e)
	}
}

// TestCheckOutputGiB: a check that prints 1 GiB leaves cadence's memory
// flat (peak RSS under 64 MiB), its output file capped, and its last lines
// in the follow-up's material.
func TestCheckOutputGiB(t *testing.T) {
	p := checkProject(t, `{max_attempts: 1}`,
		"      - {name: loud, run: 'yes \"a line of a very chatty test suite\" | head -c 1073741824; echo; echo \"FAIL: the last line\"; exit 1', feedback_lines: 3}\n", nil)
	r, peak := p.runMeasured(t, plainBinary(t), peakRSSLimitKiB, "run")
	t.Logf("a check printing 1 GiB: exit %d, cadence peak RSS %d KiB", r.code, peak)
	if peak > peakRSSLimitKiB {
		t.Fatalf("cadence peak RSS %d KiB, over the %d KiB bound", peak, peakRSSLimitKiB)
	}
	r.exits(t, 1)
	a := step(p.inspect(), "one").Attempts[0]
	c := a.Checks[0]
	fi, err := os.Stat(filepath.Join(p.dir, c.OutputFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 64<<20+outputCapSlack || fi.Size() < 64<<20 {
		t.Errorf("check output file is %d bytes, want it cut at 64 MiB", fi.Size())
	}
	rec, err := os.ReadFile(filepath.Join(p.dir, a.FailedHandoff))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `a line of a very chatty test suite\n`) || !strings.Contains(string(rec), `FAIL: the last line`) {
		t.Errorf("the failed-handoff record does not hold the check's last lines:\n%.2000s", rec)
	}
}
