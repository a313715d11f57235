package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent/sim"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/pgtest"
)

// sharedRun is a run on a PostgreSQL database worked on by several cadence
// processes, each in a checkout of its own, as on separate machines; the
// sim agents of every checkout write one ledger.
type sharedRun struct {
	t         *testing.T
	ttl       string // --lease-ttl of every process
	state     string
	ledger    string
	checkouts []*project
}

// leaseTTL is short so that a dead or stopped holder is taken over
// within the test's time.
const leaseTTL = "2s"

// sharedProjectID is the .cadence/project of the checkouts of one
// project in the worker tests, as committed in its repository.
const sharedProjectID = "shared-run\n"

// newSharedRun writes n checkouts of a project whose map step fix runs
// the given items with the given scenario, on a fresh database.
func newSharedRun(t *testing.T, state string, n int, items []string, scenario string, maxParallel int) *sharedRun {
	t.Helper()
	s := &sharedRun{t: t, ttl: leaseTTL, state: state, ledger: filepath.Join(t.TempDir(), "ledger.jsonl")}
	wf := `version: 1
defaults:
  agent: sim
  retry: {max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}
agents:
  sim:
    preset: sim
    scenario: scenario.yaml
    args: [--ledger, ` + s.ledger + `]
steps:
  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    handoff: {schema: s.json}
    map: {items: {file: items.json}, key: /id, max_parallel: ` + strconv.Itoa(maxParallel) + `}
`
	// The checkouts are of one repository: they share the committed
	// project id.
	files := map[string]string{"s.json": boolSchema, "scenario.yaml": scenario, "items.json": "[" + strings.Join(items, ", ") + "]",
		".cadence/project": sharedProjectID}
	for range n {
		p := newProject(t, wf, files)
		p.state = state
		s.checkouts = append(s.checkouts, p)
	}
	return s
}

// proc is a cadence process started in the background.
type proc struct {
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{}
	res      result
}

// start starts cadence with args in checkout i, on the shared database.
func (s *sharedRun) start(i int, args ...string) *proc {
	s.t.Helper()
	p := s.checkouts[i]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	if args[0] != "inspect" {
		args = append(args, "--lease-ttl", s.ttl)
	}
	cmd := p.command(ctx, nil, args...)
	pr := &proc{cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = pr.out, pr.err
	if err := cmd.Start(); err != nil {
		cancel()
		s.t.Fatal(err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		pr.res = p.finish(cmd, err, pr.out.String(), pr.err.String())
		close(pr.done)
	}()
	s.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-pr.done
	})
	return pr
}

// worker starts `cadence worker` in checkout i.
func (s *sharedRun) worker(i int) *proc { return s.start(i, "worker", "--poll", "50ms") }

// wait waits for the process to end and returns how it ended.
func (pr *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-pr.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("cadence %v did not end\nstdout:\n%s\nstderr:\n%s", pr.cmd.Args[1:], pr.out, pr.err)
	}
	return pr.res
}

// report reads the latest run from the shared database, in-process.
func (s *sharedRun) report() history.Report {
	s.t.Helper()
	rep, err := history.Inspect(context.Background(), s.checkouts[0].dir, s.state, "", false)
	if err != nil {
		s.t.Fatalf("inspect: %v", err)
	}
	return *rep
}

// items returns the items of map step fix of the latest run, by key.
func (s *sharedRun) items() map[string]history.ItemReport {
	rep := s.report()
	out := map[string]history.ItemReport{}
	for _, st := range rep.Steps {
		if st.ID == "fix" {
			for _, it := range st.Items {
				out[it.Key] = it
			}
		}
	}
	return out
}

// executions returns the ledger's records by item key.
func (s *sharedRun) executions() map[string][]sim.LedgerRecord {
	p := &project{t: s.t, dir: filepath.Dir(s.ledger)}
	out := map[string][]sim.LedgerRecord{}
	for _, r := range p.ledger() {
		out[r.Item] = append(out[r.Item], r)
	}
	return out
}

// heldBy returns the key of an item whose agent runs under process pid
// (the sim is a descendant of the cadence process running its attempt),
// with the agent's pid, or "" when there is none.
func (s *sharedRun) heldBy(pid int, keys map[string]bool) (string, int) {
	for key, recs := range s.executions() {
		if !keys[key] {
			continue
		}
		for _, r := range recs {
			if alive(r.PID) && descends(r.PID, pid) {
				return key, r.PID
			}
		}
	}
	return "", 0
}

// descends reports whether process pid has ancestor as a parent, a
// grandparent or further up.
func descends(pid, ancestor int) bool {
	for range 16 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// The parent is the second field after the command's closing paren.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 {
			return false
		}
		ppid, _ := strconv.Atoi(fields[1])
		if ppid == ancestor {
			return true
		}
		if ppid <= 1 {
			return false
		}
		pid = ppid
	}
	return false
}

// checkExact asserts the counts across processes: every item succeeded;
// each attempt recorded in the database whose agent started is one real
// execution in the ledger, under its own number (one interrupted before
// its agent started, or before the agent wrote its line, has none); nothing executed after the attempt
// that succeeded; each execution after an item's first continued its
// session.
func (s *sharedRun) checkExact(want int) map[string]history.ItemReport {
	s.t.Helper()
	items := s.items()
	if len(items) != want {
		s.t.Fatalf("%d items, want %d", len(items), want)
	}
	execs := s.executions()
	for key, it := range items {
		if it.Status != "succeeded" {
			s.t.Errorf("item %s is %s, want succeeded", key, it.Status)
			continue
		}
		byN := map[int][]sim.LedgerRecord{}
		for _, r := range execs[key] {
			byN[r.Attempt] = append(byN[r.Attempt], r)
		}
		started := 0
		for i, a := range it.Attempts {
			if a.N != i+1 {
				s.t.Errorf("item %s: attempt %d recorded as number %d", key, i+1, a.N)
			}
			recs := byN[a.N]
			switch {
			case a.Status == "interrupted" && len(recs) == 0:
				// Stopped before its agent started, or before the agent
				// wrote its ledger line.
			case a.PID != nil && len(recs) == 1:
				if started > 0 && (!recs[0].Resume || recs[0].SessionID != execs[key][0].SessionID) {
					s.t.Errorf("item %s: attempt %d did not continue session %s (resume %v, session %s)",
						key, a.N, execs[key][0].SessionID, recs[0].Resume, recs[0].SessionID)
				}
				started++
			default:
				s.t.Errorf("item %s: attempt %d (%s, pid %v) has %d executions in the ledger", key, a.N, a.Status, a.PID, len(recs))
			}
		}
		if started != len(execs[key]) {
			s.t.Errorf("item %s: %d executions in the ledger, %d started attempts recorded", key, len(execs[key]), started)
		}
		if last := it.Attempts[len(it.Attempts)-1]; last.Status != "succeeded" && last.Status != "adopted" {
			s.t.Errorf("item %s: its last attempt is %s: something ran after it succeeded", key, last.Status)
		}
	}
	return items
}

// ranIn counts, per checkout, the attempts whose transcript is there: the
// local copy of the process that ran them.
func (s *sharedRun) ranIn(runID string) []int {
	counts := make([]int, len(s.checkouts))
	for i, p := range s.checkouts {
		outs, _ := filepath.Glob(filepath.Join(p.dir, ".cadence", "attempts", runID, "fix", "*", "*.out"))
		counts[i] = len(outs)
	}
	return counts
}

func slowItems(n int) (keys map[string]bool, items []string, scenario string) {
	keys = map[string]bool{}
	for i := 1; i <= n; i++ {
		k := fmt.Sprintf("s%d", i)
		keys[k] = true
		items = append(items, `{"id": "`+k+`"}`)
		// A first attempt long enough to stop its process in, then a
		// quick second one.
		scenario += "  fix/" + k + ": [{sleep: 4s, answer: '{\"ok\": true}'}, {answer: '{\"ok\": true}'}]\n"
	}
	return keys, items, scenario
}

// Three processes, each in a checkout of its own, share a map of 50 items
// on one database: the run and two workers. One worker is killed with
// SIGKILL while it runs an item; its agent dies with it (G6), and once
// its lease expires another process claims the item, settles the killed
// attempt as interrupted, and continues the item's session. Every count
// is exact and nothing runs after it succeeded.
func TestWorkersShareAMap(t *testing.T) {
	slow, items, scenario := slowItems(4)
	for i := 5; i <= 50; i++ {
		items = append(items, fmt.Sprintf(`{"id": "i%02d"}`, i))
	}
	// One item needs a follow-up, which may run in another process than
	// its first attempt.
	scenario = "steps:\n" + scenario + "  fix/i07: [{answer: '{\"nope\": 1}'}, {answer: '{\"ok\": true}'}]\n" +
		"  fix: [{sleep: 100ms, answer: '{\"ok\": true}'}]\n"
	s := newSharedRun(t, pg.NewDatabase(t), 3, items, scenario, 2)

	doomed := s.worker(2)
	run := s.start(0, "run")
	waitFor(t, "the run to exist", func() bool { return len(s.executions()) > 0 })
	// Another machine follows the run through the database alone.
	follow := s.start(1, "inspect", "--follow")
	var key string
	var agent int
	waitFor(t, "the doomed worker to run a slow item", func() bool {
		key, agent = s.heldBy(doomed.cmd.Process.Pid, slow)
		return key != ""
	})
	_ = doomed.cmd.Process.Signal(syscall.SIGKILL)
	if r := doomed.wait(t); r.signal != syscall.SIGKILL {
		t.Fatalf("worker was not killed: %+v", r)
	}
	waitFor(t, "the killed worker's agent to die with it (G6)", func() bool { return !alive(agent) })
	helper := s.worker(1)

	run.wait(t).exits(t, 0)
	fr := follow.wait(t)
	fr.exits(t, 0)
	if !hasLine(fr.stdout, "fix["+key+"]", "attempt 2 succeeded") {
		t.Errorf("inspect --follow did not show item %s's second attempt:\n%s", key, fr.stdout)
	}
	_ = helper.cmd.Process.Signal(syscall.SIGTERM)
	r := helper.wait(t)
	r.exits(t, 3)
	if !strings.Contains(r.stderr, "worker stopped") {
		t.Errorf("the worker did not say it stopped:\n%s", r.stderr)
	}

	got := s.checkExact(50)
	killed := got[key]
	if len(killed.Attempts) != 2 || killed.Attempts[0].Status != "interrupted" || killed.Attempts[0].Class != "interrupted" {
		t.Errorf("item %s of the killed worker: attempts %+v, want attempt 1 interrupted and counted, then 2", key, killed.Attempts)
	}
	if f := got["i07"]; len(f.Attempts) != 2 || f.Attempts[0].Class != "schema" {
		t.Errorf("item i07: attempts %+v, want a schema failure then a follow-up", f.Attempts)
	}
	if !hasLine(run.out.String()+helper.out.String(), "fix["+key+"]", "taken over from pid "+strconv.Itoa(doomed.cmd.Process.Pid)) {
		t.Errorf("neither the run nor the helper said it took item %s over from the killed worker\nrun:\n%s\nhelper:\n%s", key, run.out, helper.out)
	}
	ran := s.ranIn(s.report().Run.ID)
	t.Logf("attempts run per checkout (run, helper, killed): %v", ran)
	if ran[0] == 0 || ran[1] == 0 {
		t.Errorf("attempts run per checkout %v: the run and the helping worker should both have run items", ran)
	}
}

// A worker stopped (SIGSTOP) past its lease loses its item to another
// process; when it continues (SIGCONT) its commits are refused, it says
// so, its agent is no longer running, and no count changes.
func TestStoppedWorkerIsFenced(t *testing.T) {
	slow, items, scenario := slowItems(4)
	for i := 5; i <= 8; i++ {
		items = append(items, fmt.Sprintf(`{"id": "i%02d"}`, i))
	}
	scenario = "steps:\n" + scenario + "  fix: [{answer: '{\"ok\": true}'}]\n"
	s := newSharedRun(t, pg.NewDatabase(t), 2, items, scenario, 2)

	stopped := s.worker(1)
	run := s.start(0, "run")
	var key string
	var agent int
	waitFor(t, "the worker to run a slow item", func() bool {
		key, agent = s.heldBy(stopped.cmd.Process.Pid, slow)
		return key != ""
	})
	if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The run's process takes the item over once the lease expired.
	run.wait(t).exits(t, 0)
	before := s.items()[key]
	if before.Status != "succeeded" || len(before.Attempts) != 2 || before.Attempts[0].Status != "interrupted" {
		t.Fatalf("item %s taken over: %+v, want attempt 1 interrupted, attempt 2 succeeded", key, before)
	}
	execsBefore := len(s.executions()[key])

	if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !hasLine(stopped.out.String(), "fix["+key+"]", "LEASE LOST: another process holds it now") {
		if time.Now().After(deadline) {
			t.Fatalf("the continued worker did not say it lost the lease of item %s; it wrote:\n%s\n%s", key, stopped.out, stopped.err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitFor(t, "the stopped worker's agent to be gone", func() bool { return !alive(agent) })
	_ = stopped.cmd.Process.Signal(syscall.SIGTERM)
	stopped.wait(t).exits(t, 3)

	after := s.items()[key]
	if len(after.Attempts) != len(before.Attempts) || after.Status != before.Status {
		t.Errorf("item %s changed after the fenced worker continued: %+v, was %+v", key, after, before)
	}
	if n := len(s.executions()[key]); n != execsBefore {
		t.Errorf("item %s: %d executions after the fenced worker continued, %d before", key, n, execsBefore)
	}
	s.checkExact(len(items))
}

// On a shared database the project lock G7 is a lease on the run: while
// a live process runs it, a second run or resume of it, from any
// checkout, exits 4 naming that process's pid and host; inspect reads on.
// Once the holder is dead (kill -9 on this machine), a resume takes the
// run and its items over at once, without waiting for their leases to
// expire: here they would last ten minutes, far beyond the test's wait.
func TestSharedRunIsHeldByALease(t *testing.T) {
	_, items, scenario := slowItems(2)
	scenario = "steps:\n" + scenario
	s := newSharedRun(t, pg.NewDatabase(t), 2, items, scenario, 2)
	s.ttl = "10m"
	first := s.start(0, "run")
	waitFor(t, "the run's agents to start", func() bool { return len(s.executions()) == 2 })

	host, _ := os.Hostname()
	held := fmt.Sprintf("is held by another cadence process (pid %d on host %s)", first.cmd.Process.Pid, host)
	for _, args := range [][]string{{"resume"}, {"run"}, {"run", "--new"}} {
		r := s.start(1, args...).wait(t)
		r.exits(t, 4)
		if !strings.Contains(r.stderr, held) {
			t.Errorf("cadence %v: stderr does not say %q:\n%s", args, held, r.stderr)
		}
	}
	if st := s.report().Run.Status; st != "running" {
		t.Errorf("inspect while the run is held: %s, want running", st)
	}

	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	if r := first.wait(t); r.signal != syscall.SIGKILL {
		t.Fatalf("run was not killed: %+v", r)
	}
	s.start(1, "resume").wait(t).exits(t, 0)
	s.checkExact(2)
}

// SIGTERM stops a worker cleanly: its items' agents are stopped, their
// attempts recorded as interrupted (not counted: stopping a worker is not
// the agent's failure, G5), their leases released,
// and it exits 3; another process takes the items at once, without
// waiting for leases that would last ten minutes.
func TestWorkerStopsCleanlyOnSIGTERM(t *testing.T) {
	slow, items, scenario := slowItems(4)
	scenario = "steps:\n" + scenario
	s := newSharedRun(t, pg.NewDatabase(t), 2, items, scenario, 2)
	s.ttl = "10m"
	w := s.worker(1)
	run := s.start(0, "run")
	var key string
	waitFor(t, "the worker to run a slow item", func() bool {
		key, _ = s.heldBy(w.cmd.Process.Pid, slow)
		return key != ""
	})
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	r := w.wait(t)
	r.exits(t, 3)
	if !strings.Contains(r.stderr, "the items it held were released") {
		t.Errorf("the worker did not say it released its items:\n%s", r.stderr)
	}
	run.wait(t).exits(t, 0)
	got := s.checkExact(4)
	if a := got[key].Attempts; len(a) != 2 || a[0].Status != "interrupted" || !a[0].Uncounted {
		t.Errorf("item %s of the stopped worker: %+v, want attempt 1 interrupted and not counted, then 2", key, a)
	}
}

// The database restarts (pg_ctl restart) while the run and a worker are
// in the middle of a map: they wait for it and go on, or stop so that a
// resume continues; either way nothing is lost and every count is exact.
func TestDatabaseRestartUnderWorkers(t *testing.T) {
	ctx := context.Background()
	c, err := pgtest.Start(ctx) // a cluster of its own, to restart
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	state, _, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for i := 1; i <= 30; i++ {
		items = append(items, fmt.Sprintf(`{"id": "i%02d"}`, i))
	}
	scenario := "steps:\n  fix: [{sleep: 200ms, answer: '{\"ok\": true}'}]\n"
	s := newSharedRun(t, state, 2, items, scenario, 2)

	w := s.worker(1)
	run := s.start(0, "run")
	waitFor(t, "a few items to be done", func() bool {
		n := 0
		for _, recs := range s.executions() {
			n += len(recs)
		}
		return n >= 6
	})
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r := run.wait(t); r.code != 0 {
		// Stopped resumably: a resume finishes the run.
		t.Logf("the run stopped during the restart (exit %d):\n%s", r.code, r.stderr)
		s.start(0, "resume").wait(t).exits(t, 0)
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	if r := w.wait(t); r.code != 3 && r.code != 1 {
		t.Errorf("worker after the restart: exit %d, want 3 (stopped by SIGTERM) or 1 (stopped resumably)\n%s", r.code, r.stderr)
	}
	if st := s.report().Run.Status; st != "succeeded" {
		t.Fatalf("run is %s, want succeeded", st)
	}
	s.checkExact(30)
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// hasLine reports whether one line of out contains every part, in order.
func hasLine(out string, parts ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := line, true
		for _, part := range parts {
			i := strings.Index(rest, part)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(part):]
		}
		if ok {
			return true
		}
	}
	return false
}

// TestWorkerRunsAStepOfTheGraph: on a shared database a worker claims a
// step of the graph, not only map items (SPEC 16). The run's process may
// run one step at a time (max_parallel_steps: 1), and steps a and b each
// wait for the other to have started: the run ends only if another
// process ran one of them, and c, which needs both, runs after them.
func TestWorkerRunsAStepOfTheGraph(t *testing.T) {
	shared := t.TempDir()
	wf := `version: 1
max_parallel_steps: 1
defaults: {retry: {max_attempts: 1}}
steps:
  - {id: a, needs: [], run: [sh, wait.sh, ` + shared + `/a, ` + shared + `/b]}
  - {id: b, needs: [], run: [sh, wait.sh, ` + shared + `/b, ` + shared + `/a]}
  - {id: c, needs: [a, b], run: [sh, wait.sh, ` + shared + `/c, ` + shared + `/c]}
`
	wait := `# wait.sh ME OTHER: say where ME runs, then wait up to 60 s for OTHER to have started.
echo "$CADENCE_PROJECT_DIR" > "$1.ran"
touch "$1.started"
i=0
while [ ! -e "$2.started" ]; do
  i=$((i+1))
  [ "$i" -gt 600 ] && { echo "$2 never started" >&2; exit 1; }
  sleep 0.1
done
`
	s := &sharedRun{t: t, ttl: leaseTTL, state: pg.NewDatabase(t)}
	for range 2 {
		p := newProject(t, wf, map[string]string{"wait.sh": wait, ".cadence/project": sharedProjectID})
		p.state = s.state
		s.checkouts = append(s.checkouts, p)
	}
	// The worker starts once the run's process holds a or b: started
	// first, it could claim both before the run's process claims either
	// (it runs several steps at once), and the steps would still run in
	// one process.
	run := s.start(0, "run")
	waitFor(t, "the run's process to start a or b", func() bool {
		for _, id := range []string{"a", "b"} {
			if _, err := os.Stat(filepath.Join(shared, id+".started")); err == nil {
				return true
			}
		}
		return false
	})
	worker := s.worker(1)
	run.wait(t).exits(t, 0)
	_ = worker.cmd.Process.Signal(syscall.SIGTERM)
	worker.wait(t).exits(t, 3)

	ran := map[string]string{}
	for _, id := range []string{"a", "b", "c"} {
		b, err := os.ReadFile(filepath.Join(shared, id+".ran"))
		if err != nil {
			t.Fatalf("step %s: %v", id, err)
		}
		ran[id] = strings.TrimSpace(string(b))
	}
	if ran["a"] == ran["b"] {
		t.Errorf("a and b both ran in %s: the worker claimed no step of the graph", ran["a"])
	}
	rep := s.report()
	for _, id := range []string{"a", "b", "c"} {
		if st := step(rep, id); st.Status != "succeeded" || len(st.Attempts) != 1 {
			t.Errorf("step %s: %s with %d attempts, want succeeded with 1", id, st.Status, len(st.Attempts))
		}
	}
	// Each step's lease was released by the commit that ended the step
	// (its holder only stopped renewing it): none is left held.
	st, err := checkpoint.OpenReadOnly(t.Context(), s.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.View(t.Context(), func(tx *checkpoint.Tx) error {
		held, err := tx.HeldLeases(rep.Run.ID)
		for _, l := range held {
			if l.StepID != "" {
				t.Errorf("the lease of step %s is still held by pid %d (epoch %d) after the run", l.StepID, l.PID, l.Epoch)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
