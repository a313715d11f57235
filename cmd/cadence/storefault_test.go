package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestStoreFaultsNeverDoubleCountOrLoseATransition makes the K-th write
// transaction of a run fail, once before its commit and once after it (an
// ambiguous commit: it landed, but cadence was told it failed), for every K
// the run reaches. cadence stops with a clear error; a resume without the
// fault reads the committed state again and finishes. Afterwards every
// execution of the agent is a recorded attempt, each counted once, and no
// step ran after its success.
func TestStoreFaultsNeverDoubleCountOrLoseATransition(t *testing.T) {
	for _, mode := range []string{"before-commit", "after-commit"} {
		// A clean run of this workflow makes 12 write transactions: the
		// run, begin, pid and outcome of each of its three attempts, and
		// the run's end; K up to 14 covers every one of them.
		for k := 1; k <= 14; k++ {
			p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {from: file, path: out/two.json, schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - answer: '{"ok": "no"}'
    - answer: '{"ok": true}'
  two:
    - write_file: '{"ok": true}'
      answer: done
`})
			fault := fmt.Sprintf("%s:%d", mode, k)
			r := p.cadence([]string{"CADENCE_STOREFAULT=" + fault}, "run")
			t.Run(fault, func(t *testing.T) {
				if strings.Contains(r.stderr, "panic:") {
					t.Fatalf("cadence panicked:\n%s", r.stderr)
				}
				if r.code == 0 {
					// The fault was not reached, or it hit the commit of an
					// agent's pid: then the agent is stopped and the attempt
					// recorded as failed, and the run went on.
					checkFaultHistory(t, p)
					return
				}
				r.exits(t, 1)
				if !strings.Contains(r.stderr, "injected storage fault") {
					t.Fatalf("stderr does not name the fault:\n%s", r.stderr)
				}
				res := p.cadence(nil, "resume")
				if res.code == 2 && strings.Contains(res.stderr, "no unfinished run") {
					// Either the fault hit the creation of the run, and
					// nothing was recorded (a new run is the way on), or it
					// hit the run's final commit after it landed.
					if ins := p.cadence(nil, "inspect", "--json"); ins.code != 0 {
						res = p.cadence(nil, "run")
					} else {
						res = result{}
					}
				}
				res.exits(t, 0)
				checkFaultHistory(t, p)
			})
		}
	}
}

// checkFaultHistory checks a finished run against the sim agent's ledger.
func checkFaultHistory(t *testing.T, p *project) {
	t.Helper()
	rep := p.inspect()
	if v := checkHistory(rep, p.ledger()); len(v) > 0 {
		t.Fatalf("violations:\n%s\n%s\n%s", strings.Join(v, "\n"), reportDump(rep), ledgerDump(p.ledger()))
	}
	for _, s := range rep.Steps {
		if s.Status != "succeeded" {
			t.Errorf("step %s is %s", s.ID, s.Status)
		}
	}
}
