package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// otherWorkflow is the run that works beside a crash-matrix cell's killed
// run and must never be touched by its crash or its recovery: a schema
// failure and its retry, a longer second step, a gate named like the
// loop-gate scenario's (an answer meant for one run must not reach the
// other), then a last step once it is approved. Its agents sleep so that
// it is still running while the killed run dies and resumes.
const otherWorkflow = `version: 1
name: other
defaults:
  agent: sim
  retry: {max_attempts: 3, backoff: fixed, initial: 200ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: other-scenario.yaml
    args: [--ledger, other-ledger.jsonl]
steps:
  - {id: first, prompt: first, handoff: {schema: s.json}}
  - {id: second, prompt: second, handoff: {schema: s.json}}
  - {id: gate, approval: {prompt: "ship the other?"}}
  - {id: last, prompt: last, handoff: {schema: s.json}}
`

const otherScenario = `steps:
  first:
    - {sleep: 300ms, answer: '{"ok": "no"}'}
    - {sleep: 300ms, answer: '{"ok": true}'}
  second: [{sleep: 600ms, answer: '{"ok": true}'}]
  last: [{answer: '{"ok": true}'}]
`

// otherAttempts is how many attempts each step of the other run makes
// when nothing touches it: exactly those of a run never killed.
var otherAttempts = map[string]int{"first": 2, "second": 1, "last": 1}

// pairCell is one cell of the matrix's variant with a second run beside
// the killed one: a scenario of the matrix and a failpoint.
type pairCell struct {
	scenario string
	fp       string
}

// pairCells is the representative subset of the crash-point matrix run
// with a second run beside the killed one. Each cell costs the whole other
// run besides the killed one's processes, so not every pair of the matrix
// is repeated: the points chosen are those after which the killed run's
// recovery touches rows that a recovery not confined to its own run would
// also find in the other run's: an attempt committed and not started
// (settled interrupted), an agent running (interrupted, its session
// continued), a handoff on disk and not committed (adopted), a backoff deadline committed (waited for,
// not redrawn), and a gate waiting and answered (the other run waits at a
// gate of the same name). The remaining points (checks, decisions, loops,
// the fallback) commit through the same run-scoped transactions and are
// covered per run by TestCrashPointMatrix.
var pairCells = []pairCell{
	{"schema-then-success", attempt.FailAfterAttemptCommit},
	{"schema-then-success", attempt.FailAfterAgentStart},
	{"schema-then-success", attempt.FailAfterHandoffWritten},
	{"schema-then-success", attempt.FailDuringBackoff},
	{"loop-gate", attempt.FailAfterGateDecided},
}

// pairTally counts what the pair cells did, for the log and the report.
type pairTally struct {
	cells, failed, kills, besideRunning, besideWaiting int
}

func (c pairTally) String() string {
	return fmt.Sprintf("%d cells (%d failed), %d kills, %d processes beside the other run while it ran, %d while it waited (its state compared after each)",
		c.cells, c.failed, c.kills, c.besideRunning, c.besideWaiting)
}

// TestCrashPointMatrixTwoWorkflows runs the pair cells with two workflows
// of one project on one SQLite state: the cell's workflow (a.yaml) is
// killed at its failpoint and resumed while other.yaml's run, started
// first, runs and then waits at its gate. The killed run recovers exactly
// (every guarantee of the matrix), and the other run's rows, attempts and
// files are never changed by the crash or the recovery (issue 33).
func TestCrashPointMatrixTwoWorkflows(t *testing.T) {
	pairMatrix(t, func(t *testing.T, sc crashScenario) (killed, other *project) {
		p := newProject(t, sc.workflowYAML(), pairFiles(sc, map[string]string{"a.yaml": sc.workflowYAML(), "other.yaml": otherWorkflow}))
		killed = &project{t: t, dir: p.dir, workflow: "a.yaml"}
		other = &project{t: t, dir: p.dir, workflow: "other.yaml", ledgerFile: filepath.Join(p.dir, "other-ledger.jsonl")}
		return killed, other
	})
}

// TestCrashPointMatrixTwoProjects runs the pair cells with two projects,
// each with its own checkout and .cadence/project, on one PostgreSQL
// database: the first project's run is killed and resumed while the
// second's runs and then waits; the second's rows and files are never
// changed by the first's crash or recovery (issue 33).
func TestCrashPointMatrixTwoProjects(t *testing.T) {
	pairMatrix(t, func(t *testing.T, sc crashScenario) (killed, other *project) {
		state := pg.NewDatabase(t)
		killed = newProject(t, sc.workflowYAML(), pairFiles(sc, nil))
		other = newProject(t, otherWorkflow, pairFiles(sc, nil))
		killed.state, other.state = state, state
		other.ledgerFile = filepath.Join(other.dir, "other-ledger.jsonl")
		return killed, other
	})
}

// pairFiles are the files of a pair cell's project: the matrix's and the
// other workflow's, plus extra.
func pairFiles(sc crashScenario, extra map[string]string) map[string]string {
	files := map[string]string{"s.json": boolSchema, "scenario.yaml": sc.scenario, "command.sh": ledgerCommand,
		"other-scenario.yaml": otherScenario}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// pairMatrix runs every pair cell on the projects setup makes and logs the
// tally.
func pairMatrix(t *testing.T, setup func(t *testing.T, sc crashScenario) (killed, other *project)) {
	start := time.Now()
	var tally pairTally
	for _, c := range pairCells {
		sc := scenarioNamed(t, c.scenario)
		t.Run(c.scenario+"/"+c.fp, func(t *testing.T) {
			tally.cells++
			killed, other := setup(t, sc)
			runPairCell(t, sc, c.fp, killed, other, &tally)
			if t.Failed() {
				tally.failed++
			}
		})
	}
	t.Logf("crash-point matrix beside another run: %s, %s", tally, time.Since(start).Round(time.Millisecond))
}

func scenarioNamed(t *testing.T, name string) crashScenario {
	t.Helper()
	for _, sc := range crashScenarios {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no crash scenario %q", name)
	return crashScenario{}
}

// runPairCell starts the other run, kills the killed project's run at fp
// and resumes it until it ends, as runCrashCell does, then finishes the
// other run and checks that it was never touched.
func runPairCell(t *testing.T, sc crashScenario, fp string, killed, other *project, tally *pairTally) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := other.command(ctx, nil, "run")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The other run's first agent runs: its run and its project exist
	// before the killed run's first process starts.
	waitFor(t, "the other run's first agent", func() bool { return len(other.ledger()) > 0 })
	var before string // the other run's state once its process stopped at the gate
	stopped := func(err error) {
		other.finish(cmd, err, out.String(), errb.String()).exits(t, exitAwaiting)
		before = otherState(t, other)
	}
	// compare runs after each process of the killed run.
	compare := func() {
		if before == "" {
			select {
			case err := <-done:
				stopped(err)
			default:
				tally.besideRunning++
				return
			}
		}
		tally.besideWaiting++
		if now := otherState(t, other); now != before {
			t.Errorf("the other run changed while the killed run crashed or recovered:\nbefore: %s\nafter:  %s", before, now)
		}
	}

	d := newDurability(t, killed, sc.files)
	next := "run"
	for i := 0; ; i++ {
		if i == maxProcesses {
			t.Fatalf("still killed after %d processes: the failpoint never stops firing", maxProcesses)
		}
		r := killed.cadence([]string{fmt.Sprintf("CADENCE_FAILPOINT=%s:%d", fp, failpointK(i))}, next)
		compare()
		if r.signal != syscall.SIGKILL && sc.gate != "" && r.code == exitAwaiting {
			d.checkDecisions(killed.inspect())
			killed.cadence(nil, "approve", sc.gate, "--by", "matrix").exits(t, 0)
			compare()
			next = "resume"
			continue
		}
		if r.signal != syscall.SIGKILL {
			r.exits(t, sc.wantExit)
			break
		}
		d.afterKill()
		if fp == attempt.FailAfterAttemptCommit {
			d.checkNoLedgerForUnstarted()
		}
		if d.kills == 1 && killed.dir == other.dir {
			carelessResume(t, killed)
			compare()
		}
		var ended string
		if next, ended = d.next(); ended != "" {
			break
		}
	}
	d.finish(sc.want)
	checkAgent(t, killed, sc.wantAgent)
	tally.kills += d.kills
	if d.kills == 0 {
		t.Errorf("failpoint %s not reached in scenario %s: the cell proves nothing", fp, sc.name)
	}
	if before == "" {
		select {
		case err := <-done:
			stopped(err)
		case <-ctx.Done():
			t.Fatal("the other run never stopped at its gate")
		}
	}
	finishOther(t, other)
	if killed.dir != other.dir {
		idK, errK := projectid.Read(killed.dir)
		idO, errO := projectid.Read(other.dir)
		if errK != nil || errO != nil || idK == "" || idK == idO {
			t.Errorf("project ids %q (%v) and %q (%v), want two different ones", idK, errK, idO, errO)
		}
	}
}

// carelessResume runs `cadence resume` in the project of two workflows
// without naming one, just after a crash left one run without a holder:
// it must refuse and name both workflows (exit 2), not pick the crashed
// run, nor the other, by itself.
func carelessResume(t *testing.T, killed *project) {
	t.Helper()
	bare := &project{t: t, dir: killed.dir, state: killed.state}
	r := bare.cadence(nil, "resume")
	r.exits(t, exitUsage)
	for _, want := range []string{"2 runs are unfinished", "--workflow a.yaml", "--workflow other.yaml"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("resume naming no workflow after a crash: stderr %q, want %q in it", r.stderr, want)
		}
	}
}

// finishOther answers the other run's gate, resumes it to its end and
// checks its whole history: every guarantee, and exactly the attempts of
// a run nothing touched (none interrupted or adopted, none run again).
func finishOther(t *testing.T, other *project) {
	t.Helper()
	d := newDurability(t, other, nil)
	if rep, ok := d.report(); !ok || rep.Run.Status == "succeeded" || rep.Run.Status == "failed" {
		t.Fatalf("the other run before its answer: %+v (found %v), want one waiting", rep.Run, ok)
	}
	other.cadence(nil, "approve", "gate", "--by", "other").exits(t, 0)
	other.cadence(nil, "resume").exits(t, 0)
	d.finish("succeeded")
	if d.interrupted != 0 || d.adopted != 0 {
		t.Errorf("the other run has %d interrupted and %d adopted attempts, want none: it was never killed", d.interrupted, d.adopted)
	}
	got := map[string]int{}
	rep, _ := d.report()
	for _, s := range units(rep) {
		if s.Approval == nil {
			got[s.ID] = len(s.Attempts)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(otherAttempts) {
		t.Errorf("the other run's attempts per step: %v, want %v", got, otherAttempts)
	}
	if n := len(other.ledger()); n != 4 {
		t.Errorf("the other run's agents executed %d times, want 4", n)
	}
}

// otherState is everything of the other run that a crash or recovery of
// the killed run could change: its history as `inspect --json` shows it
// (read in-process, as the durability checks read), its agents' ledger,
// and every file under its project's .cadence that belongs to its run (its
// handoffs, attempts, outputs) or to its project (its identity), with a
// digest of each.
func otherState(t *testing.T, other *project) string {
	t.Helper()
	d := newDurability(t, other, nil)
	rep, ok := d.report()
	if !ok {
		t.Fatal("the other run is not in the state")
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(js)
	ledger, err := os.ReadFile(other.ledgerFile)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "\nledger %x\n", sha256.Sum256(ledger))
	var files []string
	root := filepath.Join(other.dir, ".cadence")
	err = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.Contains(rel, rep.Run.ID) && rel != "project" {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, fmt.Sprintf("%s %x", rel, sha256.Sum256(content)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no file of the other run %s under %s", rep.Run.ID, root)
	}
	sort.Strings(files)
	fmt.Fprintf(&b, "files:\n%s\n", strings.Join(files, "\n"))
	return b.String()
}

// pairKillPoints is how many random kills TestKillScheduleTwoProjects
// delivers to each of its two projects by default (CADENCE_KILL_POINTS
// overrides it): about half a second each on PostgreSQL, the two projects
// killed side by side.
const pairKillPoints = 12

// pairKillWindow is killWindow for two schedules at once: two processes
// start side by side on the same cores, so the moments are drawn over a
// longer window for kills to land in the steps too, not mostly before
// the state is open.
const pairKillWindow = 2500 * time.Millisecond

// TestKillScheduleTwoProjects runs the random kill schedule's workflow in
// two projects at once on one PostgreSQL database, each killed at its own
// random moments (the same seed, drawn apart) and resumed to its end: each
// recovers exactly, though the other's processes die and recover beside
// it, and each lists only its own run. CADENCE_KILL_SEED replays it.
func TestKillScheduleTwoProjects(t *testing.T) {
	ks := killScheduleFromEnv(t, stateEngine{killPoints: pairKillPoints})
	t.Logf("kill schedule on two projects: seed %d (CADENCE_KILL_SEED=%d to replay), %d kill points each", ks.seed, ks.seed, ks.points)
	state := pg.NewDatabase(t)
	start := time.Now()
	// Each project's directory goes with its subtest: what the parent
	// compares is kept here.
	type outcome struct {
		run                         string
		kills, adopted, interrupted int
		failed                      bool
	}
	outs := make([]*outcome, 2)
	t.Run("projects", func(t *testing.T) {
		for i := range outs {
			rnd := rand.New(rand.NewSource(ks.seed + int64(i)))
			t.Run("p"+strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				p := newProject(t, killWorkflow, map[string]string{"s.json": boolSchema, "scenario.yaml": killScenario,
					"items.json": killItems, "command.sh": ledgerCommand})
				p.state = state
				d := killProject(t, p, "out/write.json", rnd, ks.points, pairKillWindow)
				runs := runsOf(t, d.p)
				if len(runs) != 1 {
					t.Fatalf("the project lists runs %v, want its own one", runs)
				}
				o := &outcome{kills: d.kills, adopted: d.adopted, interrupted: d.interrupted, failed: d.failed}
				for id := range runs {
					o.run = id
				}
				outs[i] = o
			})
		}
	})
	if outs[0] == nil || outs[1] == nil {
		t.Fatal("a project's schedule did not finish")
	}
	kills := 0
	for i, o := range outs {
		kills += o.kills
		t.Logf("project %d: run %s, %d kills, %d attempts adopted, %d interrupted, ended failed: %v", i, o.run, o.kills, o.adopted, o.interrupted, o.failed)
	}
	if outs[0].run == outs[1].run {
		t.Errorf("both projects list the run %s", outs[0].run)
	}
	t.Logf("kill schedule on two projects: seed %d, %d kills, %s", ks.seed, kills, time.Since(start).Round(time.Millisecond))
}

// TestKillScheduleTwoWorkflows runs the kill schedule's workflow as two
// workflow files of one project on its SQLite state, a.yaml and b.yaml (b's
// files renamed so that the two runs share no file of the checkout: its
// ledger, scenario, file handoff, command and the file its check reads),
// both at once, each killed at its own random moments and resumed with
// --workflow to its end. Each recovers exactly, though the other
// workflow's processes die and recover beside it on the same state, and
// each workflow has exactly its own run.
func TestKillScheduleTwoWorkflows(t *testing.T) {
	ks := killScheduleFromEnv(t, stateEngine{killPoints: pairKillPoints})
	t.Logf("kill schedule on two workflows of one project: seed %d (CADENCE_KILL_SEED=%d to replay), %d kill points each", ks.seed, ks.seed, ks.points)
	rename := strings.NewReplacer("ledger.jsonl", "b-ledger.jsonl", "scenario.yaml", "b-scenario.yaml",
		"out/write.json", "out/b-write.json", "command.sh", "b-command.sh", "state.txt", "b-state.txt")
	p := newProject(t, killWorkflow, map[string]string{"s.json": boolSchema, "items.json": killItems,
		"a.yaml": killWorkflow, "scenario.yaml": killScenario, "command.sh": ledgerCommand,
		"b.yaml": rename.Replace(killWorkflow), "b-scenario.yaml": rename.Replace(killScenario), "b-command.sh": rename.Replace(ledgerCommand)})
	views := []struct{ workflow, ledger, write string }{
		{"a.yaml", "ledger.jsonl", "out/write.json"},
		{"b.yaml", "b-ledger.jsonl", "out/b-write.json"},
	}
	start := time.Now()
	kills := make([]int, len(views))
	t.Run("workflows", func(t *testing.T) {
		for i, v := range views {
			rnd := rand.New(rand.NewSource(ks.seed + int64(i)))
			t.Run(strings.TrimSuffix(v.workflow, ".yaml"), func(t *testing.T) {
				t.Parallel()
				view := &project{t: t, dir: p.dir, workflow: v.workflow, ledgerFile: filepath.Join(p.dir, v.ledger)}
				d := killProject(t, view, v.write, rnd, ks.points, pairKillWindow)
				if runs := runsOf(t, view); len(runs) != 1 || runs[d.runID] == "" {
					t.Errorf("runs --workflow %s lists %v, want its one run %s", v.workflow, runs, d.runID)
				}
				kills[i] = d.kills
				t.Logf("%s: run %s, %d kills, %d attempts adopted, %d interrupted, ended failed: %v",
					v.workflow, d.runID, d.kills, d.adopted, d.interrupted, d.failed)
			})
		}
	})
	if all := runsOf(t, p); len(all) != len(views) {
		t.Errorf("the project lists runs %v, want one per workflow", all)
	}
	t.Logf("kill schedule on two workflows of one project: seed %d, %v kills, %s", ks.seed, kills, time.Since(start).Round(time.Millisecond))
}

// TestOtherStateSeesAChange stops the other workflow's run at its gate and
// changes it in each way a recovery not confined to its own run could: a
// row (its gate answered), a file of its run, its agents' ledger. The
// state the pair cells compare must differ after each, so that an
// unchanged state there is known to have been able to change.
func TestOtherStateSeesAChange(t *testing.T) {
	p := newProject(t, otherWorkflow, map[string]string{"s.json": boolSchema, "other-scenario.yaml": otherScenario})
	p.ledgerFile = filepath.Join(p.dir, "other-ledger.jsonl")
	p.cadence(nil, "run").exits(t, exitAwaiting)
	runID := p.inspect().Run.ID
	appendTo := func(path string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("\n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func()
	}{
		{"a file of its run", func() {
			var file string
			_ = filepath.WalkDir(filepath.Join(p.dir, ".cadence"), func(path string, de fs.DirEntry, err error) error {
				if err == nil && !de.IsDir() && file == "" && strings.Contains(path, runID) {
					file = path
				}
				return err
			})
			if file == "" {
				t.Fatalf("no file of run %s under .cadence", runID)
			}
			appendTo(file)
		}},
		{"its ledger", func() { appendTo(p.ledgerFile) }},
		{"its gate answered", func() { p.cadence(nil, "approve", "gate", "--by", "someone").exits(t, 0) }},
	} {
		before := otherState(t, p)
		tc.change()
		if otherState(t, p) == before {
			t.Errorf("%s changed, yet the compared state did not", tc.name)
		}
	}
}
