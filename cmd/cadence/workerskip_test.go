package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWorkerClaimsOnlyRunsOfItsWorkflow is issue 19's shared database:
// project A's run and a worker started in the checkout of project X
// (another name, agent and step) use one PostgreSQL database. The worker
// must claim none of A's items, run nothing, and say once which run it
// skips and why; A's run ends with every item run by its own process.
// X's checkout carries A's project id (.cadence/project), as a checkout
// of the same repository whose workflow has changed would: with an id of
// its own it would not see A's run at all (TestTwoProjectsShareAState).
func TestWorkerClaimsOnlyRunsOfItsWorkflow(t *testing.T) {
	var items []string
	scenario := "steps:\n  fix: [{sleep: 150ms, answer: '{\"ok\": true}'}]\n"
	for i := 1; i <= 8; i++ {
		items = append(items, fmt.Sprintf(`{"id": "a%d"}`, i))
	}
	s := newSharedRun(t, pg.NewDatabase(t), 1, items, scenario, 1)

	xLedger := filepath.Join(t.TempDir(), "ledger.jsonl")
	x := newProject(t, `version: 1
name: project-x
defaults: {agent: xsim}
agents:
  xsim: {preset: sim, scenario: scenario.yaml, args: [--ledger, `+xLedger+`]}
steps:
  - id: fix
    prompt: 'X fixes {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 4}
`, map[string]string{"s.json": boolSchema, "scenario.yaml": scenario, "items.json": "[]", ".cadence/project": sharedProjectID})
	x.state = s.state
	s.checkouts = append(s.checkouts, x)

	// What ran in X's checkout: its own agent's executions, and the
	// transcripts of attempts of A's items that X's worker ran there.
	xRuns := func() int {
		outs, _ := filepath.Glob(filepath.Join(x.dir, ".cadence", "attempts", "*", "fix", "*", "*.out"))
		return len((&project{t: t, dir: filepath.Dir(xLedger)}).ledger()) + len(outs)
	}
	worker := s.worker(1)
	run := s.start(0, "run")
	waitFor(t, "the worker to skip the run, or to claim an item of it", func() bool {
		return strings.Contains(worker.err.String(), "skipping run") || xRuns() > 0
	})
	run.wait(t).exits(t, 0)
	_ = worker.cmd.Process.Signal(syscall.SIGTERM)
	wr := worker.wait(t)
	wr.exits(t, 3)

	runID := s.report().Run.ID
	if n := strings.Count(wr.stderr, "skipping run"); n != 1 || !strings.Contains(wr.stderr, "(run "+runID) {
		t.Errorf("the worker said %d times that it skips run %s, want once:\n%s", n, runID, wr.stderr)
	}
	if !strings.Contains(wr.stderr, "agent xsim added") || !strings.Contains(wr.stderr, "not this checkout's") {
		t.Errorf("the worker does not say why it skips the run:\n%s", wr.stderr)
	}
	if n := xRuns(); n != 0 {
		t.Errorf("%d attempts of project A's run ran in project X's checkout", n)
	}
	if ran := s.ranIn(runID); ran[1] != 0 || ran[0] != 8 {
		t.Errorf("attempts per checkout (A, X) = %v, want 8 and 0", ran)
	}
	s.checkouts = s.checkouts[:1]
	s.checkExact(8)
}
