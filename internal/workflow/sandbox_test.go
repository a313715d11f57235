package workflow

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A sandbox: applies key by key: an agent's over defaults', a command
// step's over defaults'; relative paths are the project's, ~ stays for the
// process's home; no sandbox: anywhere is no box.
func TestSandboxLoad(t *testing.T) {
	dir := t.TempDir()
	head := "version: 1\n"
	agents := "agents:\n  a: {preset: exec, command: [/bin/sh]}\n  b: {preset: exec, command: [/bin/sh], sandbox: {network: false, hide: [~/.kube]}}\n  o: {preset: openai, base_url: 'http://x', model: m}\n"
	steps := "steps:\n  - {id: s, agent: a, prompt: go}\n  - {id: c, run: [/bin/true]}\n  - {id: d, run: [/bin/true], sandbox: {write: [/var/cache/x]}}\n"
	tests := []struct {
		name     string
		defaults string
		want     map[string]*Sandbox // agent a, b, o; steps c, d
	}{
		{"no sandbox anywhere but agent b", "", map[string]*Sandbox{
			"b": {Network: false, Hide: []string{"~/.kube"}},
			"d": {Network: true, Write: []string{"/var/cache/x"}},
		}},
		{"defaults apply to every agent and command step, key by key", "defaults: {sandbox: {write: [../shared, cache], read: [~/notes]}}\n", map[string]*Sandbox{
			"a": {Network: true, Write: []string{filepath.Join(filepath.Dir(dir), "shared"), filepath.Join(dir, "cache")}, Read: []string{"~/notes"}},
			"b": {Network: false, Write: []string{filepath.Join(filepath.Dir(dir), "shared"), filepath.Join(dir, "cache")}, Read: []string{"~/notes"}, Hide: []string{"~/.kube"}},
			"c": {Network: true, Write: []string{filepath.Join(filepath.Dir(dir), "shared"), filepath.Join(dir, "cache")}, Read: []string{"~/notes"}},
			"d": {Network: true, Write: []string{"/var/cache/x"}, Read: []string{"~/notes"}},
		}},
		{"an empty sandbox: is a box with the defaults", "defaults: {sandbox: {}}\n", map[string]*Sandbox{
			"a": {Network: true},
			"b": {Network: false, Hide: []string{"~/.kube"}},
			"c": {Network: true},
			"d": {Network: true, Write: []string{"/var/cache/x"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Parse(dir, "w.yaml", []byte(head+tc.defaults+agents+steps))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*Sandbox{}
			for _, n := range []string{"a", "b", "o"} {
				if w.Agents[n].Sandbox != nil {
					got[n] = w.Agents[n].Sandbox
				}
			}
			for _, s := range w.Steps {
				if s.Sandbox != nil {
					got[s.ID] = s.Sandbox
				}
			}
			for k, v := range got { // nil and empty lists are the same
				for _, l := range []*[]string{&v.Write, &v.Read, &v.Hide} {
					if len(*l) == 0 {
						*l = nil
					}
				}
				got[k] = v
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("boxes:\n got  %s\n want %s", boxes(got), boxes(tc.want))
			}
		})
	}
}

func boxes(m map[string]*Sandbox) string {
	var b strings.Builder
	for _, k := range []string{"a", "b", "o", "c", "d"} {
		if m[k] != nil {
			b.WriteString(k + ": " + m[k].text() + "; ")
		}
	}
	return b.String()
}

func TestSandboxErrors(t *testing.T) {
	head := "version: 1\nagents:\n  a: {preset: exec, command: [/bin/sh]}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", head + "defaults:\n  sandbox: {netwrok: false}\nsteps:\n  - {id: s, agent: a, prompt: go}\n",
			"w.yaml:5:13: defaults.sandbox.netwrok: unknown key (want network, write, read or hide)"},
		{"network not a boolean", head + "defaults:\n  sandbox: {network: 'no'}\nsteps:\n  - {id: s, agent: a, prompt: go}\n",
			"w.yaml:5:22: defaults.sandbox.network: want true or false, got a string"},
		{"write a string", head + "defaults:\n  sandbox: {write: /srv}\nsteps:\n  - {id: s, agent: a, prompt: go}\n",
			"w.yaml:5:20: defaults.sandbox.write: want a list of strings, got a string"},
		{"not a mapping", head + "defaults:\n  sandbox: true\nsteps:\n  - {id: s, agent: a, prompt: go}\n",
			"defaults.sandbox: want a mapping"},
		{"~user", head + "steps:\n  - {id: s, run: [/bin/true], sandbox: {hide: [~bob/.ssh]}}\n",
			`w.yaml:5:48: steps[0].sandbox.hide[0]: path "~bob/.ssh": only ~ or ~/ is expanded, not ~user (write the path out)`},
		{"the root directory", "version: 1\nagents:\n  a: {preset: exec, command: [/bin/sh], sandbox: {write: [/]}}\nsteps:\n  - {id: s, agent: a, prompt: go}\n",
			`w.yaml:3:59: agents.a.sandbox.write[0]: path "/" is the whole filesystem: name the directories the process needs`},
		{"an empty path", head + "steps:\n  - {id: s, run: [/bin/true], sandbox: {read: ['']}}\n",
			"steps[0].sandbox.read[0]: empty path"},
		{"on an agent step", head + "steps:\n  - {id: s, agent: a, prompt: go, sandbox: {network: false}}\n",
			"w.yaml:5:35: steps[0].sandbox: an agent step runs in its agent's box: set sandbox: on the agent (agents.NAME.sandbox) or in defaults"},
		{"on an openai agent", "version: 1\nagents:\n  o: {preset: openai, base_url: 'http://x', model: m, sandbox: {}}\nsteps:\n  - {id: s, agent: o, prompt: go}\n",
			"w.yaml:3:55: agents.o.sandbox: agent o (preset openai) runs no process on this machine: a sandbox does not apply"},
		{"on an approval step", head + "steps:\n  - {id: s, approval: {prompt: ok?}, sandbox: {}}\n",
			"steps[0].sandbox: sandbox does not apply to an approval step"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(t.TempDir(), "w.yaml", []byte(tc.yaml))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n %s\nwant it to contain\n %s", err, tc.want)
			}
		})
	}
}

// A write: path that does not exist is reported before anything runs,
// where it is written; one under ~ is left to the box, whose HOME may not
// be cadence's.
func TestCheckProgramsSandboxWrite(t *testing.T) {
	dir := t.TempDir()
	w, err := Parse(dir, "w.yaml", []byte(`version: 1
steps:
  - {id: c, run: [/bin/true], sandbox: {write: [., missing, ~/not-checked]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckPrograms(w)
	want := "w.yaml:3:48: steps[0].sandbox.write: step c (sandbox): write: path " + filepath.Join(dir, "missing") + " does not exist (create it, or remove it from write:)"
	if err == nil || err.Error() != want {
		t.Errorf("CheckPrograms:\n %v\nwant\n %s", err, want)
	}
}

// A missing bwrap is a load-time error of run, resume and check that
// names the package, once per sandbox: written however many agents and
// steps share it.
func TestCheckProgramsSandbox(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no bwrap there
	w, err := Parse(dir, "w.yaml", []byte(`version: 1
defaults:
  sandbox: {network: false}
agents:
  a: {preset: exec, command: [/bin/sh]}
  b: {preset: exec, command: [/bin/sh]}
steps:
  - {id: s, agent: a, prompt: go}
  - {id: c, run: [/bin/true], sandbox: {hide: [~/.kube]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckPrograms(w)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("CheckPrograms = %v, want Errors", err)
	}
	want := []string{
		"w.yaml:3:3: defaults.sandbox: agent a (sandbox): program bwrap not found on PATH (install the bubblewrap package, e.g. apt-get install bubblewrap; cadence never runs it unboxed)",
		"w.yaml:9:31: steps[1].sandbox: step c (sandbox): program bwrap not found on PATH (install the bubblewrap package, e.g. apt-get install bubblewrap; cadence never runs it unboxed)",
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got  %q\n want %q", got, want)
	}
}

// restore_on_retry: a step's own over defaults', on agent and command
// steps; a map step needs workspace: worktree; anything but a boolean is
// refused where it is written.
func TestRestoreOnRetry(t *testing.T) {
	head := "version: 1\nagents:\n  a: {preset: exec, command: [/bin/sh]}\n"
	w, err := Parse(t.TempDir(), "w.yaml", []byte(head+`defaults: {agent: a, restore_on_retry: true}
steps:
  - {id: inherits, prompt: go}
  - {id: off, prompt: go, restore_on_retry: false}
  - {id: cmd, run: [/bin/true]}
  - {id: items, prompt: go, map: {items: {file: i.json}, key: /id, workspace: worktree}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"inherits": true, "off": false, "cmd": true, "items": true}
	for _, s := range w.Steps {
		if s.RestoreOnRetry != want[s.ID] {
			t.Errorf("step %s: restore_on_retry %v, want %v", s.ID, s.RestoreOnRetry, want[s.ID])
		}
	}
	if w, err = Parse(t.TempDir(), "w.yaml", []byte(head+"steps:\n  - {id: one, agent: a, prompt: go}\n")); err != nil || w.Steps[0].RestoreOnRetry {
		t.Errorf("without the key: %v, %v; want off", err, err == nil && w.Steps[0].RestoreOnRetry)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"a map step sharing the project directory", head + "defaults: {restore_on_retry: true}\nsteps:\n  - {id: fix, agent: a, prompt: go, map: {items: {file: i.json}, key: /id}}\n",
			"w.yaml:4:30: defaults.restore_on_retry: restore_on_retry on map step fix needs workspace: worktree (items sharing the project directory would undo each other's work)"},
		{"not a boolean", head + "steps:\n  - {id: one, agent: a, prompt: go, restore_on_retry: yes please}\n",
			"w.yaml:5:55: steps[0].restore_on_retry: want true or false, got a string"},
		{"on an approval step", head + "steps:\n  - {id: gate, approval: {prompt: ok?}, restore_on_retry: true}\n",
			"steps[0].restore_on_retry: restore_on_retry does not apply to an approval step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(t.TempDir(), "w.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n %v\nwant it to contain\n %s", err, tc.want)
			}
		})
	}
}
