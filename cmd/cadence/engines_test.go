package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cadence-dev/cadence/internal/pgtest"
)

// pg is the PostgreSQL cluster of this test binary: started by the first
// test that runs against PostgreSQL, stopped by TestMain after every test.
var pg pgtest.Shared

// stateEngine is a state database engine the process-level durability
// tests run against: the project's own SQLite file, or a database of its
// own on the shared PostgreSQL cluster (SPEC §13).
type stateEngine struct {
	name string
	// state returns the CADENCE_STATE of a new project: empty for the
	// project's .cadence/state.db, a fresh database's URL for PostgreSQL
	// (dropped when the test ends).
	state func(t *testing.T) string
	// killPoints is how many kills TestRandomKillSchedule delivers by
	// default (CADENCE_KILL_POINTS overrides it for every engine).
	killPoints int
}

var (
	sqliteEngine = stateEngine{
		name:       "sqlite",
		state:      func(*testing.T) string { return "" },
		killPoints: defaultKillPoints,
	}
	postgresEngine = stateEngine{
		name:  "postgres",
		state: func(t *testing.T) string { return pg.NewDatabase(t) },
		// Fewer kills than SQLite's 100, to keep `make test` in
		// proportion: this package is already most of its time (about
		// nine minutes of -race on two cores), and the PostgreSQL
		// schedule costs about half a second per kill (40 kills, some
		// 25 s). The crash-point matrix already kills PostgreSQL runs at
		// every commit boundary; 40 random kills, drawn as SQLite's are
		// (from before the database is open to well into the map
		// step), still span two runs or more (maxKillsPerRun).
		killPoints: 40,
	}
	stateEngines = []stateEngine{sqliteEngine, postgresEngine}
)

// forEachEngine runs fn as a subtest per state engine, named after it.
func forEachEngine(t *testing.T, fn func(t *testing.T, e stateEngine)) {
	t.Helper()
	for _, e := range stateEngines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

// newEngineProject is newProject with its state kept by engine e: every
// cadence process of the project, and every in-process read of its state,
// uses the engine's database.
func newEngineProject(t *testing.T, e stateEngine, workflowYAML string, files map[string]string) *project {
	t.Helper()
	p := newProject(t, workflowYAML, files)
	p.state = e.state(t)
	return p
}

// checkStateLocation fails the test when a project whose state is kept
// elsewhere got a .cadence/state.db anyway: its processes would then have
// shared a SQLite file, not the database under test.
func (p *project) checkStateLocation() {
	p.t.Helper()
	if p.state == "" {
		return
	}
	_, err := os.Stat(filepath.Join(p.dir, ".cadence", "state.db"))
	switch {
	case err == nil:
		p.t.Errorf(".cadence/state.db exists although the state is kept in %s", p.state)
	case !errors.Is(err, os.ErrNotExist):
		p.t.Error(err)
	}
}

// stopClusterAfter runs the tests, then stops the shared PostgreSQL cluster
// if a test started it; a cluster that does not stop cleanly fails the
// binary.
type stopClusterAfter struct{ m *testing.M }

func (s stopClusterAfter) Run() int {
	// The tests' cadence processes must not write the job summary of
	// the CI job that runs them, nor send traces to its collector; a
	// test that wants either sets these.
	for _, v := range []string{"GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "TRACEPARENT",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		os.Unsetenv(v)
	}
	code := s.m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}
