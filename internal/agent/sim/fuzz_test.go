package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzScenario feeds arbitrary bytes to ParseScenario: it must not panic,
// and it must return either a scenario whose entries all pass their checks
// or an error that names the scenario file.
func FuzzScenario(f *testing.F) {
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no scenario seeds: %v", err)
	}
	paths = append(paths, "../testdata/scenario.yaml")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"steps:\n",
		"steps: {a: []}\n",
		"steps:\n  a:\n    - help: {context: {1: [x, {y: null}], true: 2.5}}\n",
		"steps:\n  a:\n    - sleep: 1h\n      rate_limit: {retry_after: -1s}\n",
		"steps:\n  a: &x\n    - answer: hi\n  b: *x\n",
		"steps:\n  a:\n    - exit_code: 256\n",
		"steps:\n  a:\n    - crash: {after_bytes: 9223372036854775808}\n",
		"steps:\n  a:\n    - sleep: {}\n",
		"%YAML 1.2\n---\nsteps: !!map {}\n...\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		sc, err := ParseScenario(name, data)
		if err != nil {
			if sc != nil {
				t.Errorf("ParseScenario returned a scenario and the error %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "scenario "+name+": ") {
				t.Errorf("error %q does not name the scenario", msg)
			}
			// A position is given wherever go-yaml reports one; some of its
			// errors (an alias to an unknown anchor, say) carry none, and so
			// does the panic it is recovered from.
			return
		}
		if sc == nil {
			t.Fatal("ParseScenario returned neither a scenario nor an error")
		}
		for step, entries := range sc.Steps {
			for i, e := range entries {
				if err := e.check(); err != nil {
					t.Errorf("steps.%s[%d] was accepted but fails its check: %v", step, i, err)
				}
				if e.Help != nil {
					if _, err := jsonContext(e.Help.Context); err != nil {
						t.Errorf("steps.%s[%d]: help context accepted but not encodable: %v", step, i, err)
					}
				}
			}
			if _, err := sc.Entry(step, 1); err != nil && len(entries) > 0 {
				t.Errorf("Entry(%q, 1): %v", step, err)
			}
		}
	})
}
