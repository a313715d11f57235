package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// stepsAnalyzedQuery reports whether the planner has statistics of the
// steps table: a row of pg_stats for its run_id.
const stepsAnalyzedQuery = `SELECT EXISTS (SELECT 1 FROM pg_stats
	WHERE schemaname = current_schema() AND tablename = 'steps' AND attname = 'run_id')`

// On a new PostgreSQL database, the lookups of one step or item by its key
// (its row, its status before a transition, and the foreign-key check
// each attempt's insert makes) must go through the primary key, in the
// plans a prepared statement gets: the custom plans of its first
// executions and the generic plan that follows. That holds once a run of
// many steps has been created, and once a map's items were inserted after
// a run of one step was: statistics taken before them saw one row per
// run. With such statistics, or none, PostgreSQL picks units_order or
// steps_order instead and reads every step of the run on each lookup
// (analyzeStepsIfStale).
func TestPostgresStepLookupsUseThePrimaryKey(t *testing.T) {
	const runID = "r1"
	setups := []struct {
		name      string
		seed      func(t *testing.T, s *Store)
		step, key string
	}{
		{"a chain of 200 steps", func(t *testing.T, s *Store) {
			ids := make([]string, 200)
			for i := range ids {
				ids[i] = fmt.Sprintf("s%d", i+1)
			}
			seedRun(t, s, runID, t0, ids...)
		}, "s150", ""},
		{"a map's 200 items after a run of one step", func(t *testing.T, s *Store) {
			seedRun(t, s, runID, t0, "plan")
			items := make([]Step, 200)
			for i := range items {
				items[i] = sampleItem(runID, "plan", fmt.Sprintf("k%d", i), i+1)
				items[i].Idx = 0
			}
			update(t, s, func(tx *Tx) error { return tx.InsertItems(items) })
		}, "plan", "k150"},
	}
	lookups := []struct{ name, query string }{
		{"Step", stepQuery},
		{"UpdateStep status", stepStatusQuery},
		// The query PostgreSQL runs for the foreign key of attempts.
		{"attempts' foreign key", `SELECT 1 FROM ONLY steps x WHERE run_id = ? AND step_id = ? AND item_key = ? FOR KEY SHARE OF x`},
	}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, pg.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			})
			setup.seed(t, s)
			conn, err := s.db.Connx(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for i, l := range lookups {
				for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
					t.Run(l.name+"/"+mode, func(t *testing.T) {
						if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = "+mode); err != nil {
							t.Fatal(err)
						}
						name := fmt.Sprintf("lookup_%d_%s", i, mode)
						prepare := fmt.Sprintf("PREPARE %s (text, text, text) AS %s", name, enginePostgres.query(l.query))
						if _, err := conn.ExecContext(ctx, prepare); err != nil {
							t.Fatal(err)
						}
						var lines []string
						explain := fmt.Sprintf("EXPLAIN EXECUTE %s('%s', '%s', '%s')", name, runID, setup.step, setup.key)
						if err := conn.SelectContext(ctx, &lines, explain); err != nil {
							t.Fatal(err)
						}
						plan := strings.Join(lines, "\n")
						if !strings.Contains(plan, "using steps_pkey") {
							t.Errorf("the lookup of one step does not use the primary key:\n%s", plan)
						}
					})
				}
			}
		})
	}
}

// A run created on a database whose steps table already has statistics
// that saw as many rows as it inserts leaves them alone:
// analyzeStepsIfStale analyzes only a table that has none, or whose
// statistics are outnumbered by the rows just inserted.
func TestPostgresStepsAnalyzedWhenStale(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	analyzed := func() int {
		t.Helper()
		var n int
		if err := s.db.GetContext(ctx, &n, `SELECT analyze_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'steps'`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	hasStats := func() bool {
		t.Helper()
		var ok bool
		if err := s.db.GetContext(ctx, &ok, stepsAnalyzedQuery); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if hasStats() {
		t.Fatal("a new database already has statistics of steps")
	}
	seedRun(t, s, "r1", t0, "a", "b", "c")
	if !hasStats() {
		t.Fatal("no statistics of steps after the first run was created")
	}
	first := analyzed()
	if first != 1 {
		t.Fatalf("steps analyzed %d times after the first run, want 1", first)
	}
	seedRun(t, s, "r2", t0, "a", "b", "c")
	if got := analyzed(); got != first {
		t.Fatalf("steps analyzed %d times after a second run, want %d (once)", got, first)
	}
	// items are n items of r2's step at position idx.
	items := func(step string, idx, n int) []Step {
		out := make([]Step, n)
		for i := range out {
			out[i] = sampleItem("r2", step, fmt.Sprintf("k%d", i), i+1)
			out[i].Idx = idx
		}
		return out
	}
	// 7 items outnumber the 6 rows the statistics saw; 3 more do not
	// outnumber the 13 the next analyze saw.
	update(t, s, func(tx *Tx) error { return tx.InsertItems(items("a", 0, 7)) })
	if got := analyzed(); got != first+1 {
		t.Fatalf("steps analyzed %d times after a map's items outnumbered its rows, want %d", got, first+1)
	}
	update(t, s, func(tx *Tx) error { return tx.InsertItems(items("b", 1, 3)) })
	if got := analyzed(); got != first+1 {
		t.Errorf("steps analyzed %d times after 3 items in a table of 13 rows, want %d", got, first+1)
	}
}

// A run created while another session holds the lock an analyze needs (a
// vacuum, another analyze) is created all the same; the statistics are
// left for later, and the next run's creation gathers them.
func TestPostgresStepsAnalyzeWhileLocked(t *testing.T) {
	ctx := context.Background()
	target := pg.NewDatabase(t)
	s := openStore(t, target)
	locker := openStore(t, target)
	hasStats := func() bool {
		t.Helper()
		var ok bool
		if err := s.db.GetContext(ctx, &ok, stepsAnalyzedQuery); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	lock, err := locker.db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "LOCK TABLE steps IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	seedRun(t, s, "r1", t0, "a", "b")
	if hasStats() {
		t.Error("steps has statistics although its analyze could not take the lock")
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	seedRun(t, s, "r2", t0, "a", "b")
	if !hasStats() {
		t.Error("no statistics of steps after a run created once the lock was free")
	}
}
