package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// FollowInterval is how often Follow reads the state database.
const FollowInterval = 250 * time.Millisecond

// Follow prints the transitions of a run (the latest when runID is empty)
// as they are committed, read-only and without the project lock, so it
// works from another terminal while cadence runs: first every transition
// already recorded, then each new one, in the order they happened, each
// once. It returns the run's final status when the run ends: succeeded,
// failed or abandoned.
//
// Opened before any run exists (runID empty), it waits for the first run
// to start and follows it. A run that stops (interrupted, or left running
// by a process that is gone) is reported once, and the follow waits for a
// `cadence resume` to continue it and goes on following it. wait, when not
// nil, is told each time the follow starts waiting and why.
//
// Transitions are rebuilt from the committed rows (attempts with their
// start and end, checks, items, dead letters, the run), not from a log, so
// nothing is missed between two reads: a whole attempt that began and ended
// in between shows as its start and its end.
func Follow(ctx context.Context, dir, state, runID string, emit func(Event), wait func(string)) (string, error) {
	seen := map[string]bool{}
	gone := 0
	waiting := ""
	note := func(msg string) {
		if msg != waiting && wait != nil {
			wait(msg)
		}
		waiting = msg
	}
	for {
		rep, err := Inspect(ctx, dir, state, runID, false)
		switch {
		case errors.Is(err, ErrNoRuns) && runID == "":
			note("waiting for a run to start (cadence run)")
		case err != nil:
			return "", err
		default:
			runID = rep.Run.ID // the latest run, once found, is the one followed
			status, done, err := followStep(ctx, dir, state, rep, seen, &gone, emit)
			if err != nil || done {
				return string(status), err
			}
			if status == checkpoint.RunInterrupted {
				note(fmt.Sprintf("run %s stopped; waiting for it to be resumed (cadence resume), or Ctrl-C to stop following", runID))
			} else {
				waiting = ""
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(FollowInterval):
		}
	}
}

// followStep emits the new transitions of one read of the run. done is
// true once the run has ended; status is interrupted while no process
// works on the run.
func followStep(ctx context.Context, dir, state string, rep *Report, seen map[string]bool, gone *int, emit func(Event)) (status checkpoint.RunStatus, done bool, err error) {
	held := false
	if rep.Run.Status == checkpoint.RunRunning {
		if held, err = runHeld(ctx, dir, state, rep.Run.ID); err != nil {
			return "", false, err
		}
		if held {
			// Running again after a stop: a later stop is a new
			// transition.
			*gone = 0
			delete(seen, "run/stopped")
		}
	}
	for _, ev := range transitions(rep, seen) {
		emit(ev)
	}
	switch rep.Run.Status {
	case checkpoint.RunSucceeded, checkpoint.RunFailed, checkpoint.RunAbandoned, checkpoint.RunCancelled:
		return rep.Run.Status, true, nil
	case checkpoint.RunInterrupted:
		return checkpoint.RunInterrupted, false, nil
	}
	// Running: a crashed cadence leaves it so; two reads without a holder
	// of the lock (one could fall between a process's start and its lock)
	// mean no process works on it.
	if held {
		return checkpoint.RunRunning, false, nil
	}
	if *gone++; *gone < 2 {
		return checkpoint.RunRunning, false, nil
	}
	if !seen["run/stopped"] {
		seen["run/stopped"] = true
		emit(Event{Time: time.Now().UTC(), Type: EventRunInterrupted, RunID: rep.Run.ID,
			Message: "no cadence process is working on the run; continue it with `cadence resume`"})
	}
	return checkpoint.RunInterrupted, false, nil
}

// transitions returns the transitions of rep not in seen, in the order
// they happened, and adds them to seen.
func transitions(rep *Report, seen map[string]bool) []Event {
	type timed struct {
		ev   Event
		rank int // orders transitions at the same instant
		key  string
	}
	var out []timed
	add := func(key string, rank int, ev Event) {
		if !seen[key] {
			out = append(out, timed{ev, rank, key})
		}
	}
	run := rep.Run
	add("run", 0, Event{Time: run.StartedAt, Type: EventRunStarted, RunID: run.ID, Message: run.Workflow})
	var unit unitFunc = func(step string, item string, agent string, max int, attempts []AttemptReport, status checkpoint.StepStatus, stepCost float64) {
		name := step
		if item != "" {
			name += "/" + item
		}
		counted := 0
		var last time.Time
		for _, a := range attempts {
			if a.Kind != "help" && !a.Uncounted {
				counted++
			}
			base := Event{RunID: run.ID, Step: step, Item: item, Agent: agent, Attempt: a.N, Counted: counted,
				MaxAttempts: max, Kind: a.Kind, SessionID: a.SessionID}
			start := base
			start.Time, start.Type = a.StartedAt, EventAttemptStarted
			if a.PID != nil {
				start.PID = *a.PID
			}
			add(fmt.Sprintf("a/%s/%d/start", name, a.N), 1, start)
			for i, c := range a.Checks {
				cs := base
				cs.Time, cs.Type, cs.Check, cs.Message = c.StartedAt, EventCheckStarted, c.Name, c.Command
				add(fmt.Sprintf("a/%s/%d/c%d/start", name, a.N, i), 2, cs)
				if c.FinishedAt != nil && c.Status != checkpoint.CheckRunning {
					cf := base
					cf.Time, cf.Type, cf.Check, cf.Status, cf.ExitCode = *c.FinishedAt, EventCheckFinished, c.Name, c.Status, c.ExitCode
					cf.Elapsed = c.FinishedAt.Sub(c.StartedAt).Seconds()
					add(fmt.Sprintf("a/%s/%d/c%d/end", name, a.N, i), 3, cf)
				}
			}
			if a.FinishedAt != nil && a.Status != checkpoint.AttemptRunning {
				end := base
				end.Time, end.Type, end.Status, end.Class, end.Error = *a.FinishedAt, EventAttemptFinished, string(a.Status), a.Class, a.Error
				end.Repairs, end.Until, end.Uncounted = a.Repairs, a.NextRetryAt, a.Uncounted
				end.Provenance = a.Provenance
				end.Elapsed = a.FinishedAt.Sub(a.StartedAt).Seconds()
				add(fmt.Sprintf("a/%s/%d/end", name, a.N), 4, end)
				last = *a.FinishedAt
			}
		}
		switch status {
		case checkpoint.StepSucceeded:
			add("s/"+name+"/done", 5, Event{Time: last, Type: EventStepSucceeded, RunID: run.ID, Step: step, Item: item,
				Agent: agent, Counted: counted, MaxAttempts: max, CostUSD: stepCost})
		case checkpoint.StepFailed:
			add("s/"+name+"/done", 5, Event{Time: last, Type: EventStepFailed, RunID: run.ID, Step: step, Item: item,
				Agent: agent, Message: fmt.Sprintf("%d of %d attempts used", counted, max)})
		}
	}
	var step func(s StepReport)
	step = func(s StepReport) {
		if s.Status == checkpoint.StepSkipped {
			var d Decision
			_ = json.Unmarshal(s.Decision, &d) // a decision that does not read says less, nothing worse
			add("s/"+s.ID+"/skipped", 5, Event{Time: d.At, Type: EventStepSkipped, RunID: run.ID, Step: s.ID, Status: string(s.Status), Message: d.Why()})
			return
		}
		if len(s.Iterations) > 0 || s.Approval != nil {
			loopOrGate(run.ID, s, add, unit, step)
			return
		}
		if s.ItemCounts == nil {
			unit(s.ID, "", s.Agent, s.MaxAttempts, s.Attempts, s.Status, s.CostUSD)
			return
		}
		for _, it := range s.Items {
			unit(s.ID, it.Key, s.Agent, it.MaxAttempts, it.Attempts, it.Status, it.CostUSD)
		}
		for _, d := range s.Dead {
			add("d/"+s.ID+"/"+d.Key, 6, Event{Time: d.DeadAt, Type: EventItemDead, RunID: run.ID, Step: s.ID, Item: d.Key,
				Agent: s.Agent, Class: d.Class, Error: d.Error, Message: "sent to the dead-letter queue after " + Count(d.Attempts, "attempt", "attempts")})
		}
		if s.Status == checkpoint.StepSucceeded || s.Status == checkpoint.StepFailed {
			typ, msg := EventStepSucceeded, fmt.Sprintf("%s succeeded, %d dead", Count(s.ItemCounts[checkpoint.StepSucceeded], "item", "items"), len(s.Dead))
			if s.Status == checkpoint.StepFailed {
				typ = EventStepFailed
			}
			var at time.Time
			for _, it := range s.Items {
				for _, a := range it.Attempts {
					if a.FinishedAt != nil && a.FinishedAt.After(at) {
						at = *a.FinishedAt
					}
				}
			}
			add("s/"+s.ID+"/done", 7, Event{Time: at, Type: typ, RunID: run.ID, Step: s.ID, Agent: s.Agent, CostUSD: s.CostUSD, Message: msg})
		}
	}
	for _, s := range rep.Steps {
		step(s)
	}
	switch run.Status {
	case checkpoint.RunSucceeded, checkpoint.RunFailed, checkpoint.RunAbandoned, checkpoint.RunCancelled:
		at := run.StartedAt
		if run.FinishedAt != nil {
			at = *run.FinishedAt
		}
		add("run/end", 9, Event{Time: at, Type: EventRunFinished, RunID: run.ID, Status: string(run.Status)})
	case checkpoint.RunInterrupted:
		add("run/stopped", 9, Event{Time: time.Now().UTC(), Type: EventRunInterrupted, RunID: run.ID, Status: string(run.Status),
			Message: "continue it with `cadence resume`"})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].ev.Time.Equal(out[j].ev.Time) {
			return out[i].ev.Time.Before(out[j].ev.Time)
		}
		return out[i].rank < out[j].rank
	})
	evs := make([]Event, len(out))
	for i, t := range out {
		seen[t.key] = true
		evs[i] = t.ev
	}
	return evs
}

// runHeld reports whether a cadence process is working on run runID: one
// holding the project lock, or on a shared database a live lease on the
// run.
func runHeld(ctx context.Context, dir, state, runID string) (bool, error) {
	if !checkpoint.IsPostgresURL(state) {
		return checkpoint.LockHolder(filepath.Join(dir, checkpoint.CadenceDir)) != 0, nil
	}
	store, err := projectid.OpenReadOnly(ctx, dir, state)
	if err != nil {
		return false, err
	}
	defer store.Close()
	var l *checkpoint.Lease
	err = store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		l, err = tx.LiveLease(runID, "", "")
		return err
	})
	return l != nil, err
}

// loopOrGate adds the transitions of a loop step (its iterations, their
// inner steps through step, and its end) or of an approval gate (reached,
// decided, and its end) through add; unit adds a step's attempts, such as
// a loop's until that could not be evaluated or a gate's timeout.
func loopOrGate(runID string, s StepReport, add func(key string, rank int, ev Event), unit unitFunc, step func(StepReport)) {
	var end time.Time
	for _, a := range s.Attempts {
		if a.FinishedAt != nil && a.FinishedAt.After(end) {
			end = *a.FinishedAt
		}
	}
	unit(s.ID, "", s.Agent, s.MaxAttempts, s.Attempts, "", s.CostUSD)
	for _, it := range s.Iterations {
		start, last := iterationSpan(it)
		var d Decision
		decided := len(it.Until) > 0 && json.Unmarshal(it.Until, &d) == nil
		if start.IsZero() && decided {
			start = d.At
		}
		if !start.IsZero() || it.Status != checkpoint.StepPending {
			if start.IsZero() {
				start = time.Now().UTC()
			}
			add(fmt.Sprintf("i/%s/start", it.ID), 0, Event{Time: start, Type: EventIterationStarted, RunID: runID, Step: s.ID, Attempt: it.Iteration})
		}
		for _, inner := range it.Steps {
			step(inner)
		}
		switch {
		case decided:
			add(fmt.Sprintf("i/%s/end", it.ID), 6, Event{Time: d.At, Type: EventIterationEnded, RunID: runID, Step: s.ID, Attempt: it.Iteration,
				Status: string(it.Status), Message: untilLine(d)})
			end = later(end, d.At)
		case it.Status == checkpoint.StepFailed:
			add(fmt.Sprintf("i/%s/end", it.ID), 6, Event{Time: last, Type: EventIterationEnded, RunID: runID, Step: s.ID, Attempt: it.Iteration,
				Status: string(it.Status), Message: "an inner step failed"})
			end = later(end, last)
		}
	}
	if a := s.Approval; a != nil {
		// The prompt as the run shows it, with how to answer while the
		// gate waits.
		msg := a.Prompt
		if a.Decision == ApprovalWaiting && s.Status == checkpoint.StepWaiting {
			msg += "\nanswer with: cadence approve " + s.ID + " [--comment TEXT]  or: cadence reject " + s.ID + " --comment TEXT"
		}
		add("g/"+s.ID+"/waiting", 1, Event{Time: a.RequestedAt, Type: EventGateWaiting, RunID: runID, Step: s.ID, Reason: "approval",
			Message: msg, Until: a.TimeoutAt})
		if a.At != nil && (a.Decision == checkpoint.Approved || a.Decision == checkpoint.Rejected) {
			who := "by " + a.By
			if a.Comment != "" {
				who += ": " + a.Comment
			}
			add("g/"+s.ID+"/decided", 4, Event{Time: *a.At, Type: EventGateDecided, RunID: runID, Step: s.ID, Status: a.Decision, Message: who})
			end = later(end, *a.At)
		}
	}
	switch s.Status {
	case checkpoint.StepSucceeded:
		msg := ""
		if n := len(s.Iterations); n > 0 {
			// As the run says it: the until met, or the iterations used
			// up (on_exhausted: continue).
			msg = Count(n, "iteration", "iterations") + " used"
			var d Decision
			if json.Unmarshal(s.Iterations[n-1].Until, &d) == nil && d.Value != nil && *d.Value {
				msg = fmt.Sprintf("until %s is true after %s", d.Until, Count(n, "iteration", "iterations"))
			}
		} else if s.Approval != nil {
			msg = s.Approval.Decision
		}
		add("s/"+s.ID+"/done", 7, Event{Time: end, Type: EventStepSucceeded, RunID: runID, Step: s.ID, CostUSD: s.CostUSD, Message: msg})
	case checkpoint.StepFailed:
		msg := "failed"
		switch {
		case len(s.Iterations) > 0:
			msg = fmt.Sprintf("failed after %s", Count(len(s.Iterations), "iteration", "iterations"))
		case s.Approval != nil && s.Approval.Decision == ApprovalTimedOut:
			msg = "no decision before its timeout"
		case s.Approval != nil:
			msg = s.Approval.Decision
		}
		add("s/"+s.ID+"/done", 7, Event{Time: end, Type: EventStepFailed, RunID: runID, Step: s.ID, Message: msg})
	}
}

// unitFunc adds the transitions of one step or item: its attempts, and
// its end when status is succeeded or failed.
type unitFunc func(step, item, agent string, max int, attempts []AttemptReport, status checkpoint.StepStatus, stepCost float64)

// iterationSpan returns when an iteration's first inner attempt started
// and its last one ended, at any depth; zero times when none ran.
func iterationSpan(it IterationReport) (start, end time.Time) {
	var walk func(steps []StepReport)
	visit := func(atts []AttemptReport) {
		for _, a := range atts {
			if start.IsZero() || a.StartedAt.Before(start) {
				start = a.StartedAt
			}
			if a.FinishedAt != nil {
				end = later(end, *a.FinishedAt)
			}
		}
	}
	walk = func(steps []StepReport) {
		for _, s := range steps {
			visit(s.Attempts)
			for _, item := range s.Items {
				visit(item.Attempts)
			}
			if s.Approval != nil {
				if start.IsZero() || s.Approval.RequestedAt.Before(start) {
					start = s.Approval.RequestedAt
				}
				if s.Approval.At != nil {
					end = later(end, *s.Approval.At)
				}
			}
			for _, inner := range s.Iterations {
				walk(inner.Steps)
			}
		}
	}
	walk(it.Steps)
	return start, end
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// untilLine says what an iteration's until decision was, as the run
// says it when it takes it: "until EXPR is true".
func untilLine(d Decision) string {
	if d.Value == nil {
		return "ended (the loop has no until)"
	}
	return fmt.Sprintf("until %s is %v", d.Until, *d.Value)
}
