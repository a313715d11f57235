package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// workersBenchItems is the size of BenchmarkWorkers' map, or
// CADENCE_BENCH_ITEMS for a quicker or a longer one.
var workersBenchItems = func() int {
	if n, err := strconv.Atoi(os.Getenv("CADENCE_BENCH_ITEMS")); err == nil && n > 0 {
		return n
	}
	return 400
}()

// BenchmarkWorkers measures items per second end to end with real cadence
// processes (built without the race detector) on one map step whose exec
// agent is `echo {}`, the cheapest real agent: each item is one attempt,
// one supervisor process and one echo, and cadence's commits around them.
//
// On PostgreSQL, one `cadence run` works on the map with 0, 1 or 3
// `cadence worker` processes (processes=1, 2, 4), each in a checkout of
// its own as on separate machines, all at max_parallel 2; and, to set the
// same 8 items at once in one process against 4 processes of 2, the run
// alone at max_parallel 8. For comparison in the same run, `cadence run`
// alone on SQLite at max_parallel 2 and 8. The workers are started and
// connected before the clock starts; the clock runs from the start of
// `cadence run` to its exit.
//
// What near-linear can mean here: the machine has 2 cores, and every
// process of the benchmark (the cadence processes, each item's supervisor
// and echo, and the PostgreSQL server) shares them. Adding processes
// raises the rate only while the cores are not busy, so at best 2×
// whatever rate leaves one core idle; once the cores are saturated, more
// processes add only contention. cpu-ms/item (cadence's processes, their
// supervisors and agents) and pg-cpu-ms/item (the PostgreSQL server) say
// how close to that ceiling a case is: 2,000 ms of CPU per second over
// their sum is the most items per second the machine can do.
//
// Reported: items/s (items over the run process's wall time),
// busy-items/s (items over the time from the first attempt's start to the
// last one's end, without the processes' start and the run's wait for
// the last items other processes hold, which it notices only at its next
// poll, up to a second later), run-share (the fraction of the items the
// run process ran itself), cpu-ms/item and pg-cpu-ms/item.
//
//	go test -run '^$' -bench Workers -benchtime 1x ./cmd/cadence
func BenchmarkWorkers(b *testing.B) {
	bin := plainBinary(b)
	echo, err := exec.LookPath("echo")
	if err != nil {
		b.Fatalf("no echo on PATH: %v", err)
	}
	cases := []struct {
		engine    string
		processes int
		parallel  int
	}{
		{"sqlite", 1, 2},
		{"sqlite", 1, 8},
		{"postgres", 1, 2},
		{"postgres", 2, 2},
		{"postgres", 4, 2},
		{"postgres", 1, 8},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("engine=%s/processes=%d/max_parallel=%d", tc.engine, tc.processes, tc.parallel)
		b.Run(name, func(b *testing.B) {
			var sum workersPass
			for b.Loop() {
				b.StopTimer()
				m := newWorkersMap(b, bin, echo, tc.engine == "postgres", tc.processes, tc.parallel)
				b.StartTimer()
				pass := m.run(b)
				b.StopTimer()
				sum.add(pass)
				b.StartTimer()
			}
			n := float64(sum.items)
			b.ReportMetric(n/sum.wall.Seconds(), "items/s")
			b.ReportMetric(n/sum.busy.Seconds(), "busy-items/s")
			b.ReportMetric(float64(sum.byRun)/n, "run-share")
			b.ReportMetric(msOf(sum.cpu)/n, "cpu-ms/item")
			if tc.engine == "postgres" {
				b.ReportMetric(msOf(sum.pgCPU)/n, "pg-cpu-ms/item")
			}
		})
	}
}

// workersMap is a map of workersBenchItems items in one checkout per
// process, on one state database.
type workersMap struct {
	bin       string
	state     string // a postgres:// URL, or "" for each checkout's SQLite file
	checkouts []string
	pg        *sql.DB // a connection to state, for the server's figures
}

// workersPass is what one or more passes over the map did.
type workersPass struct {
	items      int
	byRun      int
	wall, busy time.Duration
	cpu, pgCPU time.Duration
}

func (s *workersPass) add(o workersPass) {
	s.items += o.items
	s.byRun += o.byRun
	s.wall += o.wall
	s.busy += o.busy
	s.cpu += o.cpu
	s.pgCPU += o.pgCPU
}

// newWorkersMap writes a checkout per process of a project whose map step
// each runs `echo {}` on workersBenchItems items at max_parallel parallel,
// on a fresh PostgreSQL database when shared.
func newWorkersMap(b *testing.B, bin, echo string, shared bool, processes, parallel int) *workersMap {
	b.Helper()
	wf := fmt.Sprintf(`version: 1
name: workersbench
agents:
  echo:
    preset: exec
    command: [%q, "{}"]
    output: text
steps:
  - id: each
    agent: echo
    prompt: 'do {{ .Item.Key }}'
    retry: {max_attempts: 3, backoff: fixed, initial: 1s, jitter: none}
    map: {items: {file: items.json}, max_parallel: %d}
`, echo, parallel)
	items := make([]string, workersBenchItems)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n": %d}`, i)
	}
	files := map[string]string{".cadence/workflow.yaml": wf, "items.json": "[" + strings.Join(items, ",") + "]"}
	m := &workersMap{bin: bin}
	for range processes {
		dir := b.TempDir()
		writeFiles(b, dir, files)
		m.checkouts = append(m.checkouts, dir)
	}
	if shared {
		m.state = pg.NewDatabase(b)
		db, err := sql.Open("pgx", m.state)
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		b.Cleanup(func() { db.Close() })
		m.pg = db
	}
	return m
}

// start starts cadence with args in checkout i. On PostgreSQL its
// connections are named bench-I, for waitConnections.
func (m *workersMap) start(b *testing.B, i int, args ...string) (*exec.Cmd, *bytes.Buffer) {
	b.Helper()
	if m.state != "" {
		args = append(args, "--state", m.state+"&application_name=bench-"+strconv.Itoa(i))
	}
	cmd := exec.Command(m.bin, append(args, "--quiet", m.checkouts[i])...)
	cmd.Dir = m.checkouts[i]
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=", "CADENCE_STOREFAULT=", "CADENCE_STATE=")
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd, &errb
}

// run makes one pass: it starts a worker in every checkout but the first
// and waits until each is connected, then times `cadence run` in the
// first, stops the workers and checks that every item succeeded.
func (m *workersMap) run(b *testing.B) workersPass {
	b.Helper()
	b.StopTimer()
	cpu0 := childrenCPU()
	pg0 := m.serverCPU(b)
	var workers []*exec.Cmd
	for i := 1; i < len(m.checkouts); i++ {
		w, out := m.start(b, i, "worker", "--poll", "50ms")
		b.Cleanup(func() {
			if w.ProcessState == nil {
				_ = w.Process.Kill()
				_ = w.Wait()
				b.Logf("worker %d output:\n%s", i, out)
			}
		})
		workers = append(workers, w)
	}
	m.waitConnections(b, len(workers))
	b.StartTimer()

	start := time.Now()
	run, out := m.start(b, 0, "run")
	err := run.Wait()
	wall := time.Since(start)

	b.StopTimer()
	if err != nil {
		b.Fatalf("cadence run: %v\n%s", err, out)
	}
	for i, w := range workers {
		_ = w.Process.Signal(syscall.SIGTERM)
		var ee *exec.ExitError
		if err := w.Wait(); err != nil && (!errors.As(err, &ee) || ee.ExitCode() != exitInterrupted) {
			b.Fatalf("worker %d: %v", i+1, err)
		}
	}
	m.waitConnections(b, 0)
	pass := workersPass{items: workersBenchItems, wall: wall, cpu: childrenCPU() - cpu0, pgCPU: m.serverCPU(b) - pg0}
	pass.busy, pass.byRun = m.check(b)
	b.StartTimer()
	return pass
}

// check reads the run back: every item succeeded with one attempt. It
// returns the time from the first attempt's start to the last one's end,
// and how many items the run's own checkout ran.
func (m *workersMap) check(b *testing.B) (busy time.Duration, byRun int) {
	b.Helper()
	rep, err := orchestrator.Inspect(context.Background(), m.checkouts[0], m.state, "", false)
	if err != nil {
		b.Fatal(err)
	}
	if rep.Run.Status != "succeeded" || len(rep.Steps) != 1 || len(rep.Steps[0].Items) != workersBenchItems {
		b.Fatalf("run %s: %s with %d steps, want succeeded with %d items", rep.Run.ID, rep.Run.Status, len(rep.Steps), workersBenchItems)
	}
	var first, last time.Time
	for _, it := range rep.Steps[0].Items {
		if it.Status != "succeeded" || len(it.Attempts) != 1 || it.Attempts[0].FinishedAt == nil {
			b.Fatalf("item %s: %s after %d attempts, want succeeded after 1", it.Key, it.Status, len(it.Attempts))
		}
		a := it.Attempts[0]
		if first.IsZero() || a.StartedAt.Before(first) {
			first = a.StartedAt
		}
		if a.FinishedAt.After(last) {
			last = *a.FinishedAt
		}
	}
	outs, err := filepath.Glob(filepath.Join(m.checkouts[0], ".cadence", "attempts", rep.Run.ID, "each", "*", "*.out"))
	if err != nil {
		b.Fatal(err)
	}
	return last.Sub(first), len(outs)
}

// waitConnections waits until n cadence processes are connected to the
// state database (the workers are), or, for n 0, until every process's
// connections are closed (so that the server has counted their CPU).
// SQLite has none.
func (m *workersMap) waitConnections(b *testing.B, n int) {
	b.Helper()
	if m.pg == nil {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := m.pg.QueryRow(`SELECT count(DISTINCT application_name) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'bench-%'`).Scan(&got); err != nil {
			b.Fatal(err)
		}
		if n == 0 && got == 0 || n > 0 && got >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d cadence processes connected to the state database, waiting for %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serverCPU returns the CPU time that the PostgreSQL server's processes
// that have ended (each connection's backend) used: its postmaster's
// children's time. 0 on SQLite.
func (m *workersMap) serverCPU(b *testing.B) time.Duration {
	b.Helper()
	if m.pg == nil {
		return 0
	}
	var backend int
	if err := m.pg.QueryRow(`SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	f, err := procStat(backend)
	if err != nil {
		b.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(f[1])
	if f, err = procStat(postmaster); err != nil {
		b.Fatal(err)
	}
	return clockTicks(f[13]) + clockTicks(f[14]) // cutime, cstime
}

// procStat returns the fields of /proc/PID/stat after the command name:
// state, ppid, … (field 3 of proc(5) is index 0).
func procStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// clockTicks converts a /proc time in clock ticks (USER_HZ, 100 on Linux)
// to a duration.
func clockTicks(field string) time.Duration {
	n, _ := strconv.ParseInt(field, 10, 64)
	return time.Duration(n) * 10 * time.Millisecond
}

// childrenCPU returns the user and system time of this process's ended
// and waited-for descendants: the cadence processes, and through them
// their supervisors and agents.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
