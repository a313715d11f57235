package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/notify"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// notifyFlush bounds how long run and resume wait, at their end, for the
// notifications still to send: what is left is sent by the next run or
// resume on the state.
const notifyFlush = 5 * time.Second

// notifications is the run loop's side of SPEC §17's notify: it commits
// events with the transitions that cause them, and has a notify.Deliverer
// send them after the commit.
type notifications struct {
	wf    *workflow.Workflow
	store *checkpoint.Store
	name  string // the workflow's name, or its project directory's, for people
	// sender sends the committed events while the run goes on, once
	// started: run and resume start it; a worker does not (the run's
	// process sends what a worker commits).
	sender *notify.Deliverer
}

// start starts sending the outbox's pending notifications in the
// background: those of this run as they are committed, and those an
// earlier process left. stop ends it after a bounded flush.
func (n *notifications) start(ctx context.Context) { n.sender.Start(ctx) }

func (n *notifications) stop() { n.sender.Stop(notifyFlush) }

// kick tells the sender that events were committed.
func (n *notifications) kick() { n.sender.Kick() }

// enqueue adds ev to the outbox in tx, the transaction of the transition
// that caused it; the caller calls kick once that transaction committed.
// An approval gate calls it with workflow.EventApprovalWaiting.
func (n *notifications) enqueue(tx *checkpoint.Tx, ev notify.Event) error {
	if len(n.wf.Notify) == 0 {
		return nil
	}
	ev.Workflow = cmp.Or(ev.Workflow, n.name)
	_, err := notify.Enqueue(tx, n.wf, ev)
	return err
}

// runEnd is the notification of a run that ended for this process with
// status: run_succeeded, run_failed, run_cancelled, or auth_needed for a
// run stopped for a login; ok false for any other stop.
func (n *notifications) runEnd(runID string, status checkpoint.RunStatus, res *Result, now time.Time) (notify.Event, bool) {
	ev := notify.Event{RunID: runID, Step: res.Step, At: now}
	switch {
	case status == checkpoint.RunSucceeded:
		ev.Name, ev.Text = workflow.EventRunSucceeded, fmt.Sprintf("run %s of %s succeeded", runID, n.name)
	case status == checkpoint.RunFailed:
		ev.Name, ev.Error = workflow.EventRunFailed, res.Message
		ev.Text = fmt.Sprintf("run %s of %s failed", runID, n.name)
		if res.Step != "" {
			ev.Text += " at step " + res.Step
		}
		if res.Message != "" {
			ev.Text += ": " + res.Message
		}
	case status == checkpoint.RunCancelled:
		ev.Name, ev.Text = workflow.EventRunCancelled, fmt.Sprintf("run %s of %s was cancelled (cadence cancel)", runID, n.name)
	case res.login != nil:
		ev.Name, ev.Agent, ev.Error = workflow.EventAuthNeeded, res.login.Agent, res.login.Detail
		ev.Text = fmt.Sprintf("run %s of %s stopped at step %s: log in to agent %s, then run cadence resume",
			runID, n.name, res.login.Step, res.login.Agent)
	default:
		return notify.Event{}, false
	}
	return ev, true
}

// itemDeadEvent is the notification of an item put into the dead-letter
// queue.
func itemDeadEvent(in *attempt.Instance, d checkpoint.DeadLetter) notify.Event {
	return notify.Event{Name: workflow.EventItemDead, RunID: d.RunID, Step: d.StepID, Item: d.ItemKey, Agent: in.Step.Agent,
		At: d.DeadAt, Error: d.Signature,
		Text: fmt.Sprintf("item %s of step %s was dead-lettered after %s: %s", d.ItemKey, d.StepID,
			history.Count(d.Attempts, "attempt", "attempts"), d.Signature)}
}

// longWait commits a long_wait notification, at now, for a wait on a
// usage limit or an open circuit that lasts longer than a target's
// notify_after, before the wait begins. The wait itself was committed
// before (the step's next_retry_at, the circuit's open_until), and is
// found again by a resumed process: the event's subject is the wait
// (whose, until when, to the minute), so a wait is announced once
// however many processes, items or steps wait it out, and a usage limit
// is not announced again as the circuit it keeps open until its reset.
func (n *notifications) longWait(ctx context.Context, in *attempt.Instance, out attempt.Outcome, remaining time.Duration, now time.Time) error {
	if out.Reason != "usage limit" && out.Circuit == "" {
		return nil
	}
	wanted := false
	for _, t := range n.wf.Notify {
		wanted = wanted || (t.Wants(workflow.EventLongWait) && remaining > t.NotifyAfter)
	}
	if !wanted {
		return nil
	}
	u, ws, until := in.Unit(), in.Step, out.Wait.UTC()
	agentName := ws.Agent
	if out.Circuit != "" {
		agentName = out.Circuit
	}
	label := attempt.UnitLabel(u)
	text := fmt.Sprintf("%s of run %s waits until %s for agent %s's usage limit to reset", label, u.RunID, until.Format(time.RFC3339), agentName)
	if out.Circuit != "" {
		text = fmt.Sprintf("%s of run %s waits until %s: agent %s's circuit is open", label, u.RunID, until.Format(time.RFC3339), agentName)
	}
	ev := notify.Event{Name: workflow.EventLongWait, RunID: u.RunID, Step: ws.ID, Item: u.Item, Agent: agentName, At: now,
		Until: &until, Text: text, Wait: remaining,
		Subject: agentName + "/" + until.Truncate(time.Minute).Format(time.RFC3339)}
	if err := n.store.Update(ctx, func(tx *checkpoint.Tx) error { return n.enqueue(tx, ev) }); err != nil {
		return fmt.Errorf("record the long wait of %s: %w", label, err)
	}
	n.kick()
	return nil
}
