package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/history/historytest"
)

var update = flag.Bool("update", false, "rewrite the golden files of this package")

// loopReport writes historytest.LoopRun to a fresh project and inspects it.
func loopReport(t *testing.T) (string, *history.Report) {
	t.Helper()
	dir := t.TempDir()
	historytest.LoopRun(t, dir)
	rep, err := history.Inspect(context.Background(), dir, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}

// TestInspectNestsLoops: a loop step holds its iterations, each with its
// until decision and its inner steps; the rows of iterations and inner
// steps are not top-level steps.
func TestInspectNestsLoops(t *testing.T) {
	_, rep := loopReport(t)
	var ids []string
	for _, s := range rep.Steps {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, " "); got != "plan implement signoff merge-gate" {
		t.Fatalf("top-level steps = %s, want plan implement signoff merge-gate", got)
	}
	loop := rep.Find("implement")
	if len(loop.Iterations) != 3 {
		t.Fatalf("implement has %d iterations, want 3", len(loop.Iterations))
	}
	for i, tc := range []struct {
		until      bool
		codeStatus string
		codeUsed   int
		codeErr    string
	}{
		{false, "succeeded", 2, "schema"},
		{false, "succeeded", 1, ""},
		{true, "succeeded", 1, ""},
	} {
		it := loop.Iterations[i]
		if it.Iteration != i+1 || it.Status != "succeeded" {
			t.Errorf("iteration %d: number %d status %s, want %d succeeded", i+1, it.Iteration, it.Status, i+1)
		}
		var d history.Decision
		if err := json.Unmarshal(it.Until, &d); err != nil || d.Value == nil || *d.Value != tc.until || d.Until != "steps.code.output.approved" {
			t.Errorf("iteration %d: until %s (%v), want steps.code.output.approved = %v", i+1, it.Until, err, tc.until)
		}
		if len(it.Steps) != 2 {
			t.Fatalf("iteration %d has %d inner steps, want code and docs", i+1, len(it.Steps))
		}
		code, docs := it.Steps[0], it.Steps[1]
		prefix := "implement/" + string(rune('1'+i)) + "/"
		if code.ID != prefix+"code" || docs.ID != prefix+"docs" {
			t.Errorf("iteration %d: inner steps %s, %s, want %scode, %sdocs", i+1, code.ID, docs.ID, prefix, prefix)
		}
		if string(code.Status) != tc.codeStatus || code.AttemptsUsed != tc.codeUsed || code.MaxAttempts != 2 {
			t.Errorf("iteration %d: code %s %d/%d, want %s %d/2", i+1, code.Status, code.AttemptsUsed, code.MaxAttempts, tc.codeStatus, tc.codeUsed)
		}
		if got := code.Attempts[0].Class; got != tc.codeErr {
			t.Errorf("iteration %d: code's first attempt class %q, want %q", i+1, got, tc.codeErr)
		}
		if docs.Status != "skipped" || len(docs.Decision) == 0 {
			t.Errorf("iteration %d: docs %s with decision %s, want skipped with its when", i+1, docs.Status, docs.Decision)
		}
	}
	// The loop's usage is its inner steps': 0.02+0.03 + 0.02 + 0.01.
	if want := 0.08; loop.CostUSD < want-1e-9 || loop.CostUSD > want+1e-9 {
		t.Errorf("implement cost %v, want %v", loop.CostUSD, want)
	}
	if got := len(rep.Instances("code")); got != 3 {
		t.Errorf("instances of code = %d, want 3", got)
	}
	if s := rep.Find("implement/2/code"); s == nil || s.Status != "succeeded" {
		t.Errorf("Find(implement/2/code) = %+v", s)
	}
}

// TestInspectGates: a gate decided shows its decision, who and when; a
// gate waiting shows as waiting and in the run's waiting_for.
func TestInspectGates(t *testing.T) {
	_, rep := loopReport(t)
	for _, tc := range []struct {
		step, status, decision, by, comment string
		decided                             bool
	}{
		{"signoff", "succeeded", "approved", "alice@ci", "looks good; ship it", true},
		{"merge-gate", "waiting", "waiting", "", "", false},
	} {
		s := rep.Find(tc.step)
		if s == nil || s.Approval == nil {
			t.Fatalf("%s: no approval in %+v", tc.step, s)
		}
		a := s.Approval
		if string(s.Status) != tc.status || a.Decision != tc.decision || a.By != tc.by || a.Comment != tc.comment || (a.At != nil) != tc.decided {
			t.Errorf("%s: %s, approval %+v; want %s %s by %q comment %q decided %v", tc.step, s.Status, a, tc.status, tc.decision, tc.by, tc.comment, tc.decided)
		}
	}
	if len(rep.Run.WaitingFor) != 1 {
		t.Fatalf("waiting_for = %+v, want merge-gate only", rep.Run.WaitingFor)
	}
	w := rep.Run.WaitingFor[0]
	if w.Step != "merge-gate" || w.Prompt != "Merge the branch into main?" || !w.Since.Equal(historytest.T0.Add(31e9)) || w.TimeoutAt == nil {
		t.Errorf("waiting_for[0] = %+v", w)
	}
	if rep.Find("plan").Approval != nil || rep.Find("implement").Approval != nil {
		t.Error("a step that is not a gate has an approval")
	}
}

// TestInspectLoopGolden compares inspect --json of the loop run with
// testdata/loop.inspect.golden (go test -run TestInspectLoopGolden -update
// rewrites it; read the difference before committing it).
func TestInspectLoopGolden(t *testing.T) {
	_, rep := loopReport(t)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "loop.inspect.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(buf.String(), "\n")
	lines := strings.Split(string(want), "\n")
	for i := range max(len(got), len(lines)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(lines) {
			w = lines[i]
		}
		if g != w {
			t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// TestFollowLoopsAndGates: --follow's transitions of the loop run tell
// each iteration's start and end with its until, the inner steps in
// their iteration, and the gates reached and decided, in order.
func TestFollowLoopsAndGates(t *testing.T) {
	dir := t.TempDir()
	historytest.LoopRun(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	stopped := false
	_, err := history.Follow(ctx, dir, "", "", func(ev history.Event) {
		line := ev.Type + " " + ev.Step
		if ev.Type == history.EventIterationStarted || ev.Type == history.EventIterationEnded {
			line += " #" + string(rune('0'+ev.Attempt))
		}
		if ev.Status != "" {
			line += " " + ev.Status
		}
		if ev.Type == history.EventIterationEnded || ev.Type == history.EventGateDecided {
			line += " " + ev.Message
		}
		got = append(got, line)
		if ev.Type == history.EventRunInterrupted {
			stopped = true
		}
	}, func(string) {
		if stopped {
			cancel() // the interrupted run is reported: the follow now waits for a resume
		}
	})
	if err == nil || !stopped {
		t.Fatalf("follow ended with %v before the run was reported stopped", err)
	}
	want := []string{
		"run_started ",
		"attempt_started plan",
		"attempt_finished plan succeeded",
		"step_succeeded plan",
		"iteration_started implement #1",
		"attempt_started implement/1/code",
		"attempt_finished implement/1/code failed",
		"attempt_started implement/1/code",
		"attempt_finished implement/1/code succeeded",
		"step_succeeded implement/1/code",
		"step_skipped implement/1/docs skipped",
		"iteration_ended implement #1 succeeded until steps.code.output.approved is false",
		"iteration_started implement #2",
		"attempt_started implement/2/code",
		"attempt_finished implement/2/code succeeded",
		"step_succeeded implement/2/code",
		"step_skipped implement/2/docs skipped",
		"iteration_ended implement #2 succeeded until steps.code.output.approved is false",
		"iteration_started implement #3",
		"attempt_started implement/3/code",
		"attempt_finished implement/3/code succeeded",
		"step_succeeded implement/3/code",
		"step_skipped implement/3/docs skipped",
		"iteration_ended implement #3 succeeded until steps.code.output.approved is true",
		"step_succeeded implement",
		"gate_waiting signoff",
		"gate_decided signoff approved by alice@ci: looks good; ship it",
		"step_succeeded signoff",
		"gate_waiting merge-gate",
		"run_interrupted  interrupted",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("follow printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStatsOfLoopRun: over the loop run, code is one execution per
// iteration (3, one retry), docs skipped in each; implement took 3
// iterations; signoff waited 13 s, merge-gate still waits.
func TestStatsOfLoopRun(t *testing.T) {
	dir := t.TempDir()
	historytest.LoopRun(t, dir)
	st, err := history.ComputeStats(context.Background(), dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]history.Counts{}
	for _, s := range st.Steps {
		steps[s.Step] = s.Counts
	}
	if c := steps["code"]; c.Steps != 3 || c.Succeeded != 3 || c.Attempts != 4 || c.FailureClasses["schema"] != 1 {
		t.Errorf("code = %+v, want 3 executions, 3 succeeded, 4 attempts, 1 schema failure", c)
	}
	if c := steps["docs"]; c.Skipped != 3 || c.Steps != 0 {
		t.Errorf("docs = %+v, want skipped 3 times", c)
	}
	for name := range steps {
		if strings.Contains(name, "/") {
			t.Errorf("stats list a row path %q as a step", name)
		}
	}
	if len(st.Loops) != 1 || !reflect.DeepEqual(st.Loops[0], history.LoopStats{Step: "implement", Loops: 1, Succeeded: 1, Iterations: 3,
		MinIterationsToSuccess: 3, MedianIterationsToSuccess: 3, MaxIterationsToSuccess: 3}) {
		t.Errorf("loops = %+v", st.Loops)
	}
	if len(st.Gates) != 2 {
		t.Fatalf("gates = %+v, want signoff and merge-gate", st.Gates)
	}
	if g := st.Gates[0]; g.Step != "signoff" || g.Approved != 1 || g.MeanWaitSeconds != 13 || g.MaxWaitSeconds != 13 || g.Waiting != 0 {
		t.Errorf("signoff = %+v, want approved after 13 s", g)
	}
	// merge-gate was reached at T0+31s; it has waited at least since.
	if g := st.Gates[1]; g.Step != "merge-gate" || g.Waiting != 1 || g.Approved+g.Rejected != 0 ||
		g.WaitingSeconds < time.Since(historytest.T0.Add(31*time.Second)).Seconds()-60 {
		t.Errorf("merge-gate = %+v, want waiting since %s", g, historytest.T0.Add(31*time.Second))
	}
}
