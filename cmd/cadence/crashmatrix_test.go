package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent/sim"
	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// crashScenario is one workflow of the crash-point matrix: its steps, the
// sim scenario, which steps hand off through a file, and how the run must
// end once every crash has been resumed.
type crashScenario struct {
	name     string
	retry    string
	agent    string // extra keys of the sim agent entry, e.g. its circuit
	agents   string // further agent entries, e.g. a fallback
	steps    string
	scenario string
	files    map[string]string // step → file handoff path
	want     string            // final run status
	wantExit int
	// gate names an approval gate the cell approves whenever a process
	// stops at it (exit 5), before the next resume.
	gate string
	// wantAgent, when set, is the agent entry that must have ended every
	// step, with its last attempt: a resume continued on it.
	wantAgent string
	// git makes the project a git repository with one commit of its
	// files; absent lists files that must not exist once the run ended.
	git    bool
	absent []string
}

// crashScenarios are the workflows every failpoint is tried on. Backoffs
// are short and without jitter so that the whole matrix stays fast, yet long
// enough (200 ms) that a process on a busy machine, whose fsyncs may each
// take tens of milliseconds, still reaches the wait after committing the
// failure.
var crashScenarios = []crashScenario{
	{
		name:  "schema-then-success",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		name:  "transient-backoff",
		retry: `{max_attempts: 5, backoff: exponential, initial: 200ms, multiplier: 2, max: 300ms, jitter: none}`,
		agent: "    circuit: {failures: 3, open_for: 100ms, half_open_calls: 1}\n",
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {overloaded: true}
    - {overloaded: true}
    - {answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		name:  "circuit-half-open",
		retry: `{max_attempts: 6, backoff: fixed, initial: 200ms, jitter: none}`,
		agent: "    circuit: {failures: 2, open_for: 300ms, half_open_calls: 1}\n",
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {overloaded: true}
    - {overloaded: true}
    - {answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		name:  "file-handoff",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {from: file, path: out/one.json, schema: s.json}}\n",
		scenario: `steps:
  one:
    - {write_file: '{"ok": "no"}'}
    - {write_file: '{"ok": true}'}
`,
		files: map[string]string{"one": "out/one.json"},
		want:  "succeeded",
	},
	{
		name:  "final-attempt-fails",
		retry: `{max_attempts: 2, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {answer: '{"ok": "no"}'}
`,
		want:     "failed",
		wantExit: 1,
	},
	{
		name:  "help-round",
		retry: `{max_attempts: 5, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}, on_help: {prompt: 'Advise: {{ .Help.Context }}'}}\n",
		scenario: `steps:
  one:
    - help: {context: {question: which?}}
    - answer: Use the first.
    - answer: '{"ok": true}'
`,
		want: "succeeded",
	},
	{
		// The first answer leaves the project broken and its check fails;
		// the follow-up fixes it. Kills before, during and after a check
		// leave an attempt whose handoff was accepted: resume runs its
		// checks again, never its agent.
		name:  "checks",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: `  - id: one
    prompt: go
    handoff: {schema: s.json}
    checks:
      - {name: fixed, run: 'echo "$CADENCE_ATTEMPT" >> checks.ledger; grep -q fixed state.txt'}
`,
		scenario: `steps:
  one:
    - {edit: {state.txt: broken}, answer: '{"ok": true}'}
    - {edit: {state.txt: fixed}, answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		// Three items, two at once: one is retried after a schema
		// failure, one after a transient error; kills land with items in
		// flight, and each item is settled and counted on its own.
		// Every kill interrupts each item in flight, and an interrupted
		// attempt counts: max_attempts leaves room for one per process.
		name:  "map-items",
		retry: `{max_attempts: 10, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: `  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: 2}
`,
		scenario: `steps:
  fix/a:
    - {sleep: 30ms, answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
  fix/b:
    - {sleep: 50ms, answer: '{"ok": true}'}
  fix/c:
    - {overloaded: true}
    - {answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		// A graph: one and two side by side, skip decided (false) once one
		// has ended, build a command step once both have; kills land with
		// two agents running, just after the decision, and while the
		// command runs.
		name:  "graph",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: `  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, needs: [], prompt: two, handoff: {schema: s.json}}
  - {id: skip, needs: [one], when: 'steps.one.status == "failed"', prompt: never}
  - {id: build, needs: [one, two], run: [sh, command.sh]}
`,
		scenario: `steps:
  one:
    - {sleep: 50ms, answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
  two:
    - {sleep: 80ms, answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		// A loop of two iterations (a schema failure then a success in
		// each, and a review that approves in the second), then an
		// approval gate a person answers, then a command: kills between
		// iterations and inside one, just after until was decided, while
		// the gate waits and just after its answer was committed.
		name:  "loop-gate",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: `  - id: rounds
    loop:
      max_iterations: 3
      until: steps.review.output.ok
      steps:
        - {id: work, prompt: work, handoff: {schema: s.json}}
        - {id: review, prompt: review, handoff: {schema: s.json}}
  - {id: gate, approval: {prompt: "ship round {{ .Steps.rounds.Output.iterations }}?"}}
  - {id: build, run: [sh, command.sh]}
`,
		scenario: `steps:
  work:
    - {sleep: 30ms, answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
  rounds/1/review: [{answer: '{"ok": false}'}]
  rounds/2/review: [{answer: '{"ok": true}'}]
`,
		gate: "gate",
		want: "succeeded",
	},
	{
		// The sim entry answers every attempt with a usage limit that
		// resets in an hour; the step moves at once to its fallback sim2
		// (fallback.yaml: it answers), which finishes it. Kills land just after the
		// move is committed (after-fallback), and around both attempts; a
		// resume continues on the entry the step row names.
		name:   "fallback",
		retry:  `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		agent:  "    fallback: [sim2]\n",
		agents: fallbackEntry("fallback.yaml"),
		steps:  "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {usage_limit: {reset_after: 1h}}
`,
		want:      "succeeded",
		wantAgent: "sim2",
	},
	{
		// A usage limit shorter than fallback_after is waited for on the
		// agent itself, uncounted; kills land during that wait
		// (during-backoff), and the resume waits for the same reset.
		name:   "limit-wait",
		retry:  `{max_attempts: 3, backoff: fixed, initial: 200ms, jitter: none}`,
		agent:  "    fallback: [sim2]\n",
		agents: fallbackEntry("scenario.yaml"),
		steps:  "  - {id: one, prompt: go, handoff: {schema: s.json}, fallback_after: 1h}\n",
		scenario: `steps:
  one:
    - {usage_limit: {reset_after: 1s}}
    - {answer: '{"ok": true}'}
`,
		want:      "succeeded",
		wantAgent: "sim",
	},
	{
		// A failed login (class auth) on the sim entry with a fallback:
		// the next attempt moves to sim2 instead of stopping the run;
		// kills land just after the move and around both attempts.
		name:   "auth-fallback",
		retry:  `{max_attempts: 5, backoff: fixed, initial: 200ms, jitter: none}`,
		agent:  "    fallback: [sim2]\n",
		agents: fallbackEntry("fallback.yaml"),
		steps:  "  - {id: one, prompt: go, handoff: {schema: s.json}}\n",
		scenario: `steps:
  one:
    - {auth_error: true}
`,
		want:      "succeeded",
		wantAgent: "sim2",
	},
	{
		// An agent that says nothing after its start: past start_timeout
		// it is stuck ("no output since start") and retried in a fresh
		// session; kills land while it hangs and around the retry.
		name:  "start-deadline",
		retry: `{max_attempts: 3, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}, start_timeout: 1s}\n",
		scenario: `steps:
  one:
    - {silent_start: true}
    - {answer: '{"ok": true}'}
`,
		want: "succeeded",
	},
	{
		// restore_on_retry in a git repository: the first answer adds
		// junk.txt and fails its schema; the tree is put back before the
		// second, which answers. Kills land between the restore and the
		// next attempt's row (after-restore), and everywhere else; junk.txt
		// is gone at the end whichever attempt a kill interrupted.
		name:  "restore",
		retry: `{max_attempts: 4, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: "  - {id: one, prompt: go, handoff: {schema: s.json}, restore_on_retry: true}\n",
		scenario: `steps:
  one:
    - {edit: {junk.txt: junk}, answer: '{"ok": "no"}'}
    - {answer: '{"ok": true}'}
`,
		git:    true,
		absent: []string{"junk.txt"},
		want:   "succeeded",
	},
	{
		name:  "three-steps",
		retry: `{max_attempts: 3, backoff: fixed, initial: 200ms, jitter: none}`,
		steps: `  - {id: one, prompt: one, handoff: {schema: s.json}}
  - {id: two, prompt: two, handoff: {schema: s.json}}
  - {id: three, prompt: three, handoff: {schema: s.json}}
`,
		scenario: `steps:
  one: [{answer: '{"ok": true}'}]
  two: [{answer: '{"ok": true}'}]
  three: [{answer: '{"ok": true}'}]
`,
		want: "succeeded",
	},
}

// ledgerCommand is the script of the matrix's and the kill schedule's
// command steps: it writes a line to the sim's ledger as an agent's
// execution does (its step, attempt, pid and process group, no session),
// so that the history checker holds a command step's attempts to the
// same rules, then works a little while.
const ledgerCommand = `printf '{"step":"%s","attempt":%s,"session_id":"","resume":false,"pid":%s,"pgid":%s,"time":"%s","prompt":""}\n' \
  "$CADENCE_STEP" "$CADENCE_ATTEMPT" $$ "$(cut -d' ' -f5 /proc/$$/stat)" "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" >> ledger.jsonl
sleep 0.05
echo built
`

// constructs names, for the failpoints that belong to one construct of a
// workflow, what the scenario's workflow must say for it to have that
// construct: a loop's and a gate's failpoints, the fallback's, a check's
// and a decision's. A scenario without it can never reach the failpoint;
// the matrix does not run that pair (every other pair runs, reached or
// not).
var constructs = map[string]string{
	attempt.FailAfterIterationStart: "loop:",
	attempt.FailAfterUntil:          "loop:",
	attempt.FailAfterGateWaiting:    "approval:",
	attempt.FailAfterGateDecided:    "approval:",
	attempt.FailAfterFallback:       "fallback:",
	attempt.FailBeforeCheck:         "checks:",
	attempt.FailDuringCheck:         "checks:",
	attempt.FailAfterCheckCommit:    "checks:",
	attempt.FailAfterDecision:       "when:",
	attempt.FailAfterRestore:        "restore_on_retry:",
}

// has reports whether the scenario has the construct failpoint fp belongs
// to (any failpoint of an attempt belongs to every scenario).
func (sc crashScenario) has(fp string) bool {
	key, ok := constructs[fp]
	return !ok || strings.Contains(sc.workflowYAML(), key)
}

// fallbackEntry is the agent entry sim2, the fallback of the scenarios
// that move a step, playing scenario with the same ledger.
func fallbackEntry(scenario string) string {
	return "  sim2:\n    preset: sim\n    scenario: " + scenario + "\n    args: [--ledger, ledger.jsonl]\n"
}

// workflowYAML is the scenario's workflow on the sim agent, with a ledger.
func (sc crashScenario) workflowYAML() string {
	return `version: 1
defaults:
  agent: sim
  retry: ` + sc.retry + `
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ledger.jsonl]
` + sc.agent + sc.agents + `steps:
` + sc.steps
}

// maxProcesses bounds the cadence processes of one matrix cell, so that a
// failpoint that fired forever would fail the cell instead of hanging.
const maxProcesses = 10

// failpointK is the occurrence at which process i (0-based) of a cell dies:
// the first two processes die at the first occurrence, so a crash during the
// resume of a crash is covered too; later ones get further each time, so
// the cell always terminates.
func failpointK(i int) int { return max(1, i) }

// TestCrashPointMatrix kills cadence with SIGKILL at every failpoint in
// every scenario, resumes until the run ends, and checks the durability
// guarantees against the sim's execution ledger and inspect after every
// process; the whole matrix once per state engine, each project on a
// database of its own.
func TestCrashPointMatrix(t *testing.T) {
	forEachEngine(t, crashMatrix)
}

// crashMatrix runs every cell of the matrix with its state on engine e.
func crashMatrix(t *testing.T, e stateEngine) {
	start := time.Now()
	var cells, reached, kills, adopted, interrupted, without int
	for _, sc := range crashScenarios {
		for _, fp := range attempt.Failpoints {
			if !sc.has(fp) {
				without++
				continue
			}
			t.Run(sc.name+"/"+fp, func(t *testing.T) {
				cells++
				d := runCrashCell(t, e, sc, fp)
				for _, f := range sc.absent {
					if _, err := os.Stat(filepath.Join(d.p.dir, f)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s is still there after the run (stat: %v)", f, err)
					}
				}
				kills += d.kills
				adopted += d.adopted
				interrupted += d.interrupted
				if d.kills > 0 {
					reached++
				}
			})
		}
	}
	t.Logf("crash-point matrix on %s: %d cells, %d reached their failpoint, %d not reached, %d kills, %d attempts adopted, %d interrupted, %s "+
		"(%d pairs of a failpoint and a scenario without the construct it belongs to not run)",
		e.name, cells, reached, cells-reached, kills, adopted, interrupted, time.Since(start).Round(time.Millisecond), without)
}

// runCrashCell runs one cell on engine e and returns its finished checker.
func runCrashCell(t *testing.T, e stateEngine, sc crashScenario, fp string) *durability {
	p := newEngineProject(t, e, sc.workflowYAML(), map[string]string{"s.json": boolSchema, "scenario.yaml": sc.scenario,
		"items.json": `[{"id": "a"}, {"id": "b"}, {"id": "c"}]`, "command.sh": ledgerCommand,
		"fallback.yaml": "steps:\n  one: [{answer: '{\"ok\": true}'}]\n"})
	if sc.git {
		// The sim's ledger is the test's record of executions: ignored, so
		// that a restore leaves it alone, as it leaves a user's build output.
		if err := os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte("ledger.jsonl\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCommitAll(t, p.dir)
	}
	d := newDurability(t, p, sc.files)
	cmd := "run"
	for i := 0; ; i++ {
		if i == maxProcesses {
			t.Fatalf("still killed after %d processes: the failpoint never stops firing", maxProcesses)
		}
		r := p.cadence([]string{fmt.Sprintf("CADENCE_FAILPOINT=%s:%d", fp, failpointK(i))}, cmd)
		if r.signal != syscall.SIGKILL && sc.gate != "" && r.code == exitAwaiting {
			// Stopped at the gate, resumable: a person answers it.
			d.checkDecisions(d.p.inspect())
			p.cadence(nil, "approve", sc.gate, "--by", "matrix").exits(t, 0)
			cmd = "resume"
			continue
		}
		if r.signal != syscall.SIGKILL {
			r.exits(t, sc.wantExit)
			d.finish(sc.want)
			checkAgent(t, p, sc.wantAgent)
			if d.kills == 0 {
				t.Logf("failpoint %s not reached in scenario %s", fp, sc.name)
			}
			return d
		}
		d.afterKill()
		if fp == attempt.FailAfterAttemptCommit {
			d.checkNoLedgerForUnstarted()
		}
		var ended string
		if cmd, ended = d.next(); ended != "" {
			d.finish(sc.want)
			return d
		}
	}
}

// checkAgent checks that every step of the project's run ended on the
// agent entry want, its last attempt included ("" checks nothing).
func checkAgent(t *testing.T, p *project, want string) {
	t.Helper()
	if want == "" {
		return
	}
	for _, s := range units(p.inspect()) {
		if s.Agent != want {
			t.Errorf("step %s ended on agent %s, want %s", s.ID, s.Agent, want)
		}
		if n := len(s.Attempts); n == 0 || s.Attempts[n-1].Agent != want {
			t.Errorf("step %s: last attempt not on agent %s: %+v", s.ID, want, s.Attempts)
		}
	}
}

// attemptKey names one attempt of one unit: a step, or an item of a map
// step as STEP/KEY.
type attemptKey struct {
	step string
	n    int
}

// units lists what has attempts in a run: each step that runs once, and
// each item of a map step under the name STEP/KEY, with its own history,
// so that every guarantee is checked per item as it is per step.
func units(rep history.Report) []history.StepReport {
	var out []history.StepReport
	for _, s := range allSteps(rep.Steps) {
		if s.ItemCounts == nil {
			out = append(out, s)
			continue
		}
		for _, it := range s.Items {
			out = append(out, history.StepReport{ID: s.ID + "/" + it.Key, Status: it.Status, Agent: s.Agent,
				AttemptsUsed: it.AttemptsUsed, MaxAttempts: it.MaxAttempts, Attempts: it.Attempts})
		}
	}
	return out
}

// allSteps flattens steps and, for a loop, the inner steps of each of its
// iterations (named by their paths, LOOP/N/STEP), at any depth: every step
// instance with a history of its own.
func allSteps(steps []history.StepReport) []history.StepReport {
	var out []history.StepReport
	for _, s := range steps {
		out = append(out, s)
		for _, it := range s.Iterations {
			out = append(out, allSteps(it.Steps)...)
		}
	}
	return out
}

// ledgerUnit names the unit a ledger record's execution belongs to, as
// units does.
func ledgerUnit(r sim.LedgerRecord) string {
	if r.Item == "" {
		return r.Step
	}
	return r.Step + "/" + r.Item
}

// schedule is an attempt's stored backoff as first observed.
type schedule struct {
	delayMS int64
	next    time.Time
}

// durability follows one project through every cadence process that works
// on it and checks the guarantees of SPEC §7 between them.
type durability struct {
	t     *testing.T
	p     *project
	files map[string]string // step → file handoff path

	kills       int
	adopted     int                     // attempts settled as adopted in the final history
	interrupted int                     // attempts settled as interrupted in the final history
	failed      bool                    // the run ended failed
	schedules   map[attemptKey]schedule // G4, G10: first observed backoff
	landed      map[attemptKey]bool     // G5: did an interrupted attempt's handoff land
	gone        map[int]bool            // G6: agent pids already seen dead
	decisions   map[string]string       // SPEC 16.7: each step's decision as first seen, with its status
	// byProcess reads the state through `cadence inspect --json` rather
	// than in this process: on the power-cut filesystem, which this
	// process serves, SQLite's shared memory must not be mapped here.
	byProcess bool
	// runID is the run followed once known, when the project view names
	// its workflow: the project's latest run may be another workflow's.
	runID string
}

func newDurability(t *testing.T, p *project, files map[string]string) *durability {
	return &durability{t: t, p: p, files: files,
		schedules: map[attemptKey]schedule{}, landed: map[attemptKey]bool{}, gone: map[int]bool{}, decisions: map[string]string{}}
}

// report reads the latest run in-process, through the same code as
// `cadence inspect --json` and from the project's state database; ok is
// false while no run exists yet.
func (d *durability) report() (history.Report, bool) {
	d.t.Helper()
	if d.byProcess {
		r := d.p.cadence(nil, "inspect", "--json")
		if r.code != 0 && strings.Contains(r.stderr, "no runs") {
			return history.Report{}, false
		}
		r.exits(d.t, 0)
		var rep history.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			d.t.Fatalf("inspect --json: %v\n%s", err, r.stdout)
		}
		return rep, true
	}
	if d.p.workflow != "" && d.runID == "" {
		if d.runID = d.p.runOfWorkflow(); d.runID == "" {
			return history.Report{}, false
		}
	}
	rep, err := history.Inspect(context.Background(), d.p.dir, d.p.state, d.runID, false)
	if errors.Is(err, history.ErrNoRuns) {
		return history.Report{}, false
	}
	if err != nil {
		d.t.Fatalf("inspect: %v", err)
	}
	return *rep, true
}

// runOfWorkflow returns the id of the run of p's workflow file, read
// in-process from the project's state; "" while it has none.
func (p *project) runOfWorkflow() string {
	p.t.Helper()
	runs, err := history.Runs(context.Background(), p.dir, p.state)
	if errors.Is(err, history.ErrNoRuns) {
		return ""
	}
	if err != nil {
		p.t.Fatalf("runs: %v", err)
	}
	id := ""
	for _, r := range runs {
		if filepath.Clean(r.WorkflowPath) == filepath.Clean(filepath.FromSlash(p.workflow)) {
			if id != "" {
				p.t.Fatalf("two runs of %s, %s and %s: the matrix starts one", p.workflow, id, r.ID)
			}
			id = r.ID
		}
	}
	return id
}

// next is how the next process continues: resume once a run exists, run
// again if the killed process died before creating it. ended is the run's
// final status when the killed process had already finished the run.
func (d *durability) next() (cmd, ended string) {
	rep, ok := d.report()
	switch {
	case !ok:
		return "run", ""
	case rep.Run.Status == "succeeded" || rep.Run.Status == "failed":
		return "", string(rep.Run.Status)
	}
	return "resume", ""
}

// afterKill checks what a killed process left behind: no agent outlives it
// (G6); stored backoffs are unchanged (G4, G10); and, once every agent is
// gone, whether each attempt left running had its handoff land, which fixes
// how resume must settle it (G5).
func (d *durability) afterKill() {
	d.t.Helper()
	d.kills++
	d.noSurvivors()
	rep, ok := d.report()
	if !ok {
		return
	}
	d.checkSchedules(rep)
	d.checkSettled(rep)
	d.checkDecisions(rep)
	for _, s := range units(rep) {
		for _, a := range s.Attempts {
			k := attemptKey{s.ID, a.N}
			if _, seen := d.landed[k]; a.Status == "running" && !seen {
				// A handoff whose checks started is also in the state
				// database, committed with the first check's start: it
				// landed even when its file did not survive a power cut.
				d.landed[k] = len(a.Checks) > 0 || d.handoffLanded(rep.Run.ID, s.ID, a.N)
			}
		}
	}
}

// noSurvivors waits until no agent process of the project is alive: every
// pid in the ledger and every pid recorded on an attempt (G6).
func (d *durability) noSurvivors() {
	d.t.Helper()
	pids := map[int]bool{}
	for _, r := range d.p.ledger() {
		pids[r.PID] = true
	}
	if rep, ok := d.report(); ok {
		for _, s := range units(rep) {
			for _, a := range s.Attempts {
				if a.PID != nil {
					pids[*a.PID] = true
				}
			}
		}
	}
	for pid := range pids {
		if d.gone[pid] {
			continue // seen dead before: a live process now would be a reuse of the pid
		}
		waitFor(d.t, fmt.Sprintf("agent %d to die with cadence (G6)", pid), func() bool { return !alive(pid) })
		d.gone[pid] = true
	}
}

// handoffLanded reports whether the accepted handoff of a step's running
// attempt is on disk: the envelope cadence writes before committing a
// success (only a success writes one, and a success ends the step, so an
// envelope next to a running attempt is that attempt's), or a valid file
// handoff written by the agent.
func (d *durability) handoffLanded(runID, stepID string, n int) bool {
	// Written without an fsync, the envelope may survive a power cut
	// with its name and no data (the ext4 model): then it did not land.
	if b, err := os.ReadFile(filepath.Join(d.p.dir, ".cadence", "handoffs", runID, stepID+".json")); err == nil && json.Valid(b) {
		return true
	}
	// A handoff that passed its schema is stored before the step's checks
	// run; resume checks it again rather than run the agent.
	if _, err := os.Stat(filepath.Join(d.p.dir, ".cadence", "attempts", runID, stepID, itoa(n)+".handoff.json")); err == nil {
		return true
	}
	path, ok := d.files[stepID]
	if !ok {
		return false
	}
	b, err := os.ReadFile(filepath.Join(d.p.dir, filepath.FromSlash(path)))
	if err != nil {
		return false
	}
	var v map[string]any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	_, valid := v["ok"].(bool) // what s.json requires
	return valid
}

// checkDecisions fails when a step's decision (its when evaluated, or a
// skip) changed once committed, or a skipped step no longer is: a
// decision is taken once and never again (SPEC 16.7). The decision holds
// the time it was taken, so one taken again differs.
func (d *durability) checkDecisions(rep history.Report) {
	d.t.Helper()
	for _, s := range allSteps(rep.Steps) {
		d.checkOnce("the until of", s.Iterations)
		if a := s.Approval; a != nil && a.Decision != history.ApprovalWaiting {
			// An answer is recorded once: who, when and what never change.
			now := fmt.Sprintf("%s by %s at %v: %s", a.Decision, a.By, a.At, a.Comment)
			if was, seen := d.decisions["gate "+s.ID]; !seen {
				d.decisions["gate "+s.ID] = now
			} else if was != now {
				d.t.Errorf("SPEC 16.7: gate %s answered again: %s, then %s", s.ID, was, now)
			}
		}
		if len(s.Decision) == 0 {
			continue
		}
		now := string(s.Decision)
		if s.Status == "skipped" {
			now += " skipped"
		}
		was, seen := d.decisions[s.ID]
		switch {
		case !seen:
			d.decisions[s.ID] = now
		case strings.HasSuffix(was, " skipped") && s.Status != "skipped":
			d.t.Errorf("SPEC 16.7: step %s was skipped, now %s", s.ID, s.Status)
		case strings.TrimSuffix(was, " skipped") != string(s.Decision):
			d.t.Errorf("SPEC 16.7: step %s decided again: %s, then %s", s.ID, strings.TrimSuffix(was, " skipped"), s.Decision)
		}
	}
}

// checkOnce fails when an iteration's until decision changed once
// committed: it is taken once and never again (SPEC 16.7).
func (d *durability) checkOnce(what string, iters []history.IterationReport) {
	d.t.Helper()
	for _, it := range iters {
		if len(it.Until) == 0 {
			continue
		}
		key := "until " + it.ID
		if was, seen := d.decisions[key]; !seen {
			d.decisions[key] = string(it.Until)
		} else if was != string(it.Until) {
			d.t.Errorf("SPEC 16.7: %s iteration %s decided again: %s, then %s", what, it.ID, was, it.Until)
		}
	}
}

// checkSchedules fails when an attempt's stored delay or deadline differs
// from what was first observed (G4: resume never redraws; G10: a deadline is
// never moved).
func (d *durability) checkSchedules(rep history.Report) {
	d.t.Helper()
	for _, e := range scheduleViolations(d.schedules, rep) {
		d.t.Error(e)
	}
}

// scheduleViolations records the backoff of every attempt seen for the
// first time in first, and reports every one that differs from its record.
func scheduleViolations(first map[attemptKey]schedule, rep history.Report) []string {
	var errs []string
	for _, s := range units(rep) {
		for _, a := range s.Attempts {
			if a.DelayMS == nil || a.NextRetryAt == nil {
				continue
			}
			k := attemptKey{s.ID, a.N}
			now := schedule{*a.DelayMS, a.NextRetryAt.UTC()}
			if was, ok := first[k]; !ok {
				first[k] = now
			} else if was.delayMS != now.delayMS || !was.next.Equal(now.next) {
				errs = append(errs, fmt.Sprintf("G4/G10: step %s attempt %d: backoff %d ms until %s changed to %d ms until %s",
					s.ID, a.N, was.delayMS, was.next, now.delayMS, now.next))
			}
		}
	}
	return errs
}

// checkSettled checks every settled attempt that was left running by a
// killed process: adopted exactly when its handoff had landed (G5).
func (d *durability) checkSettled(rep history.Report) {
	d.t.Helper()
	for _, e := range settleViolations(d.landed, rep) {
		d.t.Error(e)
	}
}

// settleViolations reports every attempt in landed (left running by a
// killed process, with whether its handoff had landed) that was settled
// the wrong way.
func settleViolations(landed map[attemptKey]bool, rep history.Report) []string {
	var errs []string
	for _, s := range units(rep) {
		for _, a := range s.Attempts {
			was, ok := landed[attemptKey{s.ID, a.N}]
			if !ok || a.Status == "running" {
				continue
			}
			switch {
			case was && a.Status == "failed" && a.Class == "check":
				// Its handoff had landed, and its checks, run again, failed.
			case was && a.Status != "adopted":
				errs = append(errs, fmt.Sprintf("G5: step %s attempt %d: its handoff had landed, yet it was settled as %s", s.ID, a.N, a.Status))
			case !was && a.Status != "interrupted":
				errs = append(errs, fmt.Sprintf("G5: step %s attempt %d: no handoff had landed, yet it was settled as %s", s.ID, a.N, a.Status))
			}
		}
	}
	return errs
}

// checkNoLedgerForUnstarted checks that an attempt killed right after its
// row was committed never started an agent: no pid (but a command's, whose
// row names its supervisor), no ledger line (G1).
// Items of a map step, and steps side by side, run at once, so when the
// failpoint fired in one, the others' running attempts may well have
// started: then at least one running attempt, the one whose commit fired,
// must be unstarted.
func (d *durability) checkNoLedgerForUnstarted() {
	d.t.Helper()
	rep, ok := d.report()
	if !ok {
		d.t.Fatal("killed after an attempt commit, yet no run is recorded")
	}
	execs := ledgerIndex(d.p.ledger())
	running, unstarted := 0, 0
	var started []string
	for _, s := range units(rep) {
		for _, a := range s.Attempts {
			if a.Status != "running" {
				continue
			}
			running++
			// A command's row names the supervisor it is to run under
			// before it starts (an agent's pid is committed once it is
			// about to run): only the ledger tells whether it ran.
			if (a.PID == nil || a.Agent == "") && len(execs[attemptKey{s.ID, a.N}]) == 0 {
				unstarted++
			} else {
				started = append(started, fmt.Sprintf("step %s attempt %d (pid %v, %d executions)", s.ID, a.N, a.PID, len(execs[attemptKey{s.ID, a.N}])))
			}
		}
	}
	if running > 0 && unstarted == 0 {
		d.t.Errorf("G1: killed right after an attempt's commit, yet every running attempt had started: %s", strings.Join(started, "; "))
	}
}

// finish checks the run once it has ended: its status, and every guarantee
// against the ledger and `cadence inspect --json`.
func (d *durability) finish(wantStatus string) {
	d.t.Helper()
	d.noSurvivors()
	d.p.checkStateLocation()
	rep := d.p.inspect()
	if string(rep.Run.Status) != wantStatus {
		d.t.Errorf("run status %s, want %s", rep.Run.Status, wantStatus)
	}
	d.checkSchedules(rep)
	d.checkSettled(rep)
	d.checkDecisions(rep)
	for _, s := range units(rep) {
		for _, a := range s.Attempts {
			switch a.Status {
			case "adopted":
				d.adopted++
			case "interrupted":
				d.interrupted++
			}
		}
	}
	if errs := checkHistory(rep, d.p.ledger()); len(errs) > 0 {
		d.t.Errorf("violations after %d kills:\n%s\nledger:\n%s\ninspect:\n%s",
			d.kills, strings.Join(errs, "\n"), ledgerDump(d.p.ledger()), reportDump(rep))
	}
}

// ledgerIndex groups ledger records by step and attempt number.
func ledgerIndex(recs []sim.LedgerRecord) map[attemptKey][]sim.LedgerRecord {
	m := map[attemptKey][]sim.LedgerRecord{}
	for _, r := range recs {
		k := attemptKey{ledgerUnit(r), r.Attempt}
		m[k] = append(m[k], r)
	}
	return m
}

// checkHistory checks a finished run's recorded attempts against the sim's
// ledger of real executions and returns every violation found:
//   - every execution belongs to a recorded attempt of the same number,
//     session and pid, and no attempt executed twice;
//   - an attempt with an outcome (failed, succeeded, adopted) executed exactly
//     once; only an interrupted attempt may have no execution, when cadence
//     died before the agent started or before it wrote its ledger line;
//   - nothing ran after the attempt recorded as the step's success (G2);
//   - counted attempts and their executions stay within max_attempts, and a
//     failed step used exactly max_attempts (G3);
//   - an attempt that executed has its pid recorded: its agent ran only
//     once its pid was committed (G1);
//   - the attempt after one interrupted while its agent ran continues
//     that agent's session (G5);
//   - a retry never started before the stored deadline of the failure it
//     retries (G4);
//   - no attempt is left running.
func checkHistory(rep history.Report, ledger []sim.LedgerRecord) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	execs := ledgerIndex(ledger)
	steps := map[string]history.StepReport{}
	for _, s := range units(rep) {
		steps[s.ID] = s
	}
	for k, recs := range execs {
		s, ok := steps[k.step]
		if !ok || k.n < 1 || k.n > len(s.Attempts) || s.Attempts[k.n-1].N != k.n {
			bad("ledger: step %s attempt %d executed but has no attempt row", k.step, k.n)
			continue
		}
		a := s.Attempts[k.n-1]
		if len(recs) > 1 {
			bad("step %s attempt %d executed %d times", k.step, k.n, len(recs))
		}
		for _, r := range recs {
			if r.SessionID != a.SessionID {
				bad("step %s attempt %d: ledger session %s, attempt row session %s", k.step, k.n, r.SessionID, a.SessionID)
			}
			switch {
			case a.PID != nil && *a.PID != r.PGID:
				// cadence records the leader of the attempt's process group
				// (the supervisor); the agent runs in that group.
				bad("step %s attempt %d: ledger process group %d, attempt row pid %d", k.step, k.n, r.PGID, *a.PID)
			case a.PID == nil:
				// An agent runs only once its pid is committed, durably:
				// an execution with no pid is one whose start a crash or
				// a power cut could lose (G1, G5).
				bad("step %s attempt %d: executed (pid %d) but %s with no pid recorded", k.step, k.n, r.PID, a.Status)
			}
		}
	}
	for _, s := range units(rep) {
		counted, success := 0, 0
		for i, a := range s.Attempts {
			if a.N != i+1 {
				bad("step %s: attempt %d numbered %d", s.ID, i+1, a.N)
			}
			if counts(a) {
				counted++
			}
			n := len(execs[attemptKey{s.ID, a.N}])
			switch a.Status {
			case "running":
				bad("step %s attempt %d still running after the run ended", s.ID, a.N)
			case "interrupted":
			default:
				if n != 1 {
					bad("step %s attempt %d is %s with %d executions, want exactly 1", s.ID, a.N, a.Status, n)
				}
			}
			// A help round that succeeded is the advisor's answer, not the
			// step's handoff.
			if (a.Status == "succeeded" || a.Status == "adopted") && a.Kind != "help" {
				success = a.N
				if i != len(s.Attempts)-1 {
					bad("G2: step %s has attempts after its success %d", s.ID, a.N)
				}
				for _, r := range ledger {
					t, err := time.Parse(time.RFC3339Nano, r.Time)
					if ledgerUnit(r) == s.ID && (r.Attempt > a.N || err != nil || (a.FinishedAt != nil && t.After(*a.FinishedAt))) {
						bad("G2: step %s executed (attempt %d at %s) after attempt %d succeeded at %v", s.ID, r.Attempt, r.Time, a.N, a.FinishedAt)
					}
				}
			}
			if i > 0 {
				prev := s.Attempts[i-1]
				ran := prev.PID != nil || len(execs[attemptKey{s.ID, prev.N}]) > 0
				if prev.Status == "interrupted" && ran && prev.SessionID != "" && a.Agent == prev.Agent { // a command step has no session
					for _, r := range execs[attemptKey{s.ID, a.N}] {
						if !r.Resume || r.SessionID != prev.SessionID {
							bad("G5: step %s attempt %d after interrupted attempt %d: resume=%v session %s, want a resume of %s",
								s.ID, a.N, prev.N, r.Resume, r.SessionID, prev.SessionID)
						}
					}
				}
				// A move to a fallback entry ends the wait on the old one
				// (SPEC §17): the deadline was the old entry's.
				moved := a.Agent != prev.Agent && a.Kind == "fallback"
				if prev.NextRetryAt != nil && a.StartedAt.Before(*prev.NextRetryAt) && !moved {
					bad("G4: step %s attempt %d started at %s, before attempt %d's deadline %s", s.ID, a.N, a.StartedAt, prev.N, prev.NextRetryAt)
				}
			}
		}
		if s.AttemptsUsed != counted {
			bad("step %s: attempts_used %d, but %d attempts recorded", s.ID, s.AttemptsUsed, counted)
		}
		if counted > s.MaxAttempts {
			bad("G3: step %s used %d attempts, max_attempts %d", s.ID, counted, s.MaxAttempts)
		}
		ran := 0
		for _, a := range s.Attempts {
			if counts(a) {
				ran += len(execs[attemptKey{s.ID, a.N}])
			}
		}
		if ran > s.MaxAttempts {
			bad("G3: step %s executed %d times, max_attempts %d", s.ID, ran, s.MaxAttempts)
		}
		switch {
		case s.Iterations != nil || s.Approval != nil:
			// A loop ends with its iterations, a gate with its answer:
			// neither has an attempt of its own to succeed.
		case s.Status == "succeeded":
			if success == 0 {
				bad("step %s succeeded with no succeeded or adopted attempt", s.ID)
			}
		case s.Status == "failed":
			if s.AttemptsUsed != s.MaxAttempts {
				bad("G3: step %s failed after %d attempts, want exactly max_attempts %d", s.ID, s.AttemptsUsed, s.MaxAttempts)
			}
		}
	}
	return errs
}

// counts reports whether an attempt uses up one of max_attempts: help
// rounds do not, nor do attempts cadence records as uncounted (a budget stop,
// a usage limit with a known reset time).
func counts(a history.AttemptReport) bool { return a.Kind != "help" && !a.Uncounted }

func ledgerDump(recs []sim.LedgerRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s attempt %d pid %d resume=%v session %s at %s\n", r.Step, r.Attempt, r.PID, r.Resume, r.SessionID, r.Time)
	}
	return b.String()
}

func reportDump(rep history.Report) string {
	b, _ := json.MarshalIndent(rep, "", "  ")
	return string(b)
}

// TestCheckHistoryFindsViolations feeds the history checker hand-made
// histories that break one rule each, so that a matrix or kill schedule that
// passes is known to have been able to fail.
func TestCheckHistoryFindsViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pid := func(n int) *int { return &n }
	attempt := func(n int, status checkpoint.AttemptStatus, p *int, startMS, endMS int) history.AttemptReport {
		end := at(endMS)
		return history.AttemptReport{N: n, Status: status, Kind: "initial", PID: p, SessionID: "s",
			StartedAt: at(startMS), FinishedAt: &end}
	}
	exec := func(n, p, ms int) sim.LedgerRecord {
		return sim.LedgerRecord{Step: "one", Attempt: n, SessionID: "s", PID: p, PGID: p, Time: at(ms).Format(time.RFC3339Nano)}
	}
	helpRound := func(a history.AttemptReport) history.AttemptReport { a.Kind = "help"; return a }
	uncounted := func(a history.AttemptReport) history.AttemptReport { a.Uncounted = true; return a }
	resumed := func(r sim.LedgerRecord) sim.LedgerRecord { r.Resume = true; return r }
	one := func(status checkpoint.StepStatus, used, maxAttempts int, attempts ...history.AttemptReport) history.Report {
		return history.Report{Steps: []history.StepReport{{ID: "one", Status: status,
			AttemptsUsed: used, MaxAttempts: maxAttempts, Attempts: attempts}}}
	}
	deadline := at(500)
	backoff := attempt(1, "failed", pid(10), 0, 100)
	backoff.NextRetryAt = &deadline
	for _, tc := range []struct {
		name   string
		rep    history.Report
		ledger []sim.LedgerRecord
		want   string // a substring of the expected violation; "" for none
	}{
		{"clean: interrupted before start, then success",
			one("succeeded", 2, 3, attempt(1, "interrupted", nil, 0, 50), attempt(2, "succeeded", pid(11), 60, 200)),
			[]sim.LedgerRecord{exec(2, 11, 100)}, ""},
		{"clean: interrupted mid-run, then its session continued",
			one("succeeded", 2, 3, attempt(1, "interrupted", pid(10), 0, 100), attempt(2, "succeeded", pid(11), 200, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), resumed(exec(2, 11, 210))}, ""},
		{"clean: adopted after a kill",
			one("succeeded", 1, 3, attempt(1, "adopted", pid(10), 0, 900)),
			[]sim.LedgerRecord{exec(1, 10, 10)}, ""},
		{"executed after its success",
			one("succeeded", 1, 3, attempt(1, "succeeded", pid(10), 0, 100)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 12, 300)}, "no attempt row"},
		{"execution later than the success",
			one("succeeded", 1, 3, attempt(1, "succeeded", pid(10), 0, 100)),
			[]sim.LedgerRecord{exec(1, 10, 150)}, "G2"},
		{"an attempt executed twice",
			one("succeeded", 1, 3, attempt(1, "succeeded", pid(10), 0, 100)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(1, 10, 20)}, "executed 2 times"},
		{"adopted with no execution",
			one("succeeded", 1, 3, attempt(1, "adopted", pid(10), 0, 100)),
			nil, "0 executions"},
		{"failed before max_attempts",
			one("failed", 2, 3, attempt(1, "failed", pid(10), 0, 100), attempt(2, "failed", pid(11), 200, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 210)}, "G3"},
		{"ledger pid differs",
			one("succeeded", 1, 3, attempt(1, "succeeded", pid(10), 0, 100)),
			[]sim.LedgerRecord{exec(1, 99, 10)}, "pid"},
		{"retry before the stored deadline",
			one("succeeded", 2, 3, backoff, attempt(2, "succeeded", pid(11), 400, 600)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 410)}, "G4"},
		{"interrupted session not continued",
			one("succeeded", 2, 3, attempt(1, "interrupted", pid(10), 0, 100), attempt(2, "succeeded", pid(11), 200, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 210)}, "want a resume"},
		{"clean: a help round's success is not the step's",
			one("succeeded", 2, 3, attempt(1, "failed", pid(10), 0, 100), helpRound(attempt(2, "succeeded", pid(11), 150, 200)),
				attempt(3, "succeeded", pid(12), 250, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 160), exec(3, 12, 260)}, ""},
		{"clean: an uncounted attempt is not one of max_attempts",
			one("failed", 2, 2, uncounted(attempt(1, "failed", pid(10), 0, 100)), attempt(2, "failed", pid(11), 200, 300),
				attempt(3, "failed", pid(12), 400, 500)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 210), exec(3, 12, 410)}, ""},
		{"more executions than max_attempts",
			one("failed", 2, 2, attempt(1, "failed", pid(10), 0, 100), attempt(2, "failed", pid(11), 200, 300),
				attempt(3, "failed", pid(12), 400, 500)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 210), exec(3, 12, 410)}, "G3"},
		{"executed with no pid recorded",
			one("succeeded", 2, 3, attempt(1, "interrupted", nil, 0, 100), attempt(2, "succeeded", pid(11), 200, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), resumed(exec(2, 11, 210))}, "no pid recorded"},
		{"interrupted with its pid lost, session not continued",
			one("succeeded", 2, 3, attempt(1, "interrupted", nil, 0, 100), attempt(2, "succeeded", pid(11), 200, 300)),
			[]sim.LedgerRecord{exec(1, 10, 10), exec(2, 11, 210)}, "want a resume"},
		{"left running",
			one("running", 1, 3, attempt(1, "running", pid(10), 0, 100)),
			[]sim.LedgerRecord{exec(1, 10, 10)}, "still running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkHistory(tc.rep, tc.ledger)
			joined := strings.Join(errs, "\n")
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("violations in a clean history:\n%s", joined)
			case tc.want != "" && !strings.Contains(joined, tc.want):
				t.Errorf("violations %q do not mention %q", joined, tc.want)
			}
		})
	}
}

// TestSettleAndScheduleCheckersFindViolations checks the G5 and G4/G10
// checkers on hand-made histories.
func TestSettleAndScheduleCheckersFindViolations(t *testing.T) {
	k := attemptKey{"one", 1}
	withStatus := func(status checkpoint.AttemptStatus, delayMS int64, next time.Time) history.Report {
		return history.Report{Steps: []history.StepReport{{ID: "one", Attempts: []history.AttemptReport{
			{N: 1, Status: status, DelayMS: &delayMS, NextRetryAt: &next}}}}}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		landed bool
		status checkpoint.AttemptStatus
		want   int
	}{
		{"landed and adopted", true, "adopted", 0},
		{"landed but re-run", true, "interrupted", 1},
		{"not landed, interrupted", false, "interrupted", 0},
		{"not landed yet adopted", false, "adopted", 1},
		{"still running: not yet settled", true, "running", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settleViolations(map[attemptKey]bool{k: tc.landed}, withStatus(tc.status, 50, t0))
			if len(got) != tc.want {
				t.Errorf("violations %q, want %d", got, tc.want)
			}
		})
	}
	first := map[attemptKey]schedule{}
	for i, tc := range []struct {
		delayMS int64
		next    time.Time
		want    int
	}{
		{50, t0, 0},                        // first observation
		{50, t0, 0},                        // unchanged
		{80, t0, 1},                        // delay redrawn
		{50, t0.Add(-time.Millisecond), 1}, // deadline moved earlier
		{50, t0.Add(time.Millisecond), 1},  // deadline moved later
	} {
		if got := scheduleViolations(first, withStatus("failed", tc.delayMS, tc.next)); len(got) != tc.want {
			t.Errorf("observation %d: violations %q, want %d", i, got, tc.want)
		}
	}
}
