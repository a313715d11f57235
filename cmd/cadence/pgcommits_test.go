package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to read the server's statistics
)

// A command step costs three transactions on PostgreSQL: the claim of
// its step (with the state its attempt decides from), the attempt's row,
// which names the supervisor the command will run under and so needs no
// commit of a pid after it, and the outcome. The count is the server's
// own (pg_stat_database.xact_commit), taken as the difference between a
// chain of 25 steps and one of 5, so that the run's own commits
// (migrations, its row, lease and end) cancel out.
func TestPostgresTransactionsPerCommandStep(t *testing.T) {
	admin, err := sql.Open("pgx", pg.Cluster(t).URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	commits := func(n int) int64 {
		var wf strings.Builder
		wf.WriteString("version: 1\nsteps:\n  - {id: s0, run: [/bin/true]}\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&wf, "  - {id: s%d, needs: [s%d], run: [/bin/true]}\n", i, i-1)
		}
		p := newEngineProject(t, postgresEngine, wf.String(), nil)
		p.cadence(nil, "run", "--quiet").exits(t, 0)
		u, err := url.Parse(p.state)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(u.Path, "/")
		// A backend reports its counts as it exits, which may follow
		// cadence's own exit by a little.
		waitFor(t, "cadence's sessions of database "+name+" to end", func() bool {
			var left int
			err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&left)
			return err == nil && left == 0
		})
		var c int64
		if err := admin.QueryRow(`SELECT pg_stat_clear_snapshot() IS NULL, xact_commit FROM pg_stat_database WHERE datname = $1`,
			name).Scan(new(bool), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	short, long := commits(5), commits(25)
	// Lease renewals come every few seconds of a run: at most a couple
	// in the longer run's extra time, well under 0.25 a step.
	if per := float64(long-short) / 20; per > 3.25 {
		t.Errorf("%.2f transactions committed per command step (%d for 5 steps, %d for 25), want 3", per, short, long)
	} else {
		t.Logf("%.2f transactions per command step (%d for 5 steps, %d for 25)", per, short, long)
	}
}
