package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

// A run working on a long attempt is cancelled by `cadence cancel` from a
// second process: the cancel commits at once, the first process sees it
// within seconds, stops its agent and records the attempt interrupted and
// uncounted, and exits 1; the run is cancelled, its run_cancelled
// notification sent once, and resume refuses it (issue 33).
func TestCancelFromAnotherProcess(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		p := newLongProject(t, e)
		_, wait := p.startCadence(t, "run")
		agentPID, runID := p.runningAgent(t)

		start := time.Now()
		c := p.cadence(nil, "cancel")
		c.exits(t, 0)
		if want := "run " + runID + " cancelled by cadence cancel; the process working on it stops within a few seconds\n"; c.stdout != want {
			t.Errorf("cancel printed %q, want %q", c.stdout, want)
		}
		res := wait()
		stopped := time.Since(start)
		t.Logf("the run's process stopped %v after the cancel began", stopped.Round(time.Millisecond))
		res.exits(t, 1)
		if !strings.Contains(res.stderr, "run "+runID+" was cancelled (cadence cancel): it is never resumed") {
			t.Errorf("the run's process did not say the run was cancelled:\n%s", res.stderr)
		}
		if stopped > 20*time.Second {
			t.Errorf("the run's process took %v to stop after the cancel", stopped)
		}
		p.checkCancelled(t, runID, agentPID)
	})
}

// A run whose process was killed (kill -9) while its agent ran is
// cancelled by a process that holds nothing of it: the agent died with
// cadence (G6; cancel would kill one left behind), and its attempt, still
// recorded running, is settled interrupted and uncounted in the cancel's
// own transaction.
func TestCancelAKilledRun(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e stateEngine) {
		p := newLongProject(t, e)
		pid, wait := p.startCadence(t, "run")
		agentPID, runID := p.runningAgent(t)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		wait().killed(t)
		waitFor(t, "the agent to die with cadence (G6)", func() bool { return !alive(agentPID) })
		if a := step(p.inspect(), "slow").Attempts; len(a) != 1 || a[0].Status != "running" {
			t.Fatalf("attempts %+v, want the killed run's one attempt still recorded running", a)
		}
		c := p.cadence(nil, "cancel")
		c.exits(t, 0)
		if want := "run " + runID + " cancelled by cadence cancel\n"; c.stdout != want {
			t.Errorf("cancel printed %q, want %q", c.stdout, want)
		}
		p.checkCancelled(t, runID, agentPID)
	})
}

// newLongProject is a project whose one step's agent works for two
// minutes, and whose command target saves the run's end events.
func newLongProject(t *testing.T, e stateEngine) *project {
	t.Helper()
	return newEngineProject(t, e, `version: 1
name: long
agents: {sim: {preset: sim, scenario: s.yaml}}
defaults: {agent: sim}
steps:
  - {id: slow, prompt: slow}
notify:
  - command: [sh, save.sh]
    on: [run_cancelled, run_failed, run_succeeded]
`, map[string]string{
		"s.yaml":  "steps:\n  slow: [{sleep: 120s, answer: '{\"x\": 1}'}]\n",
		"save.sh": "cat >> events.jsonl; echo >> events.jsonl\n",
	})
}

// runningAgent waits until the run's attempt runs, and returns its
// agent's pid and the run's id.
func (p *project) runningAgent(t *testing.T) (agentPID int, runID string) {
	t.Helper()
	waitFor(t, "the attempt's agent to run", func() bool {
		r := p.cadence(nil, "inspect", "--json")
		var rep history.Report
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
			return false // no run yet
		}
		if len(rep.Steps) != 1 || len(rep.Steps[0].Attempts) != 1 {
			return false
		}
		a := rep.Steps[0].Attempts[0]
		if a.Status != "running" || a.PID == nil || !alive(*a.PID) {
			return false
		}
		agentPID = *a.PID
		return true
	})
	return agentPID, p.inspect().Run.ID
}

// checkCancelled checks what a cancel leaves: the run cancelled, its
// agent gone, its attempt interrupted and uncounted, its run_cancelled
// sent once, and resume refusing it.
func (p *project) checkCancelled(t *testing.T, runID string, agentPID int) {
	t.Helper()
	waitFor(t, "the agent to be gone", func() bool { return !alive(agentPID) })

	rep := p.inspect()
	if rep.Run.Status != "cancelled" || rep.Run.FinishedAt == nil {
		t.Errorf("run status %q finished %v, want cancelled with a finish time", rep.Run.Status, rep.Run.FinishedAt)
	}
	s := rep.Steps[0]
	if len(s.Attempts) != 1 || s.Attempts[0].Status != "interrupted" || s.AttemptsUsed != 0 {
		t.Errorf("step slow: %d attempts, the first %q, %d used; want one, interrupted, uncounted",
			len(s.Attempts), s.Attempts[0].Status, s.AttemptsUsed)
	}
	if got := eventRuns(t, p); strings.Join(got, ",") != "run_cancelled "+runID {
		t.Errorf("the target heard %v, want run_cancelled of %s once", got, runID)
	}
	r := p.cadence(nil, "resume")
	r.exits(t, 2)
	if !strings.Contains(r.stderr, "run "+runID+" was cancelled (cadence cancel): a cancelled run is never resumed") {
		t.Errorf("resume of the cancelled run said:\n%s", r.stderr)
	}
	p.checkStateLocation()
}

// On a shared PostgreSQL state, a cancel also stops the items a worker in
// another checkout is running for the run: the worker sees the cancel,
// stops its agent and records the attempt interrupted and uncounted, and
// goes on working for other runs.
func TestCancelStopsAWorkersItems(t *testing.T) {
	keys := map[string]bool{}
	var items []string
	for i := 1; i <= 4; i++ {
		k := fmt.Sprintf("k%d", i)
		keys[k] = true
		items = append(items, `{"id": "`+k+`"}`)
	}
	s := newSharedRun(t, pg.NewDatabase(t), 2, items, "steps:\n  fix: [{sleep: 120s, answer: '{\"ok\": true}'}]\n", 2)
	worker := s.worker(1)
	run := s.start(0, "run")
	var key string
	var agent int
	waitFor(t, "the worker to run an item", func() bool {
		key, agent = s.heldBy(worker.cmd.Process.Pid, keys)
		return key != ""
	})
	s.checkouts[0].cadence(nil, "cancel").exits(t, 0)
	run.wait(t).exits(t, 1)
	waitFor(t, "the worker's agent to stop", func() bool { return !alive(agent) })
	waitFor(t, "the worker's attempt to be recorded", func() bool {
		it := s.items()[key]
		return len(it.Attempts) == 1 && it.Attempts[0].Status != "running"
	})
	_ = worker.cmd.Process.Signal(syscall.SIGTERM)
	worker.wait(t).exits(t, 3)

	rep := s.report()
	if rep.Run.Status != "cancelled" {
		t.Errorf("run status %q, want cancelled", rep.Run.Status)
	}
	for k, it := range s.items() {
		for _, a := range it.Attempts {
			if a.Status != "interrupted" {
				t.Errorf("item %s attempt %d is %s, want interrupted", k, a.N, a.Status)
			}
		}
		if it.AttemptsUsed != 0 {
			t.Errorf("item %s: %d attempts counted, want none", k, it.AttemptsUsed)
		}
	}
}
