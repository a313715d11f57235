package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killWorkflow is the workflow of the random kill schedules, a graph: a
// schema failure with its follow-up; fetch and write side by side after
// it (transient errors with jittered backoff, a file handoff); docs
// skipped by its when, and review run by its own when despite needing the
// skipped docs (a provider retry-after); a command step; a check that
// fails once and then passes; a map step of five items three at once (one
// item retried after a schema failure, one after a transient error); a
// loop of two iterations (a schema failure and its follow-up in each, its
// until met in the second); an approval gate, which the schedule approves
// whenever a process stops at it (exit 5); and agents, the command and
// checks that sleep 20–100 ms so that kills land while they run.
const killWorkflow = `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 8, backoff: exponential, initial: 20ms, multiplier: 2, max: 100ms, jitter: full}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ledger.jsonl]
    circuit: {failures: 3, open_for: 150ms, half_open_calls: 1}
steps:
  - {id: plan, prompt: plan, handoff: {schema: s.json}}
  - {id: fetch, needs: [plan], prompt: fetch, handoff: {schema: s.json}}
  - {id: write, needs: [plan], prompt: write, handoff: {from: file, path: out/write.json, schema: s.json}}
  - {id: docs, needs: [plan], when: 'steps.plan.status == "failed"', prompt: docs}
  - {id: review, needs: [fetch, write, docs], when: 'steps.docs.status == "skipped"', prompt: review, handoff: {schema: s.json}}
  - {id: build, needs: [review], run: [sh, command.sh]}
  - id: verify
    prompt: verify
    handoff: {schema: s.json}
    checks:
      - {name: fixed, run: 'sleep 0.05; grep -q fixed state.txt'}
  - id: each
    prompt: 'each {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 3}
  - id: rounds
    loop:
      max_iterations: 3
      until: steps.judge.output.ok
      steps:
        - {id: draft, prompt: draft, handoff: {schema: s.json}}
        - {id: judge, prompt: judge, handoff: {schema: s.json}}
  - {id: gate, approval: {prompt: "ship after {{ .Steps.rounds.Output.iterations }} rounds?"}}
`

const killScenario = `steps:
  plan:
    - {sleep: 40ms, answer: 'Here: {"ok": "no"}'}
    - {sleep: 30ms, answer: '{"ok": true}'}
  fetch:
    - {sleep: 20ms, overloaded: true}
    - {sleep: 50ms, overloaded: true}
    - {sleep: 60ms, answer: '{"ok": true}'}
  write:
    - {sleep: 80ms, write_file: '{"ok": "later"}'}
    - {sleep: 100ms, write_file: '{"ok": true}'}
  review:
    - {sleep: 30ms, rate_limit: {retry_after: 10ms}}
    - {sleep: 50ms, answer: '{"ok": true}'}
  verify:
    - {sleep: 30ms, edit: {state.txt: broken}, answer: '{"ok": true}'}
    - {sleep: 30ms, edit: {state.txt: fixed}, answer: '{"ok": true}'}
  each:
    - {sleep: 60ms, answer: '{"ok": true}'}
  each/b:
    - {sleep: 40ms, answer: '{"ok": 1}'}
    - {sleep: 50ms, answer: '{"ok": true}'}
  each/d:
    - {sleep: 30ms, overloaded: true}
    - {sleep: 70ms, answer: '{"ok": true}'}
  draft:
    - {sleep: 30ms, answer: '{"ok": "no"}'}
    - {sleep: 40ms, answer: '{"ok": true}'}
  rounds/1/judge: [{sleep: 20ms, answer: '{"ok": false}'}]
  rounds/2/judge: [{sleep: 20ms, answer: '{"ok": true}'}]
`

// killItems are the items of the kill workflow's map step.
const killItems = `[{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d"}, {"id": "e"}]`

// killSchedule is the configuration of TestRandomKillSchedule, from the
// environment so that a run can be replayed or lengthened.
type killSchedule struct {
	seed   int64
	points int
}

// defaultKillPoints keeps the SQLite schedule near a minute on two shared
// cores (each engine has its own default: stateEngine.killPoints).
const defaultKillPoints = 100

// maxKillsPerRun stops killing a run that has absorbed this many kills and
// lets it finish, so that every run terminates.
const maxKillsPerRun = 25

// killScheduleFromEnv reads the schedule's seed and kill points from the
// environment; points defaults to the engine's.
func killScheduleFromEnv(t *testing.T, e stateEngine) killSchedule {
	t.Helper()
	ks := killSchedule{seed: time.Now().UnixNano(), points: e.killPoints}
	if s := os.Getenv("CADENCE_KILL_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("CADENCE_KILL_SEED=%q: %v", s, err)
		}
		ks.seed = v
	}
	if s := os.Getenv("CADENCE_KILL_POINTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("CADENCE_KILL_POINTS=%q: want a positive number", s)
		}
		ks.points = v
	}
	return ks
}

// TestRandomKillSchedule runs the kill workflow again and again, sending
// SIGKILL to cadence at random moments, resuming and killing again until each
// run ends, and checks the durability guarantees after every process. The
// seed is logged; CADENCE_KILL_SEED replays a schedule (the moments, not the
// machine's timing) and CADENCE_KILL_POINTS sets how many kills to deliver.
// It runs once per state engine, each run's project on a database of its
// own; each engine draws its schedule from the seed on its own.
func TestRandomKillSchedule(t *testing.T) {
	forEachEngine(t, randomKillSchedule)
}

// randomKillSchedule runs one kill schedule with the state on engine e.
func randomKillSchedule(t *testing.T, e stateEngine) {
	ks := killScheduleFromEnv(t, e)
	t.Logf("kill schedule on %s: seed %d (CADENCE_KILL_SEED=%d to replay), %d kill points", e.name, ks.seed, ks.seed, ks.points)
	rnd := rand.New(rand.NewSource(ks.seed))
	start := time.Now()
	var kills, runs, adopted, interrupted, failed int
	for kills < ks.points {
		runs++
		var d *durability
		ok := t.Run("run"+strconv.Itoa(runs), func(t *testing.T) {
			d = killRun(t, e, rnd, ks.points-kills)
		})
		if d != nil {
			t.Logf("run %d: %d kills, ended %s", runs, d.kills, map[bool]string{false: "succeeded", true: "failed"}[d.failed])
			kills += d.kills
			adopted += d.adopted
			interrupted += d.interrupted
			if d.failed {
				failed++
			}
		}
		if !ok {
			break
		}
	}
	t.Logf("kill schedule on %s: seed %d, %d kills over %d runs (%d ended failed by exhaustion), %d attempts adopted, %d interrupted, %s",
		e.name, ks.seed, kills, runs, failed, adopted, interrupted, time.Since(start).Round(time.Millisecond))
}

// killRun takes one project, its state on engine e, from run to finish
// under at most budget random kills (and at most maxKillsPerRun), checking
// the guarantees after each.
func killRun(t *testing.T, e stateEngine, rnd *rand.Rand, budget int) *durability {
	p := newEngineProject(t, e, killWorkflow, map[string]string{"s.json": boolSchema, "scenario.yaml": killScenario, "items.json": killItems,
		"command.sh": ledgerCommand})
	return killProject(t, p, "out/write.json", rnd, budget, killWindow)
}

// killWindow is how long after its start a process of the kill schedule is
// killed at the latest (and 20 ms at the earliest).
const killWindow = 900 * time.Millisecond

// killProject is killRun on the run of project view p (its workflow's, when
// the view names one), whose write step hands off through writePath, each
// process killed up to window after its start.
func killProject(t *testing.T, p *project, writePath string, rnd *rand.Rand, budget int, window time.Duration) *durability {
	d := newDurability(t, p, map[string]string{"write": writePath})
	limit := min(budget, maxKillsPerRun)
	cmd := "run"
	for {
		var after time.Duration
		if d.kills < limit {
			// From "before the database is open" to "well into a step", the
			// map step's items included.
			after = time.Duration(rnd.Int63n(int64(window))) + 20*time.Millisecond
		}
		r := startAndKill(t, p, cmd, after)
		if r.signal != syscall.SIGKILL && r.code == exitAwaiting {
			// Stopped at the gate, resumable: a person answers it.
			d.checkDecisions(d.p.inspect())
			p.cadence(nil, "approve", "gate", "--by", "schedule").exits(t, 0)
			cmd = "resume"
			continue
		}
		if r.signal != syscall.SIGKILL {
			if r.code != 0 && r.code != 1 {
				r.exits(t, 0)
			}
			d.finish(map[int]string{0: "succeeded", 1: "failed"}[r.code])
			d.failed = r.code == 1
			return d
		}
		d.afterKill()
		var ended string
		if cmd, ended = d.next(); ended != "" {
			d.finish(ended)
			d.failed = ended == "failed"
			return d
		}
	}
}

// startAndKill starts cadence and, when after is positive, sends it SIGKILL
// that long after the start unless it has ended by then.
func startAndKill(t *testing.T, p *project, name string, after time.Duration) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.command(ctx, nil, name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if after > 0 {
		timer := time.NewTimer(after)
		select {
		case err = <-done:
			timer.Stop()
		case <-timer.C:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
		}
	} else {
		err = <-done
	}
	return p.finish(cmd, err, out.String(), errb.String())
}

// Files that `cadence run` left when it was killed (by TestRandomKillSchedule)
// while the first connection was switching a brand-new state database to
// WAL mode: page 1 already written, and the rollback journal of that change
// still hot (journal header only: database size before it was 0 pages).
const (
	interruptedDBPage1 = "53514c69746520666f726d61742033001000020200402020000000010000000100000000000000000000000000000000" +
		"000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001002e99b10d0000000010000000000000"
	interruptedDBJournal = "d9d505f920a163d70000000083da68ff00000000000002000000100000000000"
)

// TestInspectAfterKillDuringDatabaseCreation: a cadence killed while it
// created the state database leaves a hot rollback journal and no run.
// inspect must read that as a project with no run yet, as run does (its
// read-write open rolls the journal back), not fail on the journal it may
// not roll back.
func TestInspectAfterKillDuringDatabaseCreation(t *testing.T) {
	page, err := hex.DecodeString(interruptedDBPage1)
	if err != nil {
		t.Fatal(err)
	}
	journal, err := hex.DecodeString(interruptedDBJournal)
	if err != nil {
		t.Fatal(err)
	}
	p := newProject(t, simWorkflow(`{max_attempts: 2}`, "  - {id: one, prompt: go, handoff: {schema: s.json}}\n"),
		map[string]string{
			"s.json":                    boolSchema,
			"scenario.yaml":             "steps:\n  one: [{answer: '{\"ok\": true}'}]\n",
			".cadence/state.db":         string(append(page, make([]byte, 4096-len(page))...)),
			".cadence/state.db-journal": string(append(journal, make([]byte, 512-len(journal))...)),
		})
	for _, args := range [][]string{{"inspect"}, {"inspect", "--json"}} {
		r := p.cadence(nil, args...)
		if !strings.Contains(r.stderr, "no runs") {
			t.Errorf("%v after a kill during database creation: exit %d, stderr %q; want the no-runs answer",
				args, r.code, strings.TrimSpace(r.stderr))
		}
	}
	// run recovers the database and works; inspect then reads it.
	p.cadence(nil, "run").exits(t, 0)
	if rep := p.inspect(); rep.Run.Status != "succeeded" {
		t.Errorf("after run: status %s, want succeeded", rep.Run.Status)
	}
}
