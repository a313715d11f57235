package steps

import (
	"context"
	"database/sql"
	"net/url"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, the product's
)

// startTrue is a step's side effect everywhere in this package: one start
// of /bin/true, waited for.
func startTrue(ctx context.Context) error {
	return exec.CommandContext(ctx, "/bin/true").Run()
}

// openSQLite opens a SQLite file the way cadence's store does: WAL,
// synchronous=FULL (a committed transaction survives a power cut), a busy
// timeout, and immediate transactions.
func openSQLite(b testing.TB, path string) *sql.DB {
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=" + url.QueryEscape("journal_mode(WAL)") +
		"&_pragma=" + url.QueryEscape("synchronous(FULL)") +
		"&_pragma=" + url.QueryEscape("busy_timeout(10000)") +
		"&_pragma=" + url.QueryEscape("foreign_keys(ON)")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkFloor is what a step cannot cost less than: process starts
// alone, and process starts each between two SQLite commits at
// synchronous=FULL (the attempt recorded before its side effect, its
// outcome after), as many as BenchmarkCadenceChain runs steps.
func BenchmarkFloor(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	b.Run("exec", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			start := time.Now()
			for range n {
				if err := startTrue(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			total += time.Since(start)
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
	})
	for _, engine := range []struct {
		name string
		open func(b *testing.B) (db *sql.DB, insert, update string)
	}{
		{"sqlite", func(b *testing.B) (*sql.DB, string, string) {
			return openSQLite(b, filepath.Join(scratchDir(b), "state.db")),
				`INSERT INTO attempts (step, status, started_at) VALUES (?, 'running', ?)`,
				`UPDATE attempts SET status = 'succeeded', ended_at = ? WHERE step = ?`
		}},
		{"postgres", func(b *testing.B) (*sql.DB, string, string) {
			u, _ := postgres(b).database(b)
			db, err := sql.Open("pgx", u)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db,
				`INSERT INTO attempts (step, status, started_at) VALUES ($1, 'running', $2)`,
				`UPDATE attempts SET status = 'succeeded', ended_at = $1 WHERE step = $2`
		}},
	} {
		b.Run("exec+2commits/"+engine.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				db, insert, update := engine.open(b)
				if _, err := db.Exec(`CREATE TABLE attempts (step INTEGER PRIMARY KEY, status TEXT NOT NULL, started_at BIGINT, ended_at BIGINT)`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				ctx := b.Context()
				for i := range n {
					if _, err := db.ExecContext(ctx, insert, i, time.Now().UnixNano()); err != nil {
						b.Fatal(err)
					}
					if err := startTrue(ctx); err != nil {
						b.Fatal(err)
					}
					if _, err := db.ExecContext(ctx, update, time.Now().UnixNano(), i); err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
			}
			reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
		})
	}
	// One commit alone, n times, for the arithmetic of the figures above.
	b.Run("commit/sqlite", func(b *testing.B) {
		db := openSQLite(b, filepath.Join(scratchDir(b), "state.db"))
		if _, err := db.Exec(`CREATE TABLE t (i INTEGER PRIMARY KEY)`); err != nil {
			b.Fatal(err)
		}
		i := 0
		var total time.Duration
		for b.Loop() {
			start := time.Now()
			for range n {
				if _, err := db.ExecContext(b.Context(), `INSERT INTO t (i) VALUES (?)`, i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			total += time.Since(start)
		}
		reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "commit")
	})
}
