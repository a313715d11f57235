package history_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// ResumeCandidates finds the named run, the unfinished runs and the
// latest one among finished runs started before, between and after them.
func TestResumeCandidates(t *testing.T) {
	run := func(id string, status checkpoint.RunStatus) fixtureRun { return fixtureRun{id: id, status: status} }
	tests := []struct {
		name       string
		runs       []fixtureRun // started an hour apart, in this order
		named      string
		want       string // the named run's id, "" when none is found
		unfinished []string
		latest     string
		err        error
	}{
		{name: "no runs", err: history.ErrNoRuns},
		{name: "one unfinished among finished",
			runs:       []fixtureRun{run("a", checkpoint.RunSucceeded), run("b", checkpoint.RunRunning), run("c", checkpoint.RunFailed)},
			unfinished: []string{"b"}, latest: "c"},
		{name: "two unfinished, oldest first",
			runs:       []fixtureRun{run("a", checkpoint.RunInterrupted), run("b", checkpoint.RunSucceeded), run("c", checkpoint.RunRunning)},
			unfinished: []string{"a", "c"}, latest: "c"},
		{name: "named finished run",
			runs:  []fixtureRun{run("a", checkpoint.RunFailed), run("b", checkpoint.RunSucceeded)},
			named: "a", want: "a", latest: "b"},
		{name: "named run not in the state",
			runs:  []fixtureRun{run("a", checkpoint.RunFailed)},
			named: "zz", latest: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeStatsFixture(t, dir, tt.runs)
			c, err := history.ResumeCandidates(context.Background(), dir, "", tt.named)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if got := idOf(c.Named); got != tt.want {
				t.Errorf("named run = %q, want %q", got, tt.want)
			}
			var unfinished []string
			for _, r := range c.Unfinished {
				unfinished = append(unfinished, r.ID)
			}
			if !slices.Equal(unfinished, tt.unfinished) {
				t.Errorf("unfinished = %v, want %v", unfinished, tt.unfinished)
			}
			if got := idOf(c.Latest); got != tt.latest {
				t.Errorf("latest = %q, want %q", got, tt.latest)
			}
		})
	}
}

func idOf(r *checkpoint.Run) string {
	if r == nil {
		return ""
	}
	return r.ID
}
