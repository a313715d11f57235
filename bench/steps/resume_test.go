package steps

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stampCmd makes step stamped print the time its process started, in
// nanoseconds since the epoch (date is a small C program: its own start is
// part of what is measured), and every other step start /bin/true.
func stampCmd(stamped int) func(int) []string {
	return func(i int) []string {
		if i == stamped {
			return []string{"/bin/date", "+%s%N"}
		}
		return []string{"/bin/true"}
	}
}

// outputs lists the copies of step's output in dir's runs, as cadence
// keeps them for the steps that read it in
// .cadence/outputs/RUN/READER/STEP.json (CADENCE_OUTPUTS_DIR, written
// before the reader starts). In a chain each step's directory passes to
// the step after it, so once a run has ended its copy is in its last
// step's directory, whichever step first read it (reader).
func outputs(b testing.TB, dir, reader, step string) []string {
	files, err := filepath.Glob(filepath.Join(dir, ".cadence", "outputs", "*", "*", step+".json"))
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// stampOf reads what step's date printed, from the copy its reader was
// given, in the one run whose copy is not among old.
func stampOf(b testing.TB, dir, reader, step string, old []string) time.Time {
	files := slices.DeleteFunc(outputs(b, dir, reader, step), func(f string) bool { return slices.Contains(old, f) })
	if len(files) != 1 {
		b.Fatalf("output of step %s: want one new file, got %v", step, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		b.Fatalf("output of step %s: %v: %s", step, err, data)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(out.Stdout), 10, 64)
	if err != nil {
		b.Fatalf("output of step %s: not a time in ns: %q", step, out.Stdout)
	}
	return time.Unix(0, ns)
}

// BenchmarkCadenceResume kills cadence (SIGKILL, through its failpoint
// after the outcome commit of step 900 of 1,000) and times from the exec
// of `cadence resume` to the start of the first new step's process.
// history/… first fills the state with BENCH_HISTORY attempts of earlier,
// finished runs (SQLite only: copies of one real run's rows).
func BenchmarkCadenceResume(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	kill := n * 9 / 10
	bin := cadence(b)
	bench := func(b *testing.B, stateURL string, history int) {
		var total time.Duration
		for b.Loop() {
			b.StopTimer()
			workflow := chainWorkflow(n, stampCmd(kill))
			dir := project(b, workflow, 0)
			url := stateURL
			if history > 0 {
				// A finished run of the same chain, without the stamp,
				// copied until the state holds history attempts.
				writeFile(b, filepath.Join(dir, ".cadence", "workflow.yaml"), chainWorkflow(n, trueCmd))
				runCadence(b, command(b.Context(), bin, url, nil, "run", "--quiet", dir), 0)
				fillHistory(b, filepath.Join(dir, ".cadence", "state.db"), history)
				writeFile(b, filepath.Join(dir, ".cadence", "workflow.yaml"), workflow)
			}
			// The failpoint counts outcome commits of this process: the
			// kill-th is step s(kill-1)'s, so s(kill) is the first new step.
			// Step s(kill+1) reads s(kill)'s output (the stamp) from a
			// file of its own.
			stamped, reader := fmt.Sprintf("s%d", kill), fmt.Sprintf("s%d", kill+1)
			old := outputs(b, dir, reader, stamped)
			fail := fmt.Sprintf("CADENCE_FAILPOINT=after-outcome-commit:%d", kill)
			runCadence(b, command(b.Context(), bin, url, []string{fail}, "run", "--quiet", "--new", dir), 137)
			resume := command(b.Context(), bin, url, nil, "resume", "--quiet", dir)
			b.StartTimer()
			start := time.Now()
			runCadence(b, resume, 0)
			b.StopTimer()
			total += stampOf(b, dir, reader, stamped, old).Sub(start)
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Nanoseconds())/1e6/float64(b.N), "ms/first-step")
	}
	for _, st := range engines {
		b.Run(st.name, func(b *testing.B) { bench(b, st.url(b), 0) })
	}
	b.Run("sqlite/history", func(b *testing.B) {
		bench(b, "", size(b, "BENCH_HISTORY", defaultHistory))
	})
}

// fillHistory copies the one finished run in the SQLite state at path
// until the state holds at least attempts attempts, each copy a finished
// run of its own under a new id that sorts before every real one. Every
// table keyed by run is copied except leases (a finished run holds none
// that matters).
func fillHistory(b testing.TB, path string, attempts int) {
	db := openSQLite(b, path)
	var run string
	var have int
	if err := db.QueryRow(`SELECT id FROM runs`).Scan(&run); err != nil {
		b.Fatalf("the state should hold one run: %v", err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM attempts`).Scan(&have); err != nil || have == 0 {
		b.Fatalf("attempts of run %s: %d (%v)", run, have, err)
	}
	// Parents before children, for the foreign keys: runs, steps, the rest.
	type table struct{ name, key string }
	tables := []table{{"runs", "id"}}
	rows, err := db.Query(`SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'run_id' AND m.name <> 'leases'
		ORDER BY m.name <> 'steps', m.name`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			b.Fatal(err)
		}
		tables = append(tables, table{t, "run_id"})
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	copies := make([]string, len(tables)) // INSERT … SELECT of each table
	for i, tb := range tables {
		t, key := tb.name, tb.key
		cols, err := columns(db, t)
		if err != nil {
			b.Fatal(err)
		}
		sel := make([]string, len(cols))
		for i, c := range cols {
			sel[i] = `"` + c + `"`
			if c == key {
				sel[i] = "?"
			}
		}
		copies[i] = fmt.Sprintf(`INSERT INTO "%s" ("%s") SELECT %s FROM "%s" WHERE "%s" = ?`,
			t, strings.Join(cols, `", "`), strings.Join(sel, ", "), t, key)
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for k := 1; have*(k+1) <= attempts; k++ {
		id := fmt.Sprintf("19990101-000000-%06d", k)
		for i, q := range copies {
			if _, err := tx.Exec(q, id, run); err != nil {
				b.Fatalf("copy %s of run %s: %v", tables[i].name, run, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	var total int
	if err := db.QueryRow(`SELECT count(*) FROM attempts`).Scan(&total); err != nil {
		b.Fatal(err)
	}
	if total*2 <= attempts {
		b.Fatalf("history: %d attempts, want about %d", total, attempts)
	}
	b.Logf("history: %d attempts", total)
}

// columns lists the columns of table t to copy: all but an INTEGER
// PRIMARY KEY (SQLite's rowid, numbered anew for each copied row).
func columns(db *sql.DB, t string) ([]string, error) {
	rows, err := db.Query(`SELECT name, upper(type) = 'INTEGER' AND pk = 1 AND
		(SELECT count(*) FROM pragma_table_info(?) WHERE pk > 0) = 1 FROM pragma_table_info(?)`, t, t)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", t, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		var rowid bool
		if err := rows.Scan(&c, &rowid); err != nil {
			return nil, err
		}
		if !rowid {
			cols = append(cols, c)
		}
	}
	return cols, rows.Err()
}
