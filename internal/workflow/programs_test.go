package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckPrograms names every agent and check whose program is not there,
// with the line that names it, and passes programs that are: on PATH, on
// the agent's own PATH, or a path relative to the project directory.
func TestCheckPrograms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/agent.sh", "#!/bin/sh\n", 0o755)
	write("bin/plain.txt", "not a program\n", 0o644)
	write("tools/mytool", "#!/bin/sh\n", 0o755)
	toolsDir := filepath.Join(dir, "tools")

	head := "version: 1\ndefaults: {agent: a}\n"
	step := "steps:\n  - id: s\n    prompt: go\n"
	cases := []struct {
		name string
		yaml string
		want []string // substrings of the errors, in order; none: no error
	}{
		{"on PATH", head + "agents:\n  a: {preset: exec, command: [sh, -c, 'echo']}\n" + step, nil},
		{"relative to the project", head + "agents:\n  a: {preset: exec, command: [bin/agent.sh]}\n" + step, nil},
		{"template not checked", head + "agents:\n  a: {preset: exec, command: ['{{ .Step.ID }}']}\n" + step, nil},
		{"agent's own PATH", head + "agents:\n  a: {preset: exec, command: [mytool], env: {PATH: '" + toolsDir + "'}}\n" + step, nil},
		{"sim needs no program", head + "agents:\n  a: {preset: sim, scenario: bin/plain.txt}\n" + step, nil},
		{"shell check not checked", head + "agents:\n  a: {preset: exec, command: [sh]}\n" + step + "    checks: [{name: c, run: 'no-such-thing --x'}]\n", nil},
		{"missing on PATH", head + "agents:\n  a: {preset: exec, command: [claudee, -p]}\n" + step,
			[]string{"w.yaml:4:30: agents.a.command: agent a: program claudee not found on PATH"}},
		{"missing path", head + "agents:\n  a: {preset: exec, command: [bin/nope.sh]}\n" + step,
			[]string{"agents.a.command: agent a: program bin/nope.sh not found (a path with a slash is relative to the project directory)"}},
		{"not executable", head + "agents:\n  a: {preset: exec, command: [bin/plain.txt]}\n" + step,
			[]string{"agent a: program bin/plain.txt cannot be started: it is not executable"}},
		{"a directory", head + "agents:\n  a: {preset: exec, command: [./bin]}\n" + step,
			[]string{"agent a: program ./bin cannot be started: it is a directory"}},
		{"preset default program", head + "agents:\n  a: {preset: codex, env: {PATH: '" + toolsDir + "'}}\n" + step,
			[]string{"agents.a.preset: agent a: program codex not found on PATH"}},
		{"one missing program, every step that names it", "version: 1\nsteps:\n  - {id: a, run: [no-such-tool, x]}\n" +
			"  - {id: b, run: [/bin/true]}\n  - {id: c, run: [no-such-tool, y]}\n  - {id: d, run: [no-such-tool], needs: [a]}\n",
			[]string{"w.yaml:3:", "steps[0].run: step a: program no-such-tool not found on PATH",
				"w.yaml:5:", "steps[2].run: step c: program no-such-tool not found on PATH",
				"w.yaml:6:", "steps[3].run: step d: program no-such-tool not found on PATH"}},
		{"checks, once each though inherited", "version: 1\ndefaults:\n  agent: a\n  checks: [{name: lint, run: [no-such-linter]}]\n" +
			"agents:\n  a: {preset: exec, command: [sh]}\nsteps:\n  - {id: s, prompt: go}\n  - {id: t, prompt: go}\n" +
			"  - {id: u, prompt: go, checks: [{name: vet, run: [bin/vet]}]}\n",
			[]string{"w.yaml:4:", "defaults.checks[0].run: check lint: program no-such-linter not found on PATH",
				"steps[2].checks[0].run: check vet: program bin/vet not found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Parse(dir, "w.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = CheckPrograms(w)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("CheckPrograms: %v", err)
				}
				return
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("CheckPrograms = %v, want Errors", err)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error %q lacks %q (in order)", msg, w)
				}
				at += i
			}
			if n := strings.Count(msg, "\n") + 1; n != len(es) || (strings.Contains(tc.name, "checks") && n != 2) {
				t.Errorf("%d errors: %q", n, msg)
			}
		})
	}
}

// fail_on_exit_code is false unless set; a step's setting wins over the
// defaults'; anything but a boolean is refused where it is written.
func TestFailOnExitCode(t *testing.T) {
	dir := t.TempDir()
	w, err := Parse(dir, "w.yaml", []byte(`version: 1
defaults: {agent: a, fail_on_exit_code: true}
agents: {a: {preset: exec, command: [sh]}}
steps:
  - {id: inherits, prompt: go}
  - {id: lenient, prompt: go, fail_on_exit_code: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Steps[0].FailOnExitCode || w.Steps[1].FailOnExitCode {
		t.Errorf("FailOnExitCode = %v, %v; want true (from defaults), false (the step's)", w.Steps[0].FailOnExitCode, w.Steps[1].FailOnExitCode)
	}
	w, err = Parse(dir, "w.yaml", []byte("version: 1\nagents: {a: {preset: exec, command: [sh]}}\nsteps:\n  - {id: s, agent: a, prompt: go}\n"))
	if err != nil || w.Steps[0].FailOnExitCode {
		t.Errorf("default: %v, %v; want false", err, w)
	}
	_, err = Parse(dir, "w.yaml", []byte("version: 1\nagents: {a: {preset: exec, command: [sh]}}\nsteps:\n  - {id: s, agent: a, prompt: go, fail_on_exit_code: 1}\n"))
	if err == nil || !strings.Contains(err.Error(), "w.yaml:4:") || !strings.Contains(err.Error(), "steps[0].fail_on_exit_code") {
		t.Errorf("a number: %v, want an error at steps[0].fail_on_exit_code", err)
	}
}
