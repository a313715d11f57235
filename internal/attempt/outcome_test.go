package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// fixedClock is a wall clock that stands still.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// eventLog keeps the types of the events a run is told, in order.
type eventLog struct {
	mu    sync.Mutex
	types []string
}

func (l *eventLog) Emit(e history.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.types = append(l.types, e.Type)
}

func (l *eventLog) Tick(string, string, time.Duration) {}

// outcomeFixture is one step of a run in a real SQLite state file, with
// its attempt N running: the state an attempt ends from.
type outcomeFixture struct {
	r      *Runner
	in     *Instance
	row    *checkpoint.Attempt
	events *eventLog
	now    time.Time
}

// newOutcomeFixture stores a run whose step ws (on agent "a", max
// attempts 3) is in status stepStatus, with the attempts before (each
// started and ended failed), and attempt len(before)+1 of kind running.
func newOutcomeFixture(t *testing.T, ws *workflow.Step, stepStatus checkpoint.StepStatus, before []checkpoint.Attempt, kind string) *outcomeFixture {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".cadence"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(ctx, filepath.Join(dir, ".cadence", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	run := checkpoint.NewRun(checkpoint.Run{ID: "r1", WorkflowPath: "w.yaml", WorkflowSHA256: "0", WorkflowYAML: []byte("version: 1\n")}, t0)
	step := checkpoint.NewStep(checkpoint.Step{RunID: "r1", ID: ws.ID, Agent: "a", MaxAttempts: 3, SessionID: "s-1"}, t0)
	row := checkpoint.Attempt{RunID: "r1", StepID: ws.ID, N: len(before) + 1, Kind: kind, Agent: "a", SessionID: "s-1",
		Prompt: "do it", StartedAt: t0.Add(time.Minute)}
	if kind == checkpoint.KindHelp {
		row.Agent, row.SessionID = "advisor", "s-advisor"
	}
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
			return err
		}
		if err := checkpointtest.TakeStep(tx, &step, stepStatus, t0); err != nil {
			return err
		}
		for _, a := range before {
			a.RunID, a.StepID, a.Agent, a.StartedAt = "r1", ws.ID, "a", t0
			a.FinishedAt = &t0
			if err := tx.StartAttempt(&a); err != nil {
				return err
			}
			if err := tx.AttemptFailed(&a); err != nil {
				return err
			}
		}
		return tx.StartAttempt(&row)
	})
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	now := t0.Add(2 * time.Minute)
	wf := &workflow.Workflow{Agents: map[string]*workflow.Agent{"a": {Name: "a"}, "advisor": {Name: "advisor"}}, Steps: []*workflow.Step{ws}}
	r := &Runner{Dir: dir, Workflow: wf, Store: store, Clock: fixedClock{now}, Rand: func() float64 { return 0.5 },
		Sink: events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.init()
	return &outcomeFixture{r: r, in: &Instance{Run: &run, Step: ws}, row: &row, events: events, now: now}
}

// try is the fixture's running attempt as the normal path holds it.
func (f *outcomeFixture) try(t *testing.T) *try {
	t.Helper()
	tr := &try{r: f.r, in: f.in, row: f.row, plan: attemptPlan{agent: "a", kind: f.row.Kind, prompt: f.row.Prompt, sessionID: f.row.SessionID}, max: 3}
	err := f.r.Store.View(t.Context(), func(tx *checkpoint.Tx) error {
		var err error
		tr.counted, err = tx.UnitCountCounted(f.in.Unit())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// committed is what the state file holds of the unit once its attempt
// ended.
type committed struct {
	attempt   checkpoint.AttemptStatus // the ended attempt's status
	class     string
	uncounted bool
	step      checkpoint.StepStatus // the step's status
	deadline  bool                  // the step has a next_retry_at
	fresh     bool                  // its next attempt starts a fresh session
	counted   int                   // attempts counted against max_attempts
}

func (f *outcomeFixture) committed(t *testing.T) (committed, *checkpoint.Step) {
	t.Helper()
	var (
		c committed
		s *checkpoint.Step
	)
	err := f.r.Store.View(context.Background(), func(tx *checkpoint.Tx) error {
		a, err := tx.UnitAttempt(f.in.Unit(), f.row.N)
		if err != nil {
			return err
		}
		if s, err = tx.Unit(f.in.Unit()); err != nil {
			return err
		}
		c = committed{attempt: a.Status(), class: a.Class, uncounted: a.Uncounted, step: s.Status(), deadline: s.NextRetryAt != nil, fresh: s.FreshSession}
		c.counted, err = tx.UnitCountCounted(f.in.Unit())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// told is how an ending reaches the run loop: the outcome Run returns.
type told int

const (
	toldNothing     told = iota // Outcome{}, nil: run the instance again
	toldDone                    // Outcome.Done
	toldFailed                  // Outcome.Failed
	toldInterrupted             // ErrInterrupted: the run stops, resumable
	toldLogin                   // *LoginError: the run stops until someone logs in
)

func toldOf(t *testing.T, out Outcome, err error) told {
	t.Helper()
	var le *LoginError
	switch {
	case errors.Is(err, ErrInterrupted):
		return toldInterrupted
	case errors.As(err, &le):
		return toldLogin
	case err != nil:
		t.Fatalf("the ending failed: %v", err)
	case out.Done:
		return toldDone
	case out.Failed:
		return toldFailed
	}
	return toldNothing
}

// failed is n earlier counted attempts off their schema, which the fixture ends failed.
func failed(n int) []checkpoint.Attempt {
	var out []checkpoint.Attempt
	for i := 1; i <= n; i++ {
		out = append(out, checkpoint.Attempt{N: i, Kind: checkpoint.KindInitial, Class: string(handoff.ClassSchema)})
	}
	return out
}

// TestEndingOutcome ends an attempt of the normal path one way per row,
// judged from what the agent did, and reads back what was committed and
// what the run was told: SPEC §6.1 (a retryable failure waits for its
// committed deadline, the last one fails the step), §7 G5 (a stop by
// cadence does not count), §17 (a usage limit waits for its reset
// uncounted, a failed login stops the run uncounted), §6.3 (a help
// request waits for its advisor's round).
func TestEndingOutcome(t *testing.T) {
	reset := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	help := &workflow.OnHelp{Agent: "advisor", MaxRounds: 1}
	for _, tt := range []struct {
		name   string
		onHelp *workflow.OnHelp
		before int // failed counted attempts before this one
		res    agent.Result
		want   committed
		told   told
		events []string
	}{
		{name: "succeeded", res: agent.Result{Text: []byte(`{"ok": true}`)},
			want: committed{attempt: checkpoint.AttemptSucceeded, step: checkpoint.StepSucceeded, counted: 1}, told: toldDone,
			events: []string{history.EventAttemptFinished, history.EventStepSucceeded}},
		{name: "succeeded on the last attempt", before: 2, res: agent.Result{Text: []byte(`{"ok": true}`)},
			want: committed{attempt: checkpoint.AttemptSucceeded, step: checkpoint.StepSucceeded, counted: 3}, told: toldDone,
			events: []string{history.EventAttemptFinished, history.EventStepSucceeded}},
		{name: "retry: off its schema with attempts left", res: agent.Result{Text: []byte(`{"ok": "yes"}`)},
			want:   committed{attempt: checkpoint.AttemptFailed, class: "schema", step: checkpoint.StepWaiting, deadline: true, counted: 1},
			events: []string{history.EventAttemptFinished}},
		{name: "retry: a timeout, in a fresh session", res: agent.Result{Stop: agent.StopTimeout, ExitCode: -1},
			want:   committed{attempt: checkpoint.AttemptFailed, class: "timeout", step: checkpoint.StepWaiting, deadline: true, fresh: true, counted: 1},
			events: []string{history.EventAttemptFinished}},
		{name: "failed: off its schema on the last attempt", before: 2, res: agent.Result{Text: []byte(`{"ok": "yes"}`)},
			want: committed{attempt: checkpoint.AttemptFailed, class: "schema", step: checkpoint.StepFailed, counted: 3}, told: toldFailed,
			events: []string{history.EventAttemptFinished, history.EventStepFailed}},
		{name: "failed: a permanent failure on the first attempt", res: agent.Result{ExitCode: 2, Permanent: true},
			want: committed{attempt: checkpoint.AttemptFailed, class: "exit_nonzero", step: checkpoint.StepFailed, counted: 1}, told: toldFailed,
			events: []string{history.EventAttemptFinished, history.EventStepFailed}},
		{name: "usage limit: uncounted, waits for the reset even after the last attempt", before: 2,
			res:    agent.Result{ExitCode: 1, IsError: true, Transient: true, UsageLimit: true, ResetAt: reset},
			want:   committed{attempt: checkpoint.AttemptFailed, class: "transient", uncounted: true, step: checkpoint.StepWaiting, deadline: true, counted: 2},
			events: []string{history.EventAttemptFinished}},
		{name: "help: waits for the advisor's round", onHelp: help, res: agent.Result{Help: true, HelpContext: []byte(`{"q": 1}`)},
			want:   committed{attempt: checkpoint.AttemptFailed, class: "help", step: checkpoint.StepWaiting, counted: 1},
			events: []string{history.EventAttemptFinished}},
		{name: "failed: help asked with no on_help", res: agent.Result{Help: true},
			want: committed{attempt: checkpoint.AttemptFailed, class: "help", step: checkpoint.StepFailed, counted: 1}, told: toldFailed,
			events: []string{history.EventAttemptFinished, history.EventStepFailed}},
		{name: "login needed: uncounted, the run stops", before: 1, res: agent.Result{ExitCode: 1, IsError: true, Auth: true, ErrorMessage: "401"},
			want: committed{attempt: checkpoint.AttemptFailed, class: "auth", uncounted: true, step: checkpoint.StepPending, counted: 1}, told: toldLogin,
			events: []string{history.EventAttemptFinished}},
		{name: "stopped by cadence: uncounted, the step runs again", before: 2, res: agent.Result{Stop: agent.StopInterrupted, ExitCode: -1},
			want: committed{attempt: checkpoint.AttemptInterrupted, class: "interrupted", uncounted: true, step: checkpoint.StepPending, counted: 2},
			told: toldInterrupted, events: []string{history.EventAttemptFinished}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := judgeStep(t, tt.onHelp, false)
			ws.Retry = testStep(nil).Retry
			f := newOutcomeFixture(t, ws, checkpoint.StepRunning, failed(tt.before), checkpoint.KindInitial)
			tr := f.try(t)
			res := tt.res
			j := f.r.judge(ws, &res, nil, handoffSource{agent: "a"})
			out, err := tr.commit(t.Context(), &res, j)
			if got := toldOf(t, out, err); got != tt.told {
				t.Errorf("the run was told %d (%+v, %v), want %d", got, out, err, tt.told)
			}
			got, s := f.committed(t)
			if got != tt.want {
				t.Errorf("committed %+v\nwant      %+v", got, tt.want)
			}
			if !slices.Equal(f.events.types, tt.events) {
				t.Errorf("events %v, want %v", f.events.types, tt.events)
			}
			if tt.want.step == checkpoint.StepSucceeded {
				var env handoff.Envelope
				if err := json.Unmarshal(s.HandoffJSON, &env); err != nil || string(env.Data) != `{"ok":true}` || env.Metadata.Attempts != tt.want.counted {
					t.Errorf("stored envelope %s (%v)", s.HandoffJSON, err)
				}
			}
			if tt.want.class == "transient" && !s.NextRetryAt.Equal(reset) {
				t.Errorf("a usage limit resetting at %s waits until %s", reset, s.NextRetryAt)
			}
		})
	}
}

// TestSettleOutcome settles an attempt a crash left running (G5): with
// its envelope or a valid file handoff it is adopted and the step
// succeeds; with neither it is interrupted, counts, and the step runs
// again (pending). What the run is told is an attempt_settled event.
func TestSettleOutcome(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fileStep bool
		land     func(f *outcomeFixture) error // what landed before the crash
		want     committed
	}{
		{name: "nothing landed: interrupted, counted", land: func(*outcomeFixture) error { return nil },
			want: committed{attempt: checkpoint.AttemptInterrupted, class: "interrupted", step: checkpoint.StepPending, counted: 1}},
		{name: "its envelope was written: adopted", land: func(f *outcomeFixture) error {
			return f.r.WriteEnvelope(f.in, handoff.Envelope{Component: "fix", Timestamp: f.now, Status: "success", Data: json.RawMessage(`{"ok": true}`)})
		}, want: committed{attempt: checkpoint.AttemptAdopted, step: checkpoint.StepSucceeded, counted: 1}},
		{name: "an envelope of an earlier attempt: interrupted", land: func(f *outcomeFixture) error {
			return f.r.WriteEnvelope(f.in, handoff.Envelope{Component: "fix", Timestamp: f.row.StartedAt.Add(-time.Second), Status: "success", Data: json.RawMessage(`{"ok": true}`)})
		}, want: committed{attempt: checkpoint.AttemptInterrupted, class: "interrupted", step: checkpoint.StepPending, counted: 1}},
		{name: "a valid file handoff: adopted", fileStep: true, land: func(f *outcomeFixture) error {
			return writeHandoff(f, `{"ok": true}`)
		}, want: committed{attempt: checkpoint.AttemptAdopted, step: checkpoint.StepSucceeded, counted: 1}},
		{name: "a file handoff off its schema: interrupted", fileStep: true, land: func(f *outcomeFixture) error {
			return writeHandoff(f, `{"ok": "yes"}`)
		}, want: committed{attempt: checkpoint.AttemptInterrupted, class: "interrupted", step: checkpoint.StepPending, counted: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := judgeStep(t, nil, false)
			if tt.fileStep {
				ws.Handoff.From, ws.Handoff.Path = "file", "out/h.json"
			}
			f := newOutcomeFixture(t, ws, checkpoint.StepRunning, nil, checkpoint.KindInitial)
			if err := tt.land(f); err != nil {
				t.Fatal(err)
			}
			if err := f.r.Settle(t.Context(), f.in, f.row, false); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.committed(t); got != tt.want {
				t.Errorf("committed %+v\nwant      %+v", got, tt.want)
			}
			if want := []string{history.EventAttemptSettled}; !slices.Equal(f.events.types, want) {
				t.Errorf("events %v, want %v", f.events.types, want)
			}
		})
	}
}

func writeHandoff(f *outcomeFixture, text string) error {
	path := filepath.Join(f.r.Dir, "out", "h.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// TestHelpRoundOutcome ends an advisor's round (SPEC §6.3) one way per
// row: advice is stored on the step for its next attempt and the round
// counted in help_rounds; a failed advisor fails the step; a round
// cadence stopped stops the run and leaves the step as it was, so the
// round is asked again.
func TestHelpRoundOutcome(t *testing.T) {
	for _, tt := range []struct {
		name       string
		res        agent.Result
		want       committed
		advice     string
		helpRounds int
		told       told
		events     []string
	}{
		{name: "advice given", res: agent.Result{Text: []byte("  use sqlite\n")},
			want:   committed{attempt: checkpoint.AttemptSucceeded, step: checkpoint.StepWaiting, counted: 1},
			advice: "use sqlite", helpRounds: 1, events: []string{history.EventAttemptFinished}},
		{name: "no advice", res: agent.Result{Text: []byte(" \n")},
			want: committed{attempt: checkpoint.AttemptFailed, class: "empty", step: checkpoint.StepFailed, counted: 1},
			told: toldNothing, events: []string{history.EventAttemptFinished, history.EventStepFailed}},
		{name: "the advisor failed", res: agent.Result{ExitCode: 1, ErrorMessage: "boom"},
			want:   committed{attempt: checkpoint.AttemptFailed, class: "exit_nonzero", step: checkpoint.StepFailed, counted: 1},
			events: []string{history.EventAttemptFinished, history.EventStepFailed}},
		{name: "stopped by cadence", res: agent.Result{Stop: agent.StopInterrupted, ExitCode: -1},
			want: committed{attempt: checkpoint.AttemptInterrupted, class: "interrupted", step: checkpoint.StepWaiting, counted: 1},
			told: toldInterrupted, events: []string{history.EventAttemptFinished}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := judgeStep(t, &workflow.OnHelp{Agent: "advisor", MaxRounds: 2}, false)
			request := []checkpoint.Attempt{{N: 1, Kind: checkpoint.KindInitial, Class: string(handoff.ClassHelp), HelpContext: `{"q": 1}`}}
			f := newOutcomeFixture(t, ws, checkpoint.StepWaiting, request, checkpoint.KindHelp)
			tr := &try{r: f.r, in: f.in, row: f.row, plan: attemptPlan{agent: "a", kind: checkpoint.KindHelp, prompt: f.row.Prompt, sessionID: f.row.SessionID}, round: 1}
			res := tt.res
			err := tr.commitHelp(t.Context(), &res, nil)
			if got := toldOf(t, Outcome{}, err); got != tt.told {
				t.Errorf("the run was told %d (%v), want %d", got, err, tt.told)
			}
			got, s := f.committed(t)
			if got != tt.want {
				t.Errorf("committed %+v\nwant      %+v", got, tt.want)
			}
			if s.Advice != tt.advice || s.HelpRounds != tt.helpRounds {
				t.Errorf("advice %q after %d rounds, want %q after %d", s.Advice, s.HelpRounds, tt.advice, tt.helpRounds)
			}
			if !slices.Equal(f.events.types, tt.events) {
				t.Errorf("events %v, want %v", f.events.types, tt.events)
			}
		})
	}
}

// TestJudgeAdvice judges an advisor's answer: its text, trimmed and cut at
// maxAdviceBytes, is the advice; no text, a failure, a start failure or a
// stop is a round without advice, with the class its row records.
func TestJudgeAdvice(t *testing.T) {
	long := strings.Repeat("a", maxAdviceBytes+10)
	for _, tt := range []struct {
		name   string
		res    agent.Result
		runErr error
		advice string
		class  string
	}{
		{name: "advice", res: agent.Result{Text: []byte("\n use sqlite \n")}, advice: "use sqlite"},
		{name: "advice over the bound is cut", res: agent.Result{Text: []byte(long)}, advice: long[:maxAdviceBytes]},
		{name: "advice is cut on a character's boundary", res: agent.Result{Text: []byte("x" + strings.Repeat("é", maxAdviceBytes))},
			advice: "x" + strings.Repeat("é", maxAdviceBytes/2-1)},
		{name: "blank", res: agent.Result{Text: []byte(" \t\n")}, class: string(handoff.ClassEmpty)},
		{name: "a non-zero exit", res: agent.Result{ExitCode: 2, Text: []byte("use sqlite")}, class: string(handoff.ClassExitNonzero)},
		{name: "a failed turn", res: agent.Result{IsError: true, Text: []byte("use sqlite")}, class: string(handoff.ClassExitNonzero)},
		{name: "not started", runErr: errors.New("exec: advisor: not found"), class: string(handoff.ClassExitNonzero)},
		{name: "timed out", res: agent.Result{Stop: agent.StopTimeout}, class: string(agent.StopTimeout)},
		{name: "stopped by cadence", res: agent.Result{Stop: agent.StopInterrupted}, class: string(handoff.ClassInterrupted)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{}
			var a checkpoint.Attempt
			res := tt.res
			advice, ok := r.judgeAdvice(&a, &res, tt.runErr)
			if advice != tt.advice || ok != (tt.class == "") || a.Class != tt.class {
				t.Errorf("advice %.20q ok %v class %q; want %.20q class %q", advice, ok, a.Class, tt.advice, tt.class)
			}
			if !ok && a.Error == "" {
				t.Error("a round without advice says nothing of why")
			}
		})
	}
}

// An agent the launcher could not start leaves no result at all: the
// attempt is judged and committed from the error alone, a counted
// exit_nonzero retried in the session, or, when the program is not
// there, a config failure that fails the step at once.
func TestStartFailureWithoutResult(t *testing.T) {
	for _, tt := range []struct {
		name   string
		runErr error
		class  string
		step   checkpoint.StepStatus
	}{
		{"the launcher failed", errors.New("start agent claude: pipe: too many open files"), string(handoff.ClassExitNonzero), checkpoint.StepWaiting},
		{"the program is not there", fmt.Errorf("%w: find program %q: not found", agent.ErrStart, "claude"), string(handoff.ClassConfig), checkpoint.StepFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := judgeStep(t, nil, false)
			ws.Retry = testStep(nil).Retry
			f := newOutcomeFixture(t, ws, checkpoint.StepRunning, nil, checkpoint.KindInitial)
			j := f.r.judge(ws, nil, tt.runErr, handoffSource{agent: "a"})
			if _, err := f.try(t).commit(t.Context(), nil, j); err != nil {
				t.Fatal(err)
			}
			got, _ := f.committed(t)
			if got.attempt != checkpoint.AttemptFailed || got.class != tt.class || got.step != tt.step || got.counted != 1 {
				t.Errorf("committed %+v, want a failed attempt of class %s, counted, and the step %s", got, tt.class, tt.step)
			}
		})
	}
}
