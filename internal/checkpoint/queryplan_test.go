package checkpoint

import (
	"strings"
	"testing"
)

// The queries resume runs must find their rows through an index: a plan
// step "SCAN attempts" (without "USING ... INDEX") would read the project's
// whole attempt history on every resume. SQLite only: the plans are
// SQLite's (EXPLAIN QUERY PLAN).
func TestResumeQueriesUseIndexes(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		name  string
		query string
		args  []any
		index string // when set, the index the plan must use
	}{
		{"LatestRun", latestRunQuery, []any{"p"}, "runs_project"},
		{"LatestUnfinishedRun", latestUnfinishedRunQuery, []any{"p"}, "runs_project_unfinished"},
		// The run a resume names (chooseWorkflow), by its primary key.
		{"Run", runQuery, []any{"r", "p"}, ""},
		{"Runs", runsQuery, []any{"p"}, "runs_project"},
		{"Steps", stepsQuery, []any{"r"}, "steps_order"},
		{"LastAttempt", lastAttemptQuery, []any{"r", "s", ""}, ""},
		// The primary key would also avoid the sort, but it reads every
		// attempt of the run; the partial index holds only running ones.
		{"RunningAttempts", runningAttemptsQuery, []any{"r"}, "attempts_running"},
		// The items a shared map step settles when it ends with items
		// left running (RunningItems).
		{"RunningItems", runningItemsQuery, []any{"r", "s"}, "attempts_running"},
		{"InsertAttempt numbering", lastAttemptNumberQuery, []any{"r", "s", "k"}, ""},
		{"UpdateAttempt status", attemptStatusQuery, []any{"r", "s", "", 1}, ""},
		{"CountAttempts", countAttemptsQuery, []any{"r", "s", ""}, ""},
		{"CountCounted", countCountedQuery, []any{"r", "s", "k"}, ""},
		{"AllAttempts", allAttemptsQuery, []any{"r"}, "units_order"},
		{"AllAttemptsBrief", allAttemptsBriefQuery, []any{"r"}, "units_order"},
		{"Items", itemsQuery, []any{"r", "s"}, "items_order"},
		{"DeadLetters", deadLettersQuery, []any{"r"}, ""},
		{"Attempt", attemptQuery, []any{"r", "s", "k", 1}, ""},
		{"Step", stepQuery, []any{"r", "s", ""}, ""},
		{"UpdateStep status", stepStatusQuery, []any{"r", "s", "k"}, ""},
		// What a worker reads at every poll, and a claim.
		{"UnfinishedRuns", unfinishedRunsQuery, []any{"p"}, "runs_project_unfinished"},
		{"ClaimItem", claimableItemQuery, []any{"r", "s", "t", "t"}, "items_open"},
		{"OpenItems", openItemsQuery, []any{"r", "s"}, "items_open"},
		{"Lease", leaseQuery, []any{"r", "s", "k"}, ""},
		{"Fence", fenceQuery, []any{"r", "s", "k"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plan []struct {
				ID     int    `db:"id"`
				Parent int    `db:"parent"`
				NotUse int    `db:"notused"`
				Detail string `db:"detail"`
			}
			if err := s.db.Select(&plan, "EXPLAIN QUERY PLAN "+tt.query, tt.args...); err != nil {
				t.Fatal(err)
			}
			if len(plan) == 0 {
				t.Fatal("empty query plan")
			}
			var details []string
			for _, p := range plan {
				details = append(details, p.Detail)
				if strings.HasPrefix(p.Detail, "SCAN ") && !strings.Contains(p.Detail, "INDEX") {
					t.Errorf("full table scan: %q", p.Detail)
				}
				if strings.Contains(p.Detail, "TEMP B-TREE") {
					t.Errorf("sorts the whole result: %q", p.Detail)
				}
			}
			joined := strings.Join(details, " | ")
			if tt.index != "" && !strings.Contains(joined+" ", "INDEX "+tt.index+" ") {
				t.Errorf("plan %q does not use index %s", joined, tt.index)
			}
			t.Logf("plan: %s", joined)
		})
	}
}
