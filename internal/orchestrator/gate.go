package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"github.com/cadence-dev/cadence/internal/notify"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// gatePoll is how often a process kept waiting by --wait-approval looks
// again at the gates that wait (for their answers, and their deadlines).
const gatePoll = 250 * time.Millisecond

// announced holds the gates a process showed waiting, so that a gate
// looked at again (when another step ends) is not shown again.
type announced struct {
	mu   sync.Mutex
	seen map[string]bool
	open []string // the gates waiting, by path, in the order they were shown
}

// first records that the gate at path waits, and reports whether this
// process had not shown it yet.
func (a *announced) first(path string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.open, path) {
		a.open = append(a.open, path)
	}
	if a.seen[path] {
		return false
	}
	a.seen[path] = true
	return true
}

// answered records that the gate at path no longer waits.
func (a *announced) answered(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open = slices.DeleteFunc(a.open, func(p string) bool { return p == path })
}

// waiting returns the gates still waiting.
func (a *announced) waiting() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.open)
}

// runGate looks at an approval gate (SPEC §16.6): reached, it is
// committed waiting with its rendered prompt, then shown; once a person
// answered (cadence approve or reject, which write the decision in the
// state), the answer is committed as the gate's output, or fails it;
// past its timeout it fails with class timeout. A gate not answered is
// stepAwaiting: it takes no slot of max_parallel_steps while it waits,
// and the graph looks at it again (polling, under --wait-approval).
func (g *graph) runGate(ctx context.Context, in *attempt.Instance) (stepResult, any, error) {
	p, u := g.p, in.Unit()
	var a *checkpoint.Approval
	err := p.store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		a, err = tx.Approval(u)
		return err
	})
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		if a, err = g.reachGate(ctx, in); err != nil {
			return 0, nil, err
		}
	case err != nil:
		return 0, nil, fmt.Errorf("read the approval of gate %s: %w", u.StepID, err)
	}
	if a.Decided() && inTime(a) {
		g.gates.answered(u.StepID)
		return g.gateDecided(ctx, in, a)
	}
	now := p.now()
	if !a.Decided() && g.gates.first(u.StepID) {
		p.sink.Emit(gateWaitingEvent(in, a))
	}
	if a.Decided() || a.TimeoutAt != nil && !now.Before(*a.TimeoutAt) {
		// Past its deadline the gate is timed out, whatever answer came
		// after it (cadence approve refuses one; a state written before
		// it did may hold one).
		g.gates.answered(u.StepID)
		why := fmt.Sprintf("no answer within the gate's timeout %s (it waited since %s)", in.Step.Approval.Timeout, a.RequestedAt.Format(time.RFC3339))
		if err := p.attempts.StopStep(ctx, in, handoff.ClassTimeout, why, checkpoint.KindInitial); err != nil {
			return 0, nil, err
		}
		return stepFailed, nil, nil
	}
	return stepAwaiting, nil, nil
}

// inTime reports whether a gate's answer came before its deadline.
func inTime(a *checkpoint.Approval) bool {
	return a.TimeoutAt == nil || a.DecidedAt != nil && a.DecidedAt.Before(*a.TimeoutAt)
}

// reachGate commits a gate reached: waiting, with its prompt rendered
// from what its templates read, and its timeout.
func (g *graph) reachGate(ctx context.Context, in *attempt.Instance) (*checkpoint.Approval, error) {
	p, ws := g.p, in.Step
	prompt := "Approve step " + ws.ID + "?"
	if t := ws.Approval.Template; t != nil {
		var err error
		if prompt, err = in.Render(t); err != nil {
			// A prompt that cannot be rendered (a missing key) still
			// leaves the gate answerable: it shows why.
			prompt = fmt.Sprintf("Approve step %s? (its prompt could not be rendered: %v)", ws.ID, err)
		}
	}
	now := p.now()
	a := &checkpoint.Approval{Unit: in.Unit(), Prompt: prompt, RequestedAt: now}
	if ws.Approval.Timeout > 0 {
		t := now.Add(ws.Approval.Timeout)
		a.TimeoutAt = &t
	}
	path := in.StepPath()
	ev := notify.Event{Name: workflow.EventApprovalWaiting, RunID: in.Run.ID, Step: path, At: now, Until: a.TimeoutAt,
		Text: fmt.Sprintf("run %s waits for approval at step %s: %s (cadence approve %s, or cadence reject %s --comment TEXT)",
			in.Run.ID, path, firstLine(prompt), path, path)}
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Unit(a.Unit)
		if err != nil {
			return err
		}
		if err := tx.GateWaiting(s, *a, now); err != nil {
			return err
		}
		// Whoever is to answer hears of it: committed with the wait.
		return p.notes.enqueue(tx, ev)
	})
	if err != nil {
		return nil, fmt.Errorf("record gate %s waiting: %w", a.Unit.StepID, err)
	}
	p.notes.kick()
	p.attempts.Failpoint.Hit(attempt.FailAfterGateWaiting)
	return a, nil
}

// gateWaitingEvent shows a gate waiting: its prompt and how to answer.
func gateWaitingEvent(in *attempt.Instance, a *checkpoint.Approval) history.Event {
	path := in.StepPath()
	msg := a.Prompt + "\nanswer with: cadence approve " + path + " [--comment TEXT]  or: cadence reject " + path + " --comment TEXT"
	ev := history.Event{Time: a.RequestedAt, Type: history.EventGateWaiting, RunID: in.Run.ID, Step: path, Reason: "approval", Message: msg}
	if a.TimeoutAt != nil {
		t := *a.TimeoutAt
		ev.Until = &t
	}
	return ev
}

// gateDecided commits a person's answer as the gate's output
// {"approved", "comment", "by", "at"}: an approval, or a rejection with
// on_reject: continue, succeeds the gate; a rejection with on_reject:
// fail fails it.
func (g *graph) gateDecided(ctx context.Context, in *attempt.Instance, a *checkpoint.Approval) (stepResult, any, error) {
	p, ws, u := g.p, in.Step, in.Unit()
	approved := a.Decision == checkpoint.Approved
	at := a.RequestedAt
	if a.DecidedAt != nil {
		at = *a.DecidedAt
	}
	data, err := json.Marshal(map[string]any{"approved": approved, "comment": a.Comment, "by": a.By, "at": at.UTC().Format(time.RFC3339)})
	if err != nil {
		return 0, nil, fmt.Errorf("encode the answer to gate %s: %w", u.StepID, err)
	}
	now := p.now()
	succeeds := approved || ws.Approval.OnReject == workflow.OnContinue
	env := handoff.Envelope{Component: ws.ID, Timestamp: now, Status: "success", Data: data,
		Metadata: handoff.EnvelopeMetadata{Repairs: []string{}, PreviousErrors: []string{}}}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return 0, nil, fmt.Errorf("encode the envelope of gate %s: %w", u.StepID, err)
	}
	if succeeds {
		if err := p.attempts.WriteEnvelope(in, env); err != nil {
			return 0, nil, err
		}
	}
	err = p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		if succeeds {
			return tx.StepSucceeded(s, envJSON, now)
		}
		return tx.StepFailed(s, now)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the answer to gate %s: %w", u.StepID, err)
	}
	p.attempts.Failpoint.Hit(attempt.FailAfterGateDecided)
	who := "by " + a.By + commentSuffix(a.Comment)
	p.sink.Emit(history.Event{Time: now, Type: history.EventGateDecided, RunID: in.Run.ID, Step: u.StepID, Status: a.Decision, Message: who})
	if !succeeds {
		p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: in.Run.ID, Step: u.StepID, Message: "rejected " + who})
		return stepFailed, nil, nil
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return 0, nil, fmt.Errorf("decode the answer to gate %s: %w", u.StepID, err)
	}
	return stepDone, v, nil
}

// commentSuffix is ": comment", or nothing without one.
func commentSuffix(c string) string {
	if c == "" {
		return ""
	}
	return ": " + c
}

// firstLine is the first line of s, for a one-line notification.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
