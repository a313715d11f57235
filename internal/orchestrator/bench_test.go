package orchestrator_test

// Benchmarks of the run loop's own cost, as opposed to the agents' (see
// BENCHMARKS.md). Run them side by side with
//
//	go test -run '^$' -bench . -benchtime 3x ./internal/orchestrator/
//
// Every figure is reported as a custom metric in milliseconds; ns/op is the
// whole iteration and is not the figure to read.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// benchEcho is the cheapest agent that hands off valid JSON: /bin/echo {}.
// The stdout handoff is then "{}\n", accepted with no schema and no repair.
func benchEcho(b testing.TB) string {
	b.Helper()
	echo, err := exec.LookPath("echo")
	if err != nil {
		b.Fatalf("no echo on PATH: %v", err)
	}
	return echo
}

// writeBenchWorkflow writes DIR/.cadence/workflow.yaml with the given step
// ids, every step on one exec agent running `echo {}`.
func writeBenchWorkflow(b testing.TB, dir, echo string, stepIDs []string) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "version: 1\nname: bench\ndefaults:\n  agent: echo\n  retry: {max_attempts: 3, backoff: fixed, initial: 1s, jitter: none}\n")
	fmt.Fprintf(&sb, "agents:\n  echo:\n    preset: exec\n    command: [%q, \"{}\"]\n    output: text\nsteps:\n", echo)
	for _, id := range stepIDs {
		fmt.Fprintf(&sb, "  - id: %s\n    prompt: do %s\n", id, id)
	}
	cdir := filepath.Join(dir, orchestrator.CadenceDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "workflow.yaml"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

func benchStepIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i)
	}
	return ids
}

// BenchmarkAttemptBookkeeping runs a workflow of 1,000 steps whose agent is
// `echo {}` (one attempt each, accepted at once) and, in the same iteration,
// a plain os/exec loop starting the same process 1,000 times with the same
// stdin. The difference per attempt is what cadence adds around a process:
// the attempt row committed before the start (G1), the pid, the output file,
// the handoff pipeline, the envelope and the outcome committed after, each
// commit fsynced (synchronous=FULL). The disk's fsync latency is reported
// beside it (fsync-ms), since the overhead is mostly made of fsyncs.
func BenchmarkAttemptBookkeeping(b *testing.B) {
	const steps = 1000
	echo := benchEcho(b)
	ids := benchStepIDs(steps)
	ctx := context.Background()
	var cadence, spawn, fsync time.Duration
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		writeBenchWorkflow(b, dir, echo, ids)
		b.StartTimer()

		cadence += benchRun(ctx, b, dir)

		start := time.Now()
		for i := range steps {
			cmd := exec.CommandContext(ctx, echo, "{}")
			cmd.Stdin = strings.NewReader("do " + ids[i])
			out, err := cmd.Output()
			if err != nil || string(out) != "{}\n" {
				b.Fatalf("echo: %q, %v", out, err)
			}
		}
		spawn += time.Since(start)

		fsync += fsyncLatency(b, dir)
	}
	attempts := float64(b.N * steps)
	perAttempt := msOf(cadence) / attempts
	perSpawn := msOf(spawn) / attempts
	b.ReportMetric(perAttempt, "ms/attempt")
	b.ReportMetric(perSpawn, "spawn-ms/attempt")
	b.ReportMetric(perAttempt-perSpawn, "overhead-ms/attempt")
	b.ReportMetric(msOf(fsync)/float64(b.N), "fsync-ms")
}

// fsyncLatency returns the mean time of a 4 KiB write and fsync in dir, the
// unit the overhead is made of: an attempt commits three transactions
// (attempt row, pid, outcome) and writes two files atomically (output,
// envelope), each file with its directory fsynced.
func fsyncLatency(b *testing.B, dir string) time.Duration {
	b.Helper()
	const n = 50
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	start := time.Now()
	for range n {
		if _, err := f.Write(block); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / n
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchHistory describes a run to fill a store with: steps succeeded steps
// sharing attemptsEach attempts each (all failed but the last), then one
// unfinished step "last" whose single failed attempt (class schema) has a
// backoff that is already over.
type benchHistory struct {
	steps, attemptsEach int
}

func (h benchHistory) attempts() int { return h.steps*h.attemptsEach + 1 }

// benchPrompt is a prompt of a realistic length, stored with every attempt.
var benchPrompt = strings.Repeat("Read TASKS.md and reply with a JSON object listing the tasks. ", 8)

// fillBenchProject writes the workflow for h into dir and a state.db holding
// one interrupted run with h's history, through the checkpoint API in a few
// large transactions. It returns the run id.
func fillBenchProject(b testing.TB, dir, echo string, h benchHistory) string {
	b.Helper()
	ids := append(benchStepIDs(h.steps), "last")
	writeBenchWorkflow(b, dir, echo, ids)
	wf, err := workflow.Load(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, filepath.Join(dir, orchestrator.CadenceDir, "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()

	// Each attempt takes two seconds of history; the last one ends a
	// minute ago, so its backoff is over.
	t0 := time.Now().UTC().Add(-time.Duration(2*h.attempts()+60) * time.Second)
	const runID = "20260101-000000-bench0"
	run := checkpoint.NewRun(checkpoint.Run{ID: runID, WorkflowPath: ".cadence/workflow.yaml",
		WorkflowSHA256: wf.SHA256, WorkflowYAML: wf.Raw}, t0)
	rows := make([]checkpoint.Step, len(ids))
	for i, id := range ids {
		rows[i] = checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: id, Idx: i, Agent: "echo",
			MaxAttempts: 3, CostKnown: true}, t0)
	}
	if h.attemptsEach > rows[0].MaxAttempts {
		for i := range h.steps {
			rows[i].MaxAttempts = h.attemptsEach
		}
	}
	if err := store.Update(ctx, func(tx *checkpoint.Tx) error { return tx.CreateRun(run, rows) }); err != nil {
		b.Fatal(err)
	}
	diag := handoff.Diagnose(handoff.ClassSchema, `/: missing required field "tasks"`)
	details, err := json.Marshal(diag)
	if err != nil {
		b.Fatal(err)
	}
	// record starts attempt a and ends it with status, as the run loop does.
	record := func(tx *checkpoint.Tx, a checkpoint.Attempt, status checkpoint.AttemptStatus) error {
		if err := tx.StartAttempt(&a); err != nil {
			return err
		}
		return checkpointtest.EndAttempt(tx, &a, status)
	}
	at := t0
	tick := func() time.Time { at = at.Add(time.Second); return at }
	// attempt returns attempt n of a step, to be finished with status and,
	// when it failed, class schema.
	attempt := func(stepID string, n int, status checkpoint.AttemptStatus) checkpoint.Attempt {
		kind := checkpoint.KindFollowup
		if n == 1 {
			kind = checkpoint.KindInitial
		}
		start, end := tick(), tick()
		a := checkpoint.Attempt{RunID: runID, StepID: stepID, N: n, Kind: kind,
			Prompt: benchPrompt, StartedAt: start, FinishedAt: &end, SessionID: "session-" + stepID,
			OutputFile: fmt.Sprintf(".cadence/attempts/%s/%s/%d.out", runID, stepID, n), Repairs: []string{}}
		if status == checkpoint.AttemptFailed {
			a.Class, a.Error, a.DetailsJSON = string(handoff.ClassSchema), diag.Summary(), details
			a.FailedHandoff = fmt.Sprintf(".cadence/failed_handoffs/%s/%s/%d.json", runID, stepID, n)
		}
		return a
	}

	// Steps in batches, so each transaction holds about 20k attempts.
	batch := max(1, 20000/h.attemptsEach)
	for lo := 0; lo < h.steps; lo += batch {
		hi := min(h.steps, lo+batch)
		err := store.Update(ctx, func(tx *checkpoint.Tx) error {
			for i := lo; i < hi; i++ {
				s := rows[i]
				for n := 1; n <= h.attemptsEach; n++ {
					status := checkpoint.AttemptFailed
					if n == h.attemptsEach {
						status = checkpoint.AttemptSucceeded
					}
					if err := record(tx, attempt(s.ID, n, status), status); err != nil {
						return err
					}
				}
				env, err := json.Marshal(handoff.Envelope{Component: s.ID, SessionID: "session-" + s.ID, Timestamp: at,
					Status: "success", Data: json.RawMessage(`{}`),
					Metadata: handoff.EnvelopeMetadata{Attempts: h.attemptsEach, Repairs: []string{}, PreviousErrors: []string{}}})
				if err != nil {
					return err
				}
				if err := tx.StepRunning(&s, at); err != nil {
					return err
				}
				s.SessionID = "session-" + s.ID
				if err := tx.StepSucceeded(&s, env, at); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}

	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		last := rows[len(rows)-1]
		a := attempt(last.ID, 1, checkpoint.AttemptFailed)
		next := *a.FinishedAt
		delay := int64(0)
		a.NextRetryAt, a.DelayMS = &next, &delay
		if err := record(tx, a, checkpoint.AttemptFailed); err != nil {
			return err
		}
		if err := tx.StepRunning(&last, at); err != nil {
			return err
		}
		last.SessionID = a.SessionID
		if err := tx.StepWaiting(&last, &next, &delay, at); err != nil {
			return err
		}
		return tx.RunEnded(&run, checkpoint.RunInterrupted, at)
	})
	if err != nil {
		b.Fatal(err)
	}
	return runID
}

// copyBenchProject copies a filled project (workflow and database, with any
// WAL file) into a fresh directory, so each iteration resumes the same state.
func copyBenchProject(b testing.TB, from string) string {
	b.Helper()
	to := b.TempDir()
	cdir := filepath.Join(to, orchestrator.CadenceDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"workflow.yaml", "state.db", "state.db-wal"} {
		data, err := os.ReadFile(filepath.Join(from, orchestrator.CadenceDir, name))
		if os.IsNotExist(err) && name == "state.db-wal" {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := writeSynced(filepath.Join(cdir, name), data); err != nil {
			b.Fatal(err)
		}
	}
	return to
}

// writeSynced writes a file and fsyncs it. Without the fsync the copy's
// dirty pages would be flushed by the first commit of the resumed run (ext4
// writes them out with the journal), charging the copy to the resume.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// firstStartSink records when the first agent process of a resume started.
// The run loop emits attempt_started from the agent's start callback, after
// the process exists and its pid is committed: that instant is the first
// action of the resumed run.
type firstStartSink struct {
	mu    sync.Mutex
	first time.Time
}

func (s *firstStartSink) Emit(e history.Event) {
	if e.Type != history.EventAttemptStarted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
}

func (s *firstStartSink) Tick(string, string, time.Duration) {}

func (s *firstStartSink) firstStart() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// BenchmarkResumeFirstAction measures `cadence resume` from its call to the
// start of the first agent process, with 10k and 100k attempts of history:
// 100 succeeded steps carrying the history and one step waiting for a
// retry whose backoff is over. The time is taken with a Sink that notes the
// first attempt_started event (emitted once the process has started), so
// neither the agent's own run nor the rest of the resume is counted, and no
// failpoint or signal is needed. Each iteration resumes a fresh copy of the
// same state.
func BenchmarkResumeFirstAction(b *testing.B) {
	echo := benchEcho(b)
	for _, h := range []benchHistory{{steps: 100, attemptsEach: 100}, {steps: 100, attemptsEach: 1000}} {
		b.Run(fmt.Sprintf("attempts=%dk", h.attempts()/1000), func(b *testing.B) {
			template := b.TempDir()
			fillBenchProject(b, template, echo, h)
			total := resumeToFirstAction(b, template, nil)
			b.ReportMetric(msOf(total)/float64(b.N), "ms/first-action")
		})
	}
}

// resumeToFirstAction resumes a fresh copy of the project at template once
// per iteration (prepare, when set, completes each copy) and returns the
// total time from the call of Resume to the start of its first agent.
func resumeToFirstAction(b *testing.B, template string, prepare func(dir string)) time.Duration {
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		dir := copyBenchProject(b, template)
		if prepare != nil {
			prepare(dir)
		}
		sink := &firstStartSink{}
		b.StartTimer()
		start := time.Now()
		// MaxWait turns a backoff that is not over (a broken fixture) into
		// a failed iteration instead of a wait.
		res, err := orchestrator.Resume(ctx, orchestrator.Options{Dir: dir, Sink: sink, MaxWait: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != orchestrator.StatusSucceeded {
			b.Fatalf("resume ended %v: %s", res.Status, res.Message)
		}
		first := sink.firstStart()
		if first.IsZero() {
			b.Fatal("resume started no agent")
		}
		total += first.Sub(start)
	}
	return total
}

// BenchmarkInspectJSON measures `cadence inspect --json` on a run with 10k
// attempts: reading the whole history and encoding it.
func BenchmarkInspectJSON(b *testing.B) {
	echo := benchEcho(b)
	h := benchHistory{steps: 100, attemptsEach: 100}
	dir := b.TempDir()
	fillBenchProject(b, dir, echo, h)
	inspectJSON(b, dir, func(rep *history.Report) {
		if n := len(rep.Steps); n != h.steps+1 {
			b.Fatalf("report has %d steps, want %d", n, h.steps+1)
		}
	})
}

// inspectJSON times `cadence inspect --json` of the project at dir once
// per iteration, as it writes to a pipe (compact), checks each report and
// reports ms/inspect.
func inspectJSON(b *testing.B, dir string, check func(*history.Report)) {
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		rep, err := history.Inspect(ctx, dir, "", "", false)
		if err != nil {
			b.Fatal(err)
		}
		if err := json.NewEncoder(io.Discard).Encode(rep); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		check(rep)
	}
	b.ReportMetric(msOf(total)/float64(b.N), "ms/inspect")
}

// benchRun runs the workflow of dir to success and returns how long it
// took.
func benchRun(ctx context.Context, b *testing.B, dir string) time.Duration {
	b.Helper()
	start := time.Now()
	res, err := orchestrator.Run(ctx, orchestrator.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != orchestrator.StatusSucceeded {
		b.Fatalf("run ended %v: %s", res.Status, res.Message)
	}
	return time.Since(start)
}
