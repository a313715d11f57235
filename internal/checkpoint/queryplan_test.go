package checkpoint

import (
	"strings"
	"testing"
)

// The queries resume runs must find their rows through an index: a plan
// step "SCAN attempts" (without "USING ... INDEX") would read the project's
// whole attempt history on every resume.
func TestResumeQueriesUseIndexes(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		name  string
		query string
		args  []any
	}{
		{"LatestRun", latestRunQuery, nil},
		{"LatestUnfinishedRun", latestUnfinishedRunQuery, nil},
		{"Steps", stepsQuery, []any{"r"}},
		{"LastAttempt", lastAttemptQuery, []any{"r", "s"}},
		{"RunningAttempts", runningAttemptsQuery, []any{"r"}},
		{"InsertAttempt numbering", lastAttemptNumberQuery, []any{"r", "s"}},
		{"UpdateAttempt status", attemptStatusQuery, []any{"r", "s", 1}},
		{"CountAttempts", countAttemptsQuery, []any{"r", "s"}},
		{"CountCounted", countCountedQuery, []any{"r", "s"}},
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
			t.Logf("plan: %s", strings.Join(details, " | "))
		})
	}
}
