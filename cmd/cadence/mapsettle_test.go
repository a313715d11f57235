package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
)

// TestMapStepFailingForDeadItemsSettlesLeftAttempts kills cadence with
// SIGKILL while one item of a map step has died (dead-lettered, more than
// max_failures 0) and another item's agent runs; the resume finds too many
// dead items and claims nothing more, and the map step fails. The attempt
// the killed process left running must still be settled before the run
// ends: interrupted and counted, as every killed attempt is (G5), its agent
// gone (G6) and never run again. On a shared (PostgreSQL) state only the
// process that claims an item settles its attempts, and the resume claims
// none; on SQLite the resume settles every attempt as it starts.
func TestMapStepFailingForDeadItemsSettlesLeftAttempts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		p := newEngineProject(t, e, simWorkflow(`{max_attempts: 1, backoff: fixed, initial: 10ms, jitter: none}`, `  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 2, max_failures: 0}
`), map[string]string{"s.json": boolSchema, "items.json": `[{"id": "a"}, {"id": "b"}]`, "scenario.yaml": `steps:
  fix/a:
    - {answer: '{"ok": "no"}'}
  fix/b:
    - {sleep: 120s, answer: '{"ok": true}'}
`})
		// Kill once a is dead and b's agent runs with its pid committed.
		var agentPID int
		p.killWhen(t, "run", func() bool {
			rep, err := history.Inspect(context.Background(), p.dir, p.state, "", false)
			if err != nil {
				return false // no run yet
			}
			fix := step(*rep, "fix")
			if len(fix.Dead) != 1 || fix.Dead[0].Key != "a" {
				return false
			}
			b := item(fix, "b")
			if len(b.Attempts) != 1 || b.Attempts[0].Status != checkpoint.AttemptRunning || b.Attempts[0].PID == nil {
				return false
			}
			for _, r := range p.executions("fix") {
				if r.Item == "b" {
					agentPID = r.PID
				}
			}
			return agentPID != 0
		})
		if rep := p.inspect(); item(step(rep, "fix"), "b").Attempts[0].Status != checkpoint.AttemptRunning {
			t.Fatalf("after the kill, b's attempt is %s, want it left running", item(step(rep, "fix"), "b").Attempts[0].Status)
		}

		p.cadence(nil, "resume").exits(t, 1)

		rep := p.inspect()
		if rep.Run.Status != checkpoint.RunFailed {
			t.Errorf("run %s, want failed", rep.Run.Status)
		}
		fix := step(rep, "fix")
		if fix.Status != checkpoint.StepFailed {
			t.Errorf("step fix %s, want failed", fix.Status)
		}
		for _, it := range fix.Items {
			for _, a := range it.Attempts {
				if a.Status == checkpoint.AttemptRunning {
					t.Errorf("item %s attempt %d still running after the run ended", it.Key, a.N)
				}
			}
		}
		b := item(fix, "b")
		if len(b.Attempts) != 1 {
			t.Fatalf("item b has %d attempts, want the one the kill interrupted", len(b.Attempts))
		}
		a := b.Attempts[0]
		if a.Status != checkpoint.AttemptInterrupted || a.Class != string(handoff.ClassInterrupted) || a.Uncounted || a.FinishedAt == nil {
			t.Errorf("b's killed attempt: status %s, class %q, uncounted %v, finished %v; want interrupted, class %q, counted, finished",
				a.Status, a.Class, a.Uncounted, a.FinishedAt, handoff.ClassInterrupted)
		}
		if b.AttemptsUsed != 1 {
			t.Errorf("item b used %d attempts, want 1: a killed attempt counts", b.AttemptsUsed)
		}
		var runs int
		for _, r := range p.executions("fix") {
			if r.Item == "b" {
				runs++
			}
		}
		if runs != 1 {
			t.Errorf("b's agent ran %d times, want once: the failed step runs nothing more", runs)
		}
		waitFor(t, "b's agent to be gone (G6)", func() bool { return !alive(agentPID) })
	})
}

// item returns the item of map step report s keyed key.
func item(s history.StepReport, key string) history.ItemReport {
	for _, it := range s.Items {
		if it.Key == key {
			return it
		}
	}
	return history.ItemReport{}
}

// TestFailedRunSettlesLeftSteps is the same for two steps side by side:
// cadence is killed once one has failed while the other's agent runs. The
// resume finds the run failed before it and starts nothing, and the other
// step's attempt must still be settled, interrupted and counted (G5). On
// a shared (PostgreSQL) state a step's attempts are settled only by the
// process that claims the step, and the resume claims none.
func TestFailedRunSettlesLeftSteps(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		p := newEngineProject(t, e, simWorkflow(`{max_attempts: 1, backoff: fixed, initial: 10ms, jitter: none}`,
			`  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, needs: [], prompt: two, handoff: {schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `steps:
  one:
    - {answer: '{"ok": "no"}'}
  two:
    - {sleep: 120s, answer: '{"ok": true}'}
`})
		var agentPID int
		p.killWhen(t, "run", func() bool {
			rep, err := history.Inspect(context.Background(), p.dir, p.state, "", false)
			if err != nil {
				return false // no run yet
			}
			two := step(*rep, "two")
			if step(*rep, "one").Status != checkpoint.StepFailed || len(two.Attempts) != 1 || two.Attempts[0].PID == nil {
				return false
			}
			if runs := p.executions("two"); len(runs) == 1 {
				agentPID = runs[0].PID
			}
			return agentPID != 0
		})

		p.cadence(nil, "resume").exits(t, 1)

		rep := p.inspect()
		if rep.Run.Status != checkpoint.RunFailed {
			t.Errorf("run %s, want failed", rep.Run.Status)
		}
		two := step(rep, "two")
		if len(two.Attempts) != 1 {
			t.Fatalf("step two has %d attempts, want the one the kill interrupted", len(two.Attempts))
		}
		a := two.Attempts[0]
		if a.Status != checkpoint.AttemptInterrupted || a.Class != string(handoff.ClassInterrupted) || a.Uncounted || a.FinishedAt == nil {
			t.Errorf("two's killed attempt: status %s, class %q, uncounted %v, finished %v; want interrupted, class %q, counted, finished",
				a.Status, a.Class, a.Uncounted, a.FinishedAt, handoff.ClassInterrupted)
		}
		if runs := len(p.executions("two")); runs != 1 {
			t.Errorf("two's agent ran %d times, want once: a failed run starts nothing more", runs)
		}
		waitFor(t, "two's agent to be gone (G6)", func() bool { return !alive(agentPID) })
	})
}

// TestMapStepFailingLeavesLiveWorkersItems: a map step that fails for a
// dead item while a live worker runs another item leaves that item to the
// worker (PostgreSQL; workers share only a PostgreSQL state). The run's
// process settles only what dead processes left: it neither settles the
// worker's running attempt nor kills its agent.
func TestMapStepFailingLeavesLiveWorkersItems(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	s := &sharedRun{t: t, ttl: leaseTTL, state: pg.NewDatabase(t), ledger: filepath.Join(t.TempDir(), "ledger.jsonl")}
	// Item a's answer is accepted, and its check fails once the test
	// creates the release file: a dies when the test says so. Item b's
	// agent works for two minutes.
	wf := `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 1, backoff: fixed, initial: 10ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ` + s.ledger + `]
steps:
  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    checks:
      - {name: released, run: 'while [ ! -f ` + release + ` ]; do sleep 0.01; done; false'}
    map: {items: {file: items.json}, key: /id, max_parallel: 1, max_failures: 0}
`
	files := map[string]string{"s.json": boolSchema, "items.json": `[{"id": "a"}, {"id": "b"}]`, ".cadence/project": sharedProjectID,
		"scenario.yaml": "steps:\n  fix/a: [{answer: '{\"ok\": true}'}]\n  fix/b: [{sleep: 120s, answer: '{\"ok\": true}'}]\n"}
	for range 2 {
		p := newProject(t, wf, files)
		p.state = s.state
		s.checkouts = append(s.checkouts, p)
	}

	run := s.start(0, "run")
	waitFor(t, "the run's process to run item a", func() bool { return len(s.executions()["a"]) == 1 })
	worker := s.worker(1)
	var agent int
	waitFor(t, "the worker to run item b", func() bool {
		_, agent = s.heldBy(worker.cmd.Process.Pid, map[string]bool{"b": true})
		return agent != 0
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run.wait(t).exits(t, 1)

	rep := s.report()
	if rep.Run.Status != checkpoint.RunFailed {
		t.Errorf("run %s, want failed", rep.Run.Status)
	}
	b := s.items()["b"]
	if len(b.Attempts) != 1 || b.Attempts[0].Status != checkpoint.AttemptRunning {
		t.Errorf("item b: attempts %+v, want its one attempt still running in the worker", b.Attempts)
	}
	if !alive(agent) {
		t.Error("the worker's agent of item b was killed by the run's process")
	}
	_ = worker.cmd.Process.Signal(syscall.SIGTERM)
	worker.wait(t).exits(t, 3)
}

// TestWorkerClaimsNothingOverMaxFailures: once more items of a map step
// are dead than its max_failures, a worker claims none of its items, as
// the run's process claims none, and does not report that as a claim that
// failed (PostgreSQL). Item a dies at once and b runs for two minutes in
// the run's process, which holds the step open; c is pending.
func TestWorkerClaimsNothingOverMaxFailures(t *testing.T) {
	s := &sharedRun{t: t, ttl: leaseTTL, state: pg.NewDatabase(t), ledger: filepath.Join(t.TempDir(), "ledger.jsonl")}
	wf := `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 1, backoff: fixed, initial: 10ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ` + s.ledger + `]
steps:
  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 2, max_failures: 0}
`
	files := map[string]string{"s.json": boolSchema, "items.json": `[{"id": "a"}, {"id": "b"}, {"id": "c"}]`, ".cadence/project": sharedProjectID,
		"scenario.yaml": "steps:\n  fix/a: [{answer: '{\"ok\": \"no\"}'}]\n  fix/b: [{sleep: 120s, answer: '{\"ok\": true}'}]\n  fix/c: [{answer: '{\"ok\": true}'}]\n"}
	for range 2 {
		p := newProject(t, wf, files)
		p.state = s.state
		s.checkouts = append(s.checkouts, p)
	}

	run := s.start(0, "run")
	waitFor(t, "a dead and b's agent running in the run's process", func() bool {
		rep, err := history.Inspect(context.Background(), s.checkouts[0].dir, s.state, "", false)
		if err != nil {
			return false // no run yet
		}
		fix := step(*rep, "fix")
		b := item(fix, "b")
		return len(fix.Dead) == 1 && fix.Dead[0].Key == "a" && len(b.Attempts) == 1 && b.Attempts[0].PID != nil
	})
	worker := s.start(1, "worker", "--once", "--poll", "50ms")
	worker.wait(t).exits(t, 0)
	if strings.Contains(worker.err.String(), "could not claim") {
		t.Errorf("the worker reported the step's dead items as a failed claim:\n%s", worker.err)
	}
	if c := s.items()["c"]; len(c.Attempts) != 0 {
		t.Errorf("item c: %d attempts, want none: more items are dead than max_failures", len(c.Attempts))
	}
	_ = run.cmd.Process.Signal(syscall.SIGTERM)
	run.wait(t)
}
