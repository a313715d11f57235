package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// regexWorkflow is a step a whose answer is {"text": TEXT} and a step b
// whose when runs the regular expression pattern over it, one call per
// element of a list of eight, none of which matches.
func regexWorkflow(pattern string) string {
	return simWorkflow(`{max_attempts: 1}`, `
  - {id: a, prompt: go}
  - id: b
    prompt: go
    when: '[1, 2, 3, 4, 5, 6, 7, 8].exists(i, steps.a.output.text.matches("`+pattern+`"))'
`)
}

func textAnswer(n int) map[string]string {
	return map[string]string{"scenario.yaml": "steps:\n  a:\n    - answer: '{\"text\": \"" + strings.Repeat("abcdefghij", n/10) + "\"}'\n"}
}

// TestExprRegexOverHugeAnswer: a regular expression over a 1 MB answer
// (16 times the bound; the 7 MB of the report take a minute to produce
// and read back under -race) fails the step with class expression and a
// message naming the bound, without scanning it, where it used to scan
// the whole answer: 48 s for 7 MB.
func TestExprRegexOverHugeAnswer(t *testing.T) {
	p := newProject(t, regexWorkflow(`[a-j]{1,100}z`), textAnswer(1_000_000))
	p.cadence(nil, "run").exits(t, 1)
	rep := p.inspect()
	a, b := step(rep, "a"), step(rep, "b")
	if len(b.Attempts) != 1 || b.Attempts[0].Class != "expression" ||
		!strings.Contains(b.Attempts[0].Error, "matches() scans strings of at most 65536 bytes, and this one is 1000000 bytes long") {
		t.Fatalf("step b %+v, want one attempt failed with class expression naming the bound", b.Attempts)
	}
	// The message comes from the check made before any scan; how long
	// the when took after a ended is logged, not asserted (a loaded
	// machine under -race takes seconds to read a big output back).
	if len(a.Attempts) == 1 && a.Attempts[0].FinishedAt != nil && b.Attempts[0].FinishedAt != nil {
		t.Logf("the when failed %v after a ended", b.Attempts[0].FinishedAt.Sub(*a.Attempts[0].FinishedAt))
	}
}

// TestExprSignalDuringEvaluation stops cadence with SIGTERM and SIGINT
// while a when runs a slow regular expression (within the bounds, over a
// 64 KB answer): cadence stops at once with exit 3, and the step whose
// when was being evaluated is not failed: a resume decides it again.
func TestExprSignalDuringEvaluation(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := newProject(t, regexWorkflow(`.{1,495}z`), textAnswer(65_000))
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := p.command(ctx, nil, "run")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once a's handoff is stored, all cadence has left to do is b's when.
			waitFor(t, "step a's handoff", func() bool {
				m, _ := filepath.Glob(filepath.Join(p.dir, ".cadence", "handoffs", "*", "a.json"))
				return len(m) == 1
			})
			_ = cmd.Process.Signal(sig)
			signalled := time.Now()
			r := p.finish(cmd, cmd.Wait(), out.String(), errb.String())
			took := time.Since(signalled)
			t.Logf("stopped %v after %v", sig, took)
			r.exits(t, 3)
			if took > 10*time.Second {
				t.Errorf("cadence took %v to stop after %v", took, sig)
			}
			if s := step(p.inspect(), "b"); s.Status == "failed" || len(s.Attempts) != 0 {
				t.Errorf("step b is %s with attempts %+v, want it undecided", s.Status, s.Attempts)
			}
		})
	}
}
