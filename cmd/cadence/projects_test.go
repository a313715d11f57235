package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/projectid"
)

// projectsWorkflow plans, waits at gate deploy, then ships; its command
// target saves every event in the checkout it runs in, and fails while a
// file named down is there.
const projectsWorkflow = `version: 1
name: %s
agents: {sim: {preset: sim, scenario: s.yaml}}
defaults: {agent: sim}
steps:
  - {id: plan, prompt: plan}
  - {id: deploy, needs: [plan], approval: {prompt: "ship it?"}}
  - {id: ship, needs: [deploy], prompt: ship}
notify:
  - command: [sh, save.sh]
    on: [approval_waiting, run_succeeded, run_failed]
`

var projectsFiles = map[string]string{
	"s.yaml": `steps:
  plan: [{answer: '{"x": 1}'}, {answer: '{"x": 1}'}, {answer: '{"x": 1}'}]
  ship: [{answer: '{"y": 2}'}, {answer: '{"y": 2}'}, {answer: '{"y": 2}'}]
`,
	"save.sh": "[ -e down ] && { echo target is down >&2; exit 3; }\ncat >> events.jsonl; echo >> events.jsonl\n",
}

// sharedStates are the states two projects can share: one SQLite file
// named by CADENCE_STATE, and one PostgreSQL database.
var sharedStates = []struct {
	name  string
	state func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "shared.db") }},
	{"postgres", func(t *testing.T) string { return pg.NewDatabase(t) }},
}

// runsOf returns the ids and statuses of the runs `cadence runs --json`
// lists in project p.
func runsOf(t *testing.T, p *project) map[string]string {
	t.Helper()
	r := p.cadence(nil, "runs", "--json", "--limit", "0")
	r.exits(t, 0)
	var runs []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, r.stdout)
	}
	out := map[string]string{}
	for _, run := range runs {
		out[run.ID] = run.Status
	}
	return out
}

// eventRuns returns the run ids of the events project p's target saved in
// its checkout.
func eventRuns(t *testing.T, p *project) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "events.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev struct {
			Event string `json:"event"`
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		ids = append(ids, ev.Event+" "+ev.RunID)
	}
	return ids
}

// snapshot is everything project p's commands show of its state.
func snapshot(t *testing.T, p *project) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"inspect", "--json"}, {"runs", "--json", "--limit", "0"}, {"gates", "--json"},
	} {
		r := p.cadence(nil, args...)
		r.exits(t, 0)
		b.WriteString(r.stdout)
	}
	return b.String()
}

// Two projects on one state, a PostgreSQL database or a SQLite file named
// by CADENCE_STATE: every command of project A, given A's directory, reads,
// answers, sends, abandons and prunes only A's runs, even when it is told
// B's run id; B's state is the same before and after all of them, and
// B's own notification is sent later by B, from B's checkout (issue 33).
func TestTwoProjectsShareAState(t *testing.T) {
	for _, st := range sharedStates {
		t.Run(st.name, func(t *testing.T) {
			state := st.state(t)
			a := newProject(t, strings.Replace(projectsWorkflow, "%s", "alpha", 1), projectsFiles)
			b := newProject(t, strings.Replace(projectsWorkflow, "%s", "beta", 1), projectsFiles)
			a.state, b.state = state, state

			// B waits at its gate, its approval_waiting undelivered: its
			// target is down.
			if err := os.WriteFile(filepath.Join(b.dir, "down"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			b.cadence(nil, "run").exits(t, 5)
			bRuns := runsOf(t, b)
			if len(bRuns) != 1 {
				t.Fatalf("project b has runs %v, want one", bRuns)
			}
			var bRun string
			for id := range bRuns {
				bRun = id
			}
			rep := b.inspect()
			if len(rep.Run.Deliveries) != 1 || rep.Run.Deliveries[0].Status != "pending" || rep.Run.Deliveries[0].NextTryAt == nil {
				t.Fatalf("b's deliveries %+v, want one pending", rep.Run.Deliveries)
			}
			due := *rep.Run.Deliveries[0].NextTryAt
			waitFor(t, "b's notification to be due again", func() bool { return time.Now().After(due) })
			before := snapshot(t, b)

			// A starts its own run while B's is unfinished, then starts
			// again with --new: its own first run is abandoned, not B's.
			a.cadence(nil, "run").exits(t, 5)
			a.cadence(nil, "run", "--new").exits(t, 5)
			aRuns := runsOf(t, a)
			if len(aRuns) != 2 || aRuns[bRun] != "" {
				t.Fatalf("project a lists runs %v, want its own two", aRuns)
			}
			gates := a.cadence(nil, "gates", "--json")
			gates.exits(t, 0)
			if strings.Contains(gates.stdout, bRun) || strings.Count(gates.stdout, `"gate"`) != 1 {
				t.Errorf("project a's gates: %s, want its own one", gates.stdout)
			}

			// Named by id, B's run is not found from A.
			for _, args := range [][]string{
				{"inspect", "--run", bRun}, {"output", "--run", bRun},
				{"report", "--run", bRun, "-o", filepath.Join(t.TempDir(), "r.html")},
				{"approve", "deploy", "--run", bRun}, {"reject", "deploy", "--run", bRun, "--comment", "no"},
				{"resume", "--run", bRun}, {"dlq", "list", "--run", bRun}, {"cancel", "--run", bRun},
			} {
				r := a.cadence(nil, args...)
				if r.code == 0 || !strings.Contains(r.stderr, bRun) {
					t.Errorf("cadence %s in a: exit %d, stderr %q; want a refusal naming %s", strings.Join(args, " "), r.code, r.stderr, bRun)
				}
			}

			// A answers its gate, finishes, resets its breaker and prunes
			// what it finished.
			// A's cancel, with one unfinished run of A's, takes it, not B's.
			a.cadence(nil, "run", "--new").exits(t, 5)
			a.cadence(nil, "cancel").exits(t, 0)
			a.cadence(nil, "run", "--new").exits(t, 5)
			aRuns = runsOf(t, a)
			if len(aRuns) != 4 || aRuns[bRun] != "" {
				t.Fatalf("project a lists runs %v, want its own four", aRuns)
			}
			a.cadence(nil, "approve", "deploy").exits(t, 0)
			a.cadence(nil, "resume").exits(t, 0)
			a.cadence(nil, "circuit", "reset", "sim").exits(t, 0)
			a.cadence(nil, "dlq", "list").exits(t, 0)
			if st.name == "postgres" {
				a.cadence(nil, "worker", "--once", "--poll", "50ms").exits(t, 0)
			}
			pr := a.cadence(nil, "prune", "--older-than", "0m", "--json")
			pr.exits(t, 0)
			var pruned struct{ Runs []struct{ ID string } }
			if err := json.Unmarshal([]byte(pr.stdout), &pruned); err != nil {
				t.Fatalf("prune --json: %v\n%s", err, pr.stdout)
			}
			if len(pruned.Runs) != 4 {
				t.Errorf("a's prune removed %+v, want a's four finished runs", pruned.Runs)
			}
			for _, r := range pruned.Runs {
				if r.ID == bRun {
					t.Errorf("a's prune removed b's run %s", bRun)
				}
			}

			// Nothing of B was read, answered, sent or changed by A.
			if after := snapshot(t, b); after != before {
				t.Errorf("b's state changed while a worked:\nbefore: %s\nafter:  %s", before, after)
			}
			for _, ev := range eventRuns(t, a) {
				if strings.HasSuffix(ev, " "+bRun) {
					t.Errorf("a's checkout ran b's notification %q", ev)
				}
			}
			if got := eventRuns(t, b); len(got) != 0 {
				t.Errorf("b's target heard %v while it was down", got)
			}
			aIDs := map[string]bool{}
			for id := range aRuns {
				aIDs[id] = true
			}
			for _, ev := range eventRuns(t, a) {
				if !aIDs[ev[strings.LastIndex(ev, " ")+1:]] {
					t.Errorf("a's target heard of a run not a's: %q", ev)
				}
			}

			// B answers its own gate and finishes; its target, up again,
			// gets B's events, from B's own process.
			if err := os.Remove(filepath.Join(b.dir, "down")); err != nil {
				t.Fatal(err)
			}
			b.cadence(nil, "approve", "deploy", "--resume").exits(t, 0)
			want := []string{"approval_waiting " + bRun, "run_succeeded " + bRun}
			if got := eventRuns(t, b); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("b's target heard %v, want %v", got, want)
			}
			if got := runsOf(t, b); len(got) != 1 || got[bRun] != "succeeded" {
				t.Errorf("b's runs %v, want its one run succeeded", got)
			}
			if got := runsOf(t, a); len(got) != 0 {
				t.Errorf("a's runs after its prune: %v, want none", got)
			}
			idA, errA := projectid.Read(a.dir)
			idB, errB := projectid.Read(b.dir)
			if errA != nil || errB != nil || idA == "" || idA == idB {
				t.Errorf("project ids %q (%v) and %q (%v), want two different ones", idA, errA, idB, errB)
			}
		})
	}
}
