// Package steps measures what one durable step costs (issue 34): cadence
// run as a user runs it (the CLI as a whole process, its supervisor
// included) beside the floor (plain process starts, and process starts
// with two SQLite commits each) and beside DBOS Transact and River doing
// the same work, on SQLite and on PostgreSQL on loopback, in one run.
//
// Everything heavy is in Benchmark functions: a plain `go test` runs only
// the cheap tests of the workflow generators. From the bench directory:
//
//	go test ./steps -run '^$' -bench . -benchtime 1x -timeout 60m
//
// Sizes default to the (a chain of 1,000 steps, 1,000 map items,
// `cadence check` of 10,000 steps, 100,000 attempts of history) and can be
// made smaller for a quick run with BENCH_STEPS, BENCH_CHECK_STEPS and
// BENCH_HISTORY. PostgreSQL benchmarks start a throwaway cluster of their
// own (initdb and postgres from the PostgreSQL server package, run as the
// postgres user when we are root), durable as in production: fsync on.
package steps
