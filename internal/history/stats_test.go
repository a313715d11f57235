package history_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
	"github.com/cadence-dev/cadence/internal/history"
)

// statsT0 is when the first fixture run starts; the others start an hour
// apart.
var statsT0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// fixtureAttempt is one attempt of the stats fixture: times are seconds from
// the run's start; end < 0 means still running; cost < 0 means the agent
// reported no cost.
type fixtureAttempt struct {
	kind, class string
	status      checkpoint.AttemptStatus
	start, end  int
	cost        float64
	repairs     []string
	uncounted   bool // a usage-limit refusal or budget stop
}

type fixtureStep struct {
	id, agent string
	status    checkpoint.StepStatus
	max       int
	attempts  []fixtureAttempt
}

type fixtureRun struct {
	id     string
	status checkpoint.RunStatus
	steps  []fixtureStep
}

// statsFixture is three runs of a plan → implement → review workflow:
//
//	r1 (failed):  plan succeeds on attempt 2; implement is exhausted (2 of 2,
//	              with a help round in between).
//	r2 (running): plan succeeds at once; implement on attempt 2 after a
//	              transient failure and a 5 s backoff; review is on its
//	              second attempt.
//	r3 (failed):  plan fails with a class that is not retried.
func statsFixture() []fixtureRun {
	const unknown = -1
	return []fixtureRun{
		{id: "r1", status: checkpoint.RunFailed, steps: []fixtureStep{
			{id: "plan", agent: "claude", status: checkpoint.StepSucceeded, max: 3, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "schema", start: 0, end: 10, cost: 0.01, repairs: []string{"prose"}},
				{kind: "followup", status: "succeeded", start: 12, end: 20, cost: 0.02, repairs: []string{"single_quotes", "trailing_comma"}},
			}},
			{id: "implement", agent: "claude", status: checkpoint.StepFailed, max: 2, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "invalid_json", start: 20, end: 50, cost: 0.05, repairs: []string{"truncated"}},
				{kind: "help", status: "succeeded", start: 51, end: 53, cost: 0.01},
				{kind: "followup", status: "failed", class: "invalid_json", start: 55, end: 65, cost: unknown},
			}},
			{id: "review", agent: "lint", status: checkpoint.StepPending, max: 3},
		}},
		{id: "r2", status: checkpoint.RunRunning, steps: []fixtureStep{
			{id: "plan", agent: "claude", status: checkpoint.StepSucceeded, max: 3, attempts: []fixtureAttempt{
				{kind: "initial", status: "succeeded", start: 0, end: 5, cost: 0.01, repairs: []string{"code_fence"}},
			}},
			{id: "implement", agent: "claude", status: checkpoint.StepSucceeded, max: 2, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "transient", start: 5, end: 15, cost: 0},
				{kind: "followup", status: "succeeded", start: 20, end: 40, cost: 0.04},
			}},
			{id: "review", agent: "lint", status: checkpoint.StepRunning, max: 3, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "schema", start: 40, end: 41, cost: unknown},
				{kind: "followup", status: "running", start: 43, end: -1, cost: unknown},
			}},
		}},
		{id: "r3", status: checkpoint.RunFailed, steps: []fixtureStep{
			{id: "plan", agent: "claude", status: checkpoint.StepFailed, max: 3, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "exit_nonzero", start: 0, end: 1, cost: 0},
			}},
			{id: "implement", agent: "claude", status: checkpoint.StepPending, max: 2},
			{id: "review", agent: "lint", status: checkpoint.StepPending, max: 3},
		}},
	}
}

// writeStatsFixture fills DIR/.cadence/state.db with runs through the
// checkpoint API, moving every row along the transitions the run loop uses.
func writeStatsFixture(t *testing.T, dir string, runs []fixtureRun) {
	t.Helper()
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, filepath.Join(dir, checkpoint.CadenceDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i, fr := range runs {
		start := statsT0.Add(time.Duration(i) * time.Hour)
		at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
		err := store.Update(ctx, func(tx *checkpoint.Tx) error {
			run := checkpoint.NewRun(checkpoint.Run{ID: fr.id, WorkflowPath: ".cadence/workflow.yaml",
				WorkflowSHA256: "0", WorkflowYAML: []byte("version: 1\n")}, start)
			steps := make([]checkpoint.Step, len(fr.steps))
			for j, fs := range fr.steps {
				steps[j] = checkpoint.NewStep(checkpoint.Step{RunID: fr.id, ID: fs.id, Idx: j, Agent: fs.agent,
					MaxAttempts: fs.max, CostKnown: true}, start)
			}
			if err := tx.CreateRun(run, steps); err != nil {
				return err
			}
			for j, fs := range fr.steps {
				for k, fa := range fs.attempts {
					a := checkpoint.Attempt{RunID: fr.id, StepID: fs.id, N: k + 1, Kind: fa.kind, StartedAt: at(fa.start)}
					if err := tx.StartAttempt(&a); err != nil {
						return err
					}
					if fa.cost >= 0 {
						c := fa.cost
						a.CostUSD = &c
					}
					if fa.end >= 0 {
						end := at(fa.end)
						a.FinishedAt = &end
					}
					a.Class, a.Repairs, a.Uncounted = fa.class, fa.repairs, fa.uncounted
					if err := checkpointtest.EndAttempt(tx, &a, fa.status); err != nil {
						return err
					}
				}
				if err := checkpointtest.TakeStep(tx, &steps[j], fs.status, start); err != nil {
					return err
				}
			}
			if fr.status != checkpoint.RunRunning {
				return tx.RunEnded(&run, fr.status, start)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("write run %s: %v", fr.id, err)
		}
	}
}

// The expected figures below are worked out by hand from statsFixture.
var (
	wantPlanAll = history.Counts{
		Steps: 3, Succeeded: 2, Exhausted: 0, Failed: 1, Attempts: 4,
		SuccessRate:           2.0 / 4, // r1#2 and r2#1 of r1#1, r1#2, r2#1, r3#1
		MeanAttemptsToSuccess: 1.5,     // (2 + 1) / 2
		ExhaustionRate:        0,
		FailureClasses:        map[string]int{"schema": 1, "exit_nonzero": 1},
		Repairs:               map[string]int{"prose": 1, "single_quotes": 1, "trailing_comma": 1, "code_fence": 1},
		CostUSD:               0.04, CostPerAttemptUSD: 0.01, CostUnknownAttempts: 0,
		RunningSeconds: 10 + 8 + 5 + 1, WaitingSeconds: 2,
	}
	wantImplementAll = history.Counts{
		Steps: 2, Succeeded: 1, Exhausted: 1, Failed: 0, Attempts: 4, // the help round is not an attempt
		SuccessRate:           1.0 / 4,
		MeanAttemptsToSuccess: 2,
		ExhaustionRate:        0.5,
		FailureClasses:        map[string]int{"invalid_json": 2, "transient": 1},
		Repairs:               map[string]int{"truncated": 1},
		CostUSD:               0.05 + 0.01 + 0 + 0.04, CostPerAttemptUSD: 0.10 / 4, CostUnknownAttempts: 1,
		RunningSeconds: 30 + 2 + 10 + 10 + 20, WaitingSeconds: 1 + 2 + 5,
	}
	wantReviewAll = history.Counts{
		Steps: 1, Attempts: 1, // the running attempt has not finished
		FailureClasses:      map[string]int{"schema": 1},
		Repairs:             map[string]int{},
		CostUnknownAttempts: 1,
		RunningSeconds:      1, WaitingSeconds: 2,
	}
	wantClaudeAll = history.Counts{
		Steps: 5, Succeeded: 3, Exhausted: 1, Failed: 1, Attempts: 8,
		SuccessRate:           3.0 / 8,
		MeanAttemptsToSuccess: 5.0 / 3,
		ExhaustionRate:        1.0 / 5,
		FailureClasses:        map[string]int{"schema": 1, "exit_nonzero": 1, "invalid_json": 2, "transient": 1},
		Repairs:               map[string]int{"prose": 1, "single_quotes": 1, "trailing_comma": 1, "code_fence": 1, "truncated": 1},
		CostUSD:               0.14, CostPerAttemptUSD: 0.14 / 8, CostUnknownAttempts: 1,
		RunningSeconds: 24 + 72, WaitingSeconds: 2 + 8,
	}
	wantPlanR2 = history.Counts{
		Steps: 1, Succeeded: 1, Attempts: 1, SuccessRate: 1, MeanAttemptsToSuccess: 1,
		FailureClasses: map[string]int{}, Repairs: map[string]int{"code_fence": 1},
		CostUSD: 0.01, CostPerAttemptUSD: 0.01, RunningSeconds: 5,
	}
	wantImplementR2 = history.Counts{
		Steps: 1, Succeeded: 1, Attempts: 2, SuccessRate: 0.5, MeanAttemptsToSuccess: 2,
		FailureClasses: map[string]int{"transient": 1}, Repairs: map[string]int{},
		CostUSD: 0.04, CostPerAttemptUSD: 0.02, RunningSeconds: 30, WaitingSeconds: 5,
	}
	wantClaudeR2 = history.Counts{
		Steps: 2, Succeeded: 2, Attempts: 3, SuccessRate: 2.0 / 3, MeanAttemptsToSuccess: 1.5,
		FailureClasses: map[string]int{"transient": 1}, Repairs: map[string]int{"code_fence": 1},
		CostUSD: 0.05, CostPerAttemptUSD: 0.05 / 3, RunningSeconds: 35, WaitingSeconds: 5,
	}
)

func TestComputeStats(t *testing.T) {
	dir := t.TempDir()
	writeStatsFixture(t, dir, statsFixture())

	tests := []struct {
		name         string
		runID        string
		wantScope    string
		wantRuns     int
		wantSteps    []history.StepStats
		wantAgents   []history.AgentStats
		wantWarnings []string
	}{
		{
			name: "all runs", runID: "", wantScope: "all runs", wantRuns: 3,
			wantSteps: []history.StepStats{
				{Step: "plan", Counts: wantPlanAll},
				{Step: "implement", Counts: wantImplementAll},
				{Step: "review", Counts: wantReviewAll},
			},
			wantAgents: []history.AgentStats{
				{Agent: "claude", Counts: wantClaudeAll},
				{Agent: "lint", Counts: wantReviewAll},
			},
			wantWarnings: []string{
				"step implement: exhaustion rate 50.0% (1 of 2 finished executions), over 5%",
				"agent claude: exhaustion rate 20.0% (1 of 5 finished executions), over 5%",
			},
		},
		{
			name: "one run", runID: "r2", wantScope: "run r2", wantRuns: 1,
			wantSteps: []history.StepStats{
				{Step: "plan", Counts: wantPlanR2},
				{Step: "implement", Counts: wantImplementR2},
				{Step: "review", Counts: wantReviewAll},
			},
			wantAgents: []history.AgentStats{
				{Agent: "claude", Counts: wantClaudeR2},
				{Agent: "lint", Counts: wantReviewAll},
			},
			wantWarnings: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := history.ComputeStats(context.Background(), dir, "", tt.runID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Scope != tt.wantScope || got.Runs != tt.wantRuns {
				t.Errorf("scope, runs = %q, %d; want %q, %d", got.Scope, got.Runs, tt.wantScope, tt.wantRuns)
			}
			if len(got.Steps) != len(tt.wantSteps) {
				t.Fatalf("got %d steps %+v, want %d", len(got.Steps), got.Steps, len(tt.wantSteps))
			}
			for i, w := range tt.wantSteps {
				if got.Steps[i].Step != w.Step {
					t.Errorf("step %d is %q, want %q", i, got.Steps[i].Step, w.Step)
				}
				checkCounts(t, "step "+w.Step, got.Steps[i].Counts, w.Counts)
			}
			if len(got.Agents) != len(tt.wantAgents) {
				t.Fatalf("got %d agents %+v, want %d", len(got.Agents), got.Agents, len(tt.wantAgents))
			}
			for i, w := range tt.wantAgents {
				if got.Agents[i].Agent != w.Agent {
					t.Errorf("agent %d is %q, want %q", i, got.Agents[i].Agent, w.Agent)
				}
				checkCounts(t, "agent "+w.Agent, got.Agents[i].Counts, w.Counts)
			}
			if !reflect.DeepEqual(got.Warnings, tt.wantWarnings) {
				t.Errorf("warnings:\n got %q\nwant %q", got.Warnings, tt.wantWarnings)
			}
		})
	}
}

// checkCounts compares every field, floats within a rounding tolerance.
func checkCounts(t *testing.T, what string, got, want history.Counts) {
	t.Helper()
	ints := []struct {
		name      string
		got, want int
	}{
		{"steps", got.Steps, want.Steps},
		{"succeeded", got.Succeeded, want.Succeeded},
		{"exhausted", got.Exhausted, want.Exhausted},
		{"failed", got.Failed, want.Failed},
		{"attempts", got.Attempts, want.Attempts},
		{"cost_unknown_attempts", got.CostUnknownAttempts, want.CostUnknownAttempts},
	}
	for _, f := range ints {
		if f.got != f.want {
			t.Errorf("%s: %s = %d, want %d", what, f.name, f.got, f.want)
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"handoff_success_rate", got.SuccessRate, want.SuccessRate},
		{"mean_attempts_to_success", got.MeanAttemptsToSuccess, want.MeanAttemptsToSuccess},
		{"exhaustion_rate", got.ExhaustionRate, want.ExhaustionRate},
		{"cost_usd", got.CostUSD, want.CostUSD},
		{"cost_per_attempt_usd", got.CostPerAttemptUSD, want.CostPerAttemptUSD},
		{"running_seconds", got.RunningSeconds, want.RunningSeconds},
		{"waiting_seconds", got.WaitingSeconds, want.WaitingSeconds},
	}
	for _, f := range floats {
		if math.Abs(f.got-f.want) > 1e-9 {
			t.Errorf("%s: %s = %v, want %v", what, f.name, f.got, f.want)
		}
	}
	if !reflect.DeepEqual(got.FailureClasses, want.FailureClasses) {
		t.Errorf("%s: failure_classes = %v, want %v", what, got.FailureClasses, want.FailureClasses)
	}
	if !reflect.DeepEqual(got.Repairs, want.Repairs) {
		t.Errorf("%s: repairs = %v, want %v", what, got.Repairs, want.Repairs)
	}
}

func TestComputeStatsErrors(t *testing.T) {
	empty := t.TempDir() // no .cadence at all

	noRuns := t.TempDir() // a database with no run in it
	writeStatsFixture(t, noRuns, nil)

	withRuns := t.TempDir()
	writeStatsFixture(t, withRuns, statsFixture()[:1])

	tests := []struct {
		name    string
		dir     string
		runID   string
		wantErr error
	}{
		{"no database", empty, "", history.ErrNoRuns},
		{"no runs", noRuns, "", history.ErrNoRuns},
		{"unknown run", withRuns, "nope", checkpoint.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := history.ComputeStats(context.Background(), tt.dir, "", tt.runID)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ComputeStats = %+v, %v; want error %v", s, err, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(empty, checkpoint.CadenceDir, "state.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ComputeStats created a database in an empty project (stat: %v)", err)
	}
}

// TestComputeStatsExhaustedVersusFailed checks how a failed execution is
// split: all attempts used is exhausted, even when the last class is not
// retried; a budget stop or an early non-retried class is failed. Attempts
// that do not count against max_attempts (usage-limit refusals, budget
// stops) are neither attempts nor successes, but their class is shown.
func TestComputeStatsExhaustedVersusFailed(t *testing.T) {
	type att struct {
		class     string
		uncounted bool
	}
	tests := []struct {
		name          string
		max           int
		attempts      []att
		wantExhausted int
		wantFailed    int
		wantAttempts  int
	}{
		{"all attempts used", 2, []att{{"schema", false}, {"schema", false}}, 1, 0, 2},
		{"last class not retried, all used", 2, []att{{"schema", false}, {"exit_nonzero", false}}, 1, 0, 2},
		{"class not retried early", 3, []att{{"exit_nonzero", false}}, 0, 1, 1},
		{"budget stop", 2, []att{{"schema", false}, {"budget", true}}, 0, 1, 1},
		{"budget stop counted (older database)", 2, []att{{"schema", false}, {"budget", false}}, 0, 1, 2},
		{"usage limit between attempts", 2, []att{{"schema", false}, {"transient", true}, {"schema", false}}, 1, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var attempts []fixtureAttempt
			for i, a := range tt.attempts {
				kind := "initial"
				if i > 0 {
					kind = "followup"
				}
				attempts = append(attempts, fixtureAttempt{kind: kind, status: "failed", class: a.class,
					start: 2 * i, end: 2*i + 1, cost: 0, uncounted: a.uncounted})
			}
			writeStatsFixture(t, dir, []fixtureRun{{id: "r", status: checkpoint.RunFailed, steps: []fixtureStep{
				{id: "s", agent: "a", status: checkpoint.StepFailed, max: tt.max, attempts: attempts}}}})
			got, err := history.ComputeStats(context.Background(), dir, "", "")
			if err != nil {
				t.Fatal(err)
			}
			c := got.Steps[0].Counts
			if c.Exhausted != tt.wantExhausted || c.Failed != tt.wantFailed || c.Attempts != tt.wantAttempts {
				t.Errorf("exhausted, failed, attempts = %d, %d, %d; want %d, %d, %d",
					c.Exhausted, c.Failed, c.Attempts, tt.wantExhausted, tt.wantFailed, tt.wantAttempts)
			}
			if n := c.FailureClasses[tt.attempts[len(tt.attempts)-1].class]; n == 0 {
				t.Errorf("failure classes %v lack the last attempt's class", c.FailureClasses)
			}
		})
	}
}

// TestComputeStatsRetryWarning drives the mean-retries warning through the
// store: three executions that each succeed on attempt 4 (3 retries).
func TestComputeStatsRetryWarning(t *testing.T) {
	dir := t.TempDir()
	var runs []fixtureRun
	for _, id := range []string{"a", "b", "c"} {
		runs = append(runs, fixtureRun{id: id, status: checkpoint.RunSucceeded, steps: []fixtureStep{
			{id: "flaky", agent: "codex", status: checkpoint.StepSucceeded, max: 5, attempts: []fixtureAttempt{
				{kind: "initial", status: "failed", class: "schema", start: 0, end: 1, cost: 0.01},
				{kind: "followup", status: "failed", class: "schema", start: 2, end: 3, cost: 0.01},
				{kind: "followup", status: "failed", class: "truncated", start: 4, end: 5, cost: 0.01},
				{kind: "followup", status: "succeeded", start: 6, end: 7, cost: 0.01},
			}}}})
	}
	writeStatsFixture(t, dir, runs)
	got, err := history.ComputeStats(context.Background(), dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"step flaky: 3.00 retries on average before success, over 2",
		"agent codex: 3.00 retries on average before success, over 2",
	}
	if !reflect.DeepEqual(got.Warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got.Warnings, want)
	}
	if c := got.Steps[0].Counts; c.SuccessRate != 0.25 || c.FailureClasses["schema"] != 6 || c.FailureClasses["truncated"] != 3 {
		t.Errorf("flaky: success rate %v, classes %v; want 0.25, schema 6, truncated 3", c.SuccessRate, c.FailureClasses)
	}
}

// TestStatsWarningThresholds checks the thresholds are strict: exactly 5 %
// exhaustion (1 of 20) or exactly 2 retries on average warns nothing; just
// over either warns.
func TestStatsWarningThresholds(t *testing.T) {
	tests := []struct {
		name              string
		ok, exhausted     int // executions that succeed / are exhausted
		attemptsToSuccess int // attempts each success uses
		want              []string
	}{
		{"at both limits", 19, 1, 3, []string{}},
		{"exhaustion just over", 18, 1, 1, []string{
			"step s: exhaustion rate 5.3% (1 of 19 finished executions), over 5%",
			"agent a: exhaustion rate 5.3% (1 of 19 finished executions), over 5%",
		}},
		{"retries over", 2, 0, 4, []string{
			"step s: 3.00 retries on average before success, over 2",
			"agent a: 3.00 retries on average before success, over 2",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []fixtureRun
			add := func(status checkpoint.StepStatus, attempts []fixtureAttempt) {
				runs = append(runs, fixtureRun{id: fmt.Sprintf("r%02d", len(runs)), status: checkpoint.RunFailed,
					steps: []fixtureStep{{id: "s", agent: "a", status: status, max: 4, attempts: attempts}}})
			}
			for range tt.ok {
				add(checkpoint.StepSucceeded, statsAttempts(tt.attemptsToSuccess, "succeeded"))
			}
			for range tt.exhausted {
				add(checkpoint.StepFailed, statsAttempts(4, "failed"))
			}
			dir := t.TempDir()
			writeStatsFixture(t, dir, runs)
			got, err := history.ComputeStats(context.Background(), dir, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Warnings, tt.want) {
				t.Errorf("warnings:\n got %q\nwant %q", got.Warnings, tt.want)
			}
		})
	}
}

// statsAttempts returns n one-second attempts, all failed with class schema
// but the last, whose status is last.
func statsAttempts(n int, last checkpoint.AttemptStatus) []fixtureAttempt {
	out := make([]fixtureAttempt, n)
	for i := range out {
		out[i] = fixtureAttempt{kind: "followup", status: "failed", class: "schema", start: 2 * i, end: 2*i + 1, cost: 0}
	}
	out[0].kind = "initial"
	if last != "failed" {
		out[n-1].status, out[n-1].class = last, ""
	}
	return out
}

func TestByCount(t *testing.T) {
	got := history.ByCount(map[string]int{"schema": 3, "truncated": 1, "check": 3, "empty": 2})
	if want := "check schema empty truncated"; strings.Join(got, " ") != want {
		t.Errorf("ByCount = %q, want %q (most frequent first, ties by name)", got, want)
	}
	if got := history.ByCount(nil); len(got) != 0 {
		t.Errorf("ByCount(nil) = %q", got)
	}
}
