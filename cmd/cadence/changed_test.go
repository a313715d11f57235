package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// changedProject is a run of two steps killed while step one waits out the
// backoff after its first failed attempt; workflow writes a new version of
// its workflow with the given retry settings and steps.
func changedProject(t *testing.T) (*project, func(retry, steps string)) {
	t.Helper()
	const steps = `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`
	p := newProject(t, simWorkflow(`{max_attempts: 2, backoff: fixed, initial: 500ms, jitter: none}`, steps),
		map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - answer: 'no json'
    - answer: 'still no json'
    - answer: '{"ok": true}'
  two: [{answer: '{"ok": true}'}]
  three: [{answer: '{"ok": true}'}]
  zero: [{answer: '{"ok": true}'}]
`})
	p.cadence([]string{"CADENCE_FAILPOINT=during-backoff"}, "run").killed(t)
	rewrite := func(retry, steps string) {
		t.Helper()
		path := filepath.Join(p.dir, ".cadence", "workflow.yaml")
		if err := os.WriteFile(path, []byte(simWorkflow(retry, steps)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p, rewrite
}

func stepIDs(p *project) []string {
	var ids []string
	for _, s := range p.inspect().Steps {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestResumeAllowChangedApplies resumes runs under a changed workflow with
// --allow-changed: what the change summary lists takes effect (a raised
// max_attempts, a step added before the others, a step not yet run renamed),
// and what cannot be applied (dropping a step that already ran) is refused
// with exit 2, naming the step, before anything changes.
func TestResumeAllowChangedApplies(t *testing.T) {
	t.Run("max_attempts raised", func(t *testing.T) {
		p, rewrite := changedProject(t)
		rewrite(`{max_attempts: 3, backoff: fixed, initial: 500ms, jitter: none}`, `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`)
		r := p.cadence(nil, "resume")
		r.exits(t, 2)
		if !strings.Contains(r.stderr, "retry.max_attempts 2 → 3") {
			t.Fatalf("the change summary does not list the new max_attempts:\n%s", r.stderr)
		}
		p.cadence(nil, "resume", "--allow-changed").exits(t, 0)
		s := step(p.inspect(), "one")
		if s.Status != "succeeded" || s.MaxAttempts != 3 || s.AttemptsUsed != 3 || len(p.executions("one")) != 3 {
			t.Fatalf("step one: status %s, %d of %d attempts, %d executions; want succeeded at 3 of 3",
				s.Status, s.AttemptsUsed, s.MaxAttempts, len(p.executions("one")))
		}
	})

	t.Run("step added first", func(t *testing.T) {
		p, rewrite := changedProject(t)
		rewrite(`{max_attempts: 3, backoff: fixed, initial: 500ms, jitter: none}`, `
  - {id: zero, prompt: zero, handoff: {schema: s.json}}
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`)
		r := p.cadence(nil, "resume", "--allow-changed")
		r.exits(t, 0)
		if got := strings.Join(stepIDs(p), " "); got != "zero one two" {
			t.Fatalf("steps after resume: %s, want zero one two", got)
		}
		if len(p.executions("zero")) != 1 || len(p.executions("two")) != 1 {
			t.Fatalf("executions: %+v", p.ledger())
		}
	})

	t.Run("step not yet run renamed", func(t *testing.T) {
		p, rewrite := changedProject(t)
		rewrite(`{max_attempts: 3, backoff: fixed, initial: 500ms, jitter: none}`, `
  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: three, prompt: two, handoff: {schema: s.json}}
`)
		r := p.cadence(nil, "resume")
		r.exits(t, 2)
		for _, want := range []string{"step two removed", "step three added"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the change summary does not say %q:\n%s", want, r.stderr)
			}
		}
		p.cadence(nil, "resume", "--allow-changed").exits(t, 0)
		if got := strings.Join(stepIDs(p), " "); got != "one three" {
			t.Fatalf("steps after resume: %s, want one three", got)
		}
		if len(p.executions("two")) != 0 || len(p.executions("three")) != 1 {
			t.Fatalf("executions: %+v", p.ledger())
		}
	})

	t.Run("step that ran renamed", func(t *testing.T) {
		p, rewrite := changedProject(t)
		before := p.inspect()
		rewrite(`{max_attempts: 2, backoff: fixed, initial: 500ms, jitter: none}`, `
  - {id: uno, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
`)
		r := p.cadence(nil, "resume", "--allow-changed")
		r.exits(t, 2)
		if !strings.Contains(r.stderr, "step one") || !strings.Contains(r.stderr, "cadence run --new") {
			t.Fatalf("the refusal does not name step one and the way out:\n%s", r.stderr)
		}
		after := p.inspect()
		if len(after.Steps) != 2 || after.Steps[0].ID != "one" || len(after.Steps[0].Attempts) != len(before.Steps[0].Attempts) ||
			after.Run.WorkflowSHA256 != before.Run.WorkflowSHA256 {
			t.Fatalf("the refused resume changed the run: %+v", after)
		}
		if len(p.executions("uno")) != 0 {
			t.Fatalf("a refused resume ran an agent: %+v", p.ledger())
		}
	})
}
