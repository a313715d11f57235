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

	"github.com/cadence-dev/cadence/internal/history"
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
// agent is `echo {}`, the cheapest real agent (each item is one attempt,
// one supervisor process and one echo, and cadence's commits around them),
// or a shell that waits 100 ms and then echoes, as a real agent mostly
// waits for its model (half as many items).
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
// poll, up to 250 ms later), run-share (the attempts the run's process
// ran itself, over the items), cpu-ms/item, pg-cpu-ms/item, and
// run-stops and worker-stops: how often a process stopped with exit 1
// (see run).
//
//	go test -run '^$' -bench Workers -benchtime 1x ./cmd/cadence
func BenchmarkWorkers(b *testing.B) {
	bin := plainBinary(b)
	echo, err := exec.LookPath("echo")
	if err != nil {
		b.Fatalf("no echo on PATH: %v", err)
	}
	// The agents: echo, all CPU and no wait; and one that waits 100 ms
	// first, as a real agent mostly waits (for its model), where more
	// processes can add agents at once while the cores are not busy.
	agents := map[string]struct {
		command []string
		items   int
	}{
		"echo":      {[]string{echo, "{}"}, workersBenchItems},
		"wait100ms": {[]string{"/bin/sh", "-c", "sleep 0.1; echo {}"}, workersBenchItems / 2},
	}
	cases := []struct {
		agent     string
		engine    string
		processes int
		parallel  int
	}{
		{"echo", "sqlite", 1, 2},
		{"echo", "sqlite", 1, 8},
		{"echo", "postgres", 1, 2},
		{"echo", "postgres", 2, 2},
		{"echo", "postgres", 4, 2},
		{"echo", "postgres", 1, 8},
		{"wait100ms", "sqlite", 1, 2},
		{"wait100ms", "sqlite", 1, 8},
		{"wait100ms", "postgres", 1, 2},
		{"wait100ms", "postgres", 2, 2},
		{"wait100ms", "postgres", 4, 2},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("agent=%s/engine=%s/processes=%d/max_parallel=%d", tc.agent, tc.engine, tc.processes, tc.parallel)
		ag := agents[tc.agent]
		b.Run(name, func(b *testing.B) {
			var sum workersPass
			for b.Loop() {
				b.StopTimer()
				m := newWorkersMap(b, bin, ag.command, ag.items, tc.engine == "postgres", tc.processes, tc.parallel)
				sum.add(m.run(b))
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
			b.ReportMetric(float64(sum.runStops)/float64(b.N), "run-stops/op")
			b.ReportMetric(float64(sum.workerStops)/float64(b.N), "worker-stops/op")
		})
	}
}

// workersMap is a map of items in one checkout per
// process, on one state database.
type workersMap struct {
	bin       string
	items     int
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
	// runStops and workerStops count the processes that stopped with
	// exit 1 before the map was done.
	runStops, workerStops int
}

func (s *workersPass) add(o workersPass) {
	s.items += o.items
	s.byRun += o.byRun
	s.wall += o.wall
	s.busy += o.busy
	s.cpu += o.cpu
	s.pgCPU += o.pgCPU
	s.runStops += o.runStops
	s.workerStops += o.workerStops
}

// newWorkersMap writes a checkout per process of a project whose map step
// each runs command on n items at max_parallel parallel, on a fresh
// PostgreSQL database when shared.
func newWorkersMap(b *testing.B, bin string, command []string, n int, shared bool, processes, parallel int) *workersMap {
	b.Helper()
	wf := fmt.Sprintf(`version: 1
name: workersbench
agents:
  echo:
    preset: exec
    command: %s
    output: text
steps:
  - id: each
    agent: echo
    prompt: 'do {{ .Item.Key }}'
    retry: {max_attempts: 3, backoff: fixed, initial: 1s, jitter: none}
    map: {items: {file: items.json}, max_parallel: %d}
`, flowList(command), parallel)
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n": %d}`, i)
	}
	files := map[string]string{".cadence/workflow.yaml": wf, "items.json": "[" + strings.Join(items, ",") + "]",
		".cadence/project": sharedProjectID}
	m := &workersMap{bin: bin, items: n}
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

// run makes one pass: it starts a worker in every checkout but the first
// and waits until each is connected, then times `cadence run` in the
// first, stops the workers and checks that every item succeeded. It is
// called with the benchmark's timer stopped and leaves it so.
//
// A process that stops with exit 1 (on PostgreSQL: a commit that gave up
// after conflicting with concurrent writers again and again, see
// BenchmarkClaim) is counted and logged: the run is resumed, as its
// message says, within the clock; a worker that stopped is left stopped,
// and the other processes finish its part.
func (m *workersMap) run(b *testing.B) workersPass {
	b.Helper()
	cpu0 := childrenCPU()
	pg0 := m.serverCPU(b)
	var workers []*benchProc
	for i := 1; i < len(m.checkouts); i++ {
		workers = append(workers, m.startProc(b, i, "worker", "--poll", "50ms"))
	}
	m.waitConnections(b, len(workers))
	b.StartTimer()

	var pass workersPass
	start := time.Now()
	for cmd := "run"; ; cmd = "resume" {
		r := m.startProc(b, 0, cmd)
		<-r.done
		if r.code == 0 {
			break
		}
		if r.code != 1 || pass.runStops == 10 {
			b.Fatalf("cadence %s: exit %d\n%s", cmd, r.code, r.out)
		}
		pass.runStops++
		b.Logf("cadence %s stopped; resumed: %s", cmd, lastLine(r.out.String()))
	}
	pass.wall = time.Since(start)

	b.StopTimer()
	for i, w := range workers {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		<-w.done
		switch w.code {
		case exitInterrupted:
		case 1:
			pass.workerStops++
			b.Logf("worker %d stopped: %s", i+1, lastLine(w.out.String()))
		default:
			b.Fatalf("worker %d: exit %d\n%s", i+1, w.code, w.out)
		}
	}
	m.waitConnections(b, 0)
	pass.items = m.items
	pass.cpu, pass.pgCPU = childrenCPU()-cpu0, m.serverCPU(b)-pg0
	pass.busy, pass.byRun = m.check(b)
	return pass
}

// benchProc is a cadence process of BenchmarkWorkers.
type benchProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once it exited and code is set
	code int           // its exit code, -1 when killed by a signal
}

// startProc starts cadence with args in checkout i, and waits for it in
// the background. It is killed if it still runs when the benchmark ends.
func (m *workersMap) startProc(b *testing.B, i int, args ...string) *benchProc {
	b.Helper()
	if m.state != "" {
		args = append(args, "--state", m.state+"&application_name=bench-"+strconv.Itoa(i))
	}
	p := &benchProc{out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(m.bin, append(args, "--quiet", m.checkouts[i])...)
	p.cmd.Dir = m.checkouts[i]
	p.cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=", "CADENCE_STOREFAULT=", "CADENCE_STATE=")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -1
		}
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// lastLine returns the last line of a process's output.
func lastLine(out string) string {
	out = strings.TrimSpace(out)
	return out[strings.LastIndexByte(out, '\n')+1:]
}

// check reads the run back: every item succeeded. It returns the time
// from the first attempt's start to the last one's end, and how many
// attempts the run's own checkout ran (its local copies of their output).
func (m *workersMap) check(b *testing.B) (busy time.Duration, byRun int) {
	b.Helper()
	rep, err := history.Inspect(context.Background(), m.checkouts[0], m.state, "", false)
	if err != nil {
		b.Fatal(err)
	}
	if rep.Run.Status != "succeeded" || len(rep.Steps) != 1 || len(rep.Steps[0].Items) != m.items {
		b.Fatalf("run %s: %s with %d steps, want succeeded with %d items", rep.Run.ID, rep.Run.Status, len(rep.Steps), m.items)
	}
	var first, last time.Time
	for _, it := range rep.Steps[0].Items {
		if it.Status != "succeeded" {
			b.Fatalf("item %s: %s, want succeeded", it.Key, it.Status)
		}
		for _, a := range it.Attempts {
			if first.IsZero() || a.StartedAt.Before(first) {
				first = a.StartedAt
			}
			if a.FinishedAt != nil && a.FinishedAt.After(last) {
				last = *a.FinishedAt
			}
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

// flowList renders argv as a YAML flow sequence of quoted strings.
func flowList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
