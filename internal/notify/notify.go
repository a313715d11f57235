// Package notify sends a run's notifications (SPEC §17): a run that
// succeeded or failed, an approval waiting, a long wait, a login needed,
// an item dead-lettered, to the workflow's notify targets, a webhook (an
// HTTP POST of a JSON body with a text field that Slack and ntfy display)
// or a command (an argv, the body on its standard input).
//
// Events go through an outbox in the state. Enqueue adds an event, one row
// per target that wants it, in the transaction of the transition that
// caused it, so the event is committed with that transition or not at
// all. A Deliverer sends the pending rows after the commit, in the
// background of the run, retrying with backoff and recording each try;
// what is still pending when the process ends is sent by the next process
// on the state. A crash therefore loses no event, and a row marked
// delivered is never sent again; a crash in the middle of a try (after the
// target took it, before it was recorded) sends it once more with the same
// idempotency key, for the receiver to drop. A try is claimed in the
// state with the process that makes it, so that a process on the same
// machine takes over at once the try of a process that died.
package notify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Event is one thing to tell the notify targets.
type Event struct {
	Name  string // one of workflow.NotifyEvents
	RunID string
	// Workflow names the workflow to a person; "" means its name, or its
	// file's name when it has none.
	Workflow string
	// Step, Item and Agent name where it happened, when it happened in a
	// step.
	Step, Item, Agent string
	// Text is the one-line sentence a person reads (Slack, ntfy), as
	// written: each target's body has it escaped for the chat service
	// it posts to (markup.go).
	Text string
	At   time.Time
	// Until is the end of a long wait.
	Until *time.Time
	// Error is the error that caused the event (a failed step, a dead
	// item, a login), one line.
	Error string
	// Subject, when set, makes the event once per run: an event of the
	// same name and subject already in the outbox is not added again (the
	// same wait found again by a resumed process).
	Subject string
	// Wait is how long a long_wait lasts: only the targets whose
	// notify_after it exceeds are told.
	Wait time.Duration
}

// Body is the JSON body sent to every target: the webhook's request body
// and the command's standard input. Field names are stable; new ones may
// be added. Text is escaped for the service the target posts to (no
// markup, no mentions: see markup.go); the other fields are raw.
type Body struct {
	Event          string     `json:"event"`
	RunID          string     `json:"run_id"`
	Workflow       string     `json:"workflow"`
	Step           string     `json:"step,omitempty"`
	Item           string     `json:"item,omitempty"`
	Agent          string     `json:"agent,omitempty"`
	Text           string     `json:"text"`
	At             time.Time  `json:"at"`
	Until          *time.Time `json:"until,omitempty"`
	Error          string     `json:"error,omitempty"`
	IdempotencyKey string     `json:"idempotency_key"`
}

// target is a notify target as stored with each of its deliveries.
type target struct {
	Webhook string   `json:"webhook,omitempty"`
	Command []string `json:"command,omitempty"`
}

// maxTextBytes bounds the text and error of an event: a notification is a
// line, not a log.
const maxTextBytes = 1000

// Enqueue adds ev to the outbox in tx, one pending delivery for each
// target of wf's notify list that wants it, and reports how many. Call it
// inside the transaction of the transition that caused the event; after
// that transaction commits, tell the Deliverer (Kick). An event whose
// Subject is already in the run's outbox is not added again.
func Enqueue(tx *checkpoint.Tx, wf *workflow.Workflow, ev Event) (int, error) {
	var wants []int
	for i, t := range wf.Notify {
		if t.Wants(ev.Name) && (ev.Name != workflow.EventLongWait || ev.Wait > t.NotifyAfter) {
			wants = append(wants, i)
		}
	}
	if len(wants) == 0 {
		return 0, nil
	}
	if ev.Subject != "" {
		seen, err := tx.HasDeliverySubject(ev.RunID, ev.Name, ev.Subject)
		if err != nil || seen {
			return 0, err
		}
	}
	seq, err := tx.NextDeliverySeq(ev.RunID)
	if err != nil {
		return 0, err
	}
	at := ev.At.UTC()
	key := fmt.Sprintf("%s/%s/%d", ev.RunID, ev.Name, seq)
	body := Body{Event: ev.Name, RunID: ev.RunID, Workflow: cmp.Or(ev.Workflow, workflowName(wf)), Step: ev.Step, Item: ev.Item, Agent: ev.Agent,
		Text: oneLine(ev.Text), At: at, Error: oneLine(ev.Error), IdempotencyKey: key}
	if ev.Until != nil {
		u := ev.Until.UTC()
		body.Until = &u
	}
	text := body.Text
	for _, i := range wants {
		t := wf.Notify[i]
		// Each target reads the text in its own markup (markup.go); the
		// other fields are the same for all.
		body.Text = escapeText(textFormat(t.Webhook), text)
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode the %s event of run %s: %w", ev.Name, ev.RunID, err)
		}
		tj, err := json.Marshal(target{Webhook: t.Webhook, Command: t.Command})
		if err != nil {
			return 0, fmt.Errorf("encode notify target %d: %w", i, err)
		}
		if err := tx.AddDelivery(checkpoint.Delivery{RunID: ev.RunID, Seq: seq, TargetIdx: i, Event: ev.Name, Subject: ev.Subject,
			Target: describe(t.Webhook, t.Command), TargetJSON: tj, BodyJSON: b, IdempotencyKey: key, CreatedAt: at,
			Status: checkpoint.DeliveryPending, NextTryAt: at}); err != nil {
			return 0, err
		}
	}
	return len(wants), nil
}

// workflowName is the workflow's name, or its file's name when it has
// none.
func workflowName(wf *workflow.Workflow) string {
	if wf.Name != "" {
		return wf.Name
	}
	return filepath.Base(wf.Path)
}

// describe is what may be shown of a target, in inspect and in logs: a
// webhook's scheme and host (its path and query often hold the secret
// that lets anyone post, as Slack's do), a command's program.
func describe(webhook string, command []string) string {
	if webhook != "" {
		return "webhook " + redactURL(webhook)
	}
	if len(command) == 0 {
		return "command"
	}
	s := "command " + command[0]
	if len(command) > 1 {
		s += " …"
	}
	return s
}

// redactURL keeps the scheme and host of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(an invalid URL)"
	}
	s := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// oneLine makes s one line of at most maxTextBytes bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxTextBytes {
		s = strings.ToValidUTF8(s[:maxTextBytes], "") + "…"
	}
	return s
}
