package history

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
)

// loopRows are the rows of one run's loop step implement that ran n
// iterations, ending as status; last is the value of the last until
// (nil: not evaluated, an inner step failed).
func loopRows(states *checkpointtest.States, status checkpoint.StepStatus, n int, last *bool) []checkpoint.Step {
	rows := []checkpoint.Step{states.Step(checkpoint.Step{ID: "plan"}, checkpoint.StepSucceeded), states.Step(checkpoint.Step{ID: "implement"}, status)}
	for i := 1; i <= n; i++ {
		id := "implement/" + strconv.Itoa(i)
		itStatus := checkpoint.StepSucceeded
		v := false
		if i == n {
			if last == nil {
				itStatus = checkpoint.StepFailed
			} else {
				v = *last
			}
		}
		row := checkpoint.Step{ID: id}
		if itStatus == checkpoint.StepSucceeded {
			row.DecisionJSON, _ = json.Marshal(Decision{Until: "steps.review.output.ok", Value: &v})
		}
		rows = append(rows, states.Step(row, itStatus), states.Step(checkpoint.Step{ID: id + "/code"}, itStatus))
	}
	return rows
}

// TestLoopStats: iterations to success are the min, median and max over
// the loops whose until was met; loops exhausted, failed and running are
// counted apart.
func TestLoopStats(t *testing.T) {
	yes, no := true, false
	type run struct {
		status checkpoint.StepStatus
		n      int
		last   *bool
	}
	for _, tc := range []struct {
		name string
		runs []run
		want LoopStats
	}{
		{"one run", []run{{checkpoint.StepSucceeded, 3, &yes}},
			LoopStats{Step: "implement", Loops: 1, Succeeded: 1, Iterations: 3, MinIterationsToSuccess: 3, MedianIterationsToSuccess: 3, MaxIterationsToSuccess: 3}},
		{"odd count", []run{{checkpoint.StepSucceeded, 1, &yes}, {checkpoint.StepSucceeded, 3, &yes}, {checkpoint.StepSucceeded, 2, &yes}},
			LoopStats{Step: "implement", Loops: 3, Succeeded: 3, Iterations: 6, MinIterationsToSuccess: 1, MedianIterationsToSuccess: 2, MaxIterationsToSuccess: 3}},
		{"even count", []run{{checkpoint.StepSucceeded, 4, &yes}, {checkpoint.StepSucceeded, 1, &yes}},
			LoopStats{Step: "implement", Loops: 2, Succeeded: 2, Iterations: 5, MinIterationsToSuccess: 1, MedianIterationsToSuccess: 2.5, MaxIterationsToSuccess: 4}},
		{"exhausted, failed and running are not successes", []run{
			{checkpoint.StepFailed, 5, &no},     // max_iterations used up, on_exhausted: fail
			{checkpoint.StepSucceeded, 5, &no},  // on_exhausted: continue
			{checkpoint.StepFailed, 2, nil},     // an inner step failed
			{checkpoint.StepRunning, 2, &no},    // between iterations
			{checkpoint.StepSucceeded, 2, &yes}, // the only success
		}, LoopStats{Step: "implement", Loops: 5, Succeeded: 1, Exhausted: 2, Failed: 1, Running: 1, Iterations: 16,
			MinIterationsToSuccess: 2, MedianIterationsToSuccess: 2, MaxIterationsToSuccess: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newStatsAggregator()
			states := checkpointtest.New(t)
			for _, r := range tc.runs {
				g.addLoops(loopRows(states, r.status, r.n, r.last))
			}
			got := g.loopResult()
			if len(got) != 1 || !reflect.DeepEqual(got[0], tc.want) {
				t.Errorf("loops = %+v\nwant    %+v", got, tc.want)
			}
		})
	}
}

// TestGateStats: a gate's wait is from reached to decided; one still
// waiting counts up to now; one failed with no decision timed out.
func TestGateStats(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	gate := func(id, decision string, reached int, decided *time.Time) checkpoint.Approval {
		return checkpoint.Approval{Unit: checkpoint.Unit{StepID: id}, RequestedAt: *at(reached), Decision: decision, DecidedAt: decided}
	}
	states := checkpointtest.New(t)
	rows := []checkpoint.Step{states.Step(checkpoint.Step{ID: "merge"}, checkpoint.StepSucceeded),
		states.Step(checkpoint.Step{ID: "loop/1/review"}, checkpoint.StepSucceeded),
		states.Step(checkpoint.Step{ID: "loop/2/review"}, checkpoint.StepFailed),
		states.Step(checkpoint.Step{ID: "loop/3/review"}, checkpoint.StepWaiting)}
	g := newStatsAggregator()
	g.addGates([]checkpoint.Approval{
		gate("merge", checkpoint.Approved, 0, at(10)),
		gate("loop/1/review", checkpoint.Rejected, 100, at(130)),
		gate("loop/2/review", "", 200, nil),
		gate("loop/3/review", "", 300, nil),
	}, rows, *at(400))
	got := g.gateResult()
	want := []GateStats{
		{Step: "merge", Reached: 1, Approved: 1, MeanWaitSeconds: 10, MaxWaitSeconds: 10},
		{Step: "review", Reached: 3, Rejected: 1, TimedOut: 1, Waiting: 1, MeanWaitSeconds: 30, MaxWaitSeconds: 30, WaitingSeconds: 100},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gates = %+v\nwant    %+v", got, want)
	}
}
