package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/history/historytest"
)

var updateLoopGolden = flag.Bool("update-loop-golden", false, "rewrite testdata/loops.inspect.golden from this build")

// TestInspectLoopsAndGates runs `cadence inspect` in its forms over a run
// with a loop of 3 iterations and two gates (historytest.LoopRun) and
// compares what each prints with testdata/loops.inspect.golden, line by
// line; bad uses of --iteration and --step get a clear error and exit 2.
func TestInspectLoopsAndGates(t *testing.T) {
	dir := t.TempDir()
	historytest.LoopRun(t, dir)
	var out bytes.Buffer
	for _, args := range [][]string{
		{"inspect", dir},
		{"inspect", dir, "--step", "implement"},
		{"inspect", dir, "--step", "implement", "--iteration", "1"},
		{"inspect", dir, "--step", "code"},
		{"inspect", dir, "--step", "implement/3/code"},
		{"inspect", dir, "--step", "signoff"},
		{"inspect", dir, "--step", "merge-gate"},
		{"inspect", dir, "--step", "implement", "--iteration", "3", "--json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("cadence %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		out.WriteString("$ cadence " + strings.Join(args[2:], " ") + "\n" + stdout.String() + "\n")
	}
	golden := filepath.Join("testdata", "loops.inspect.golden")
	if *updateLoopGolden {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	got, lines := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(got), len(lines)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(lines) {
			w = lines[i]
		}
		if g != w {
			t.Fatalf("line %d differs:\n got %q\nwant %q", i+1, g, w)
		}
	}

	// --stats: a table of loops and one of gates; merge-gate's wait runs
	// up to now, so only its other figures are compared.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"inspect", dir, "--stats"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("inspect --stats: exit %d: %s", code, stderr.String())
	}
	rows := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = strings.Join(f, " ")
		}
	}
	for name, want := range map[string]string{
		"LOOP":       "LOOP STEP RUNS UNTIL MET EXHAUSTED FAILED RUNNING ITERATIONS TO SUCCESS MIN MEDIAN MAX",
		"implement":  "implement 1 1 0 0 0 3 3 3 3",
		"GATE":       "GATE REACHED APPROVED REJECTED TIMED OUT WAITING MEAN WAIT MAX WAIT WAITING FOR",
		"signoff":    "signoff 1 1 0 0 0 13s 13s -",
		"merge-gate": "merge-gate 1 0 0 0 1 - -",
	} {
		if !strings.HasPrefix(rows[name], want) {
			t.Errorf("inspect --stats row %s = %q, want %q…\n%s", name, rows[name], want, stdout.String())
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--iteration", "2"}, "--iteration needs --step"},
		{[]string{"--step", "implement", "--iteration", "4"}, "loop step implement of run loop1 has no iteration 4 (it ran 3 iterations)"},
		{[]string{"--step", "plan", "--iteration", "1"}, "step plan of run loop1 is not a loop step"},
		{[]string{"--step", "implement", "--iteration=-1"}, "iterations are numbered from 1"},
		{[]string{"--step", "code", "--attempt", "1"}, "step code ran in 3 iterations of run loop1; name one by its path, e.g. --step implement/3/code"},
		{[]string{"--step", "nope"}, `run loop1 has no step "nope"`},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"inspect", dir}, tc.args...)
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("cadence %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr.String(), exitUsage, tc.want)
		}
	}
}
