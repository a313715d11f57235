package workflow

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Events a notify target may ask for (SPEC 17).
const (
	EventRunSucceeded    = "run_succeeded"
	EventRunFailed       = "run_failed"
	EventApprovalWaiting = "approval_waiting"
	EventLongWait        = "long_wait"
	EventAuthNeeded      = "auth_needed"
	EventItemDead        = "item_dead"
	EventRunCancelled    = "run_cancelled"
)

// NotifyEvents is the fixed set of events, in the order the SPEC lists
// them.
var NotifyEvents = []string{EventRunSucceeded, EventRunFailed, EventApprovalWaiting, EventLongWait, EventAuthNeeded, EventItemDead,
	EventRunCancelled}

// NotifyTarget is one entry of notify: where events are sent. Exactly one
// of Webhook and Command is set.
type NotifyTarget struct {
	Webhook string   // an http or https URL: POST, a JSON body with a text field
	Command []string // an argv: the event as JSON on its standard input; no shell
	On      []string // the events it wants, from NotifyEvents
	// NotifyAfter is how long a wait (a usage limit, an open circuit)
	// lasts before it is sent as long_wait (default DefaultNotifyAfter).
	NotifyAfter time.Duration
}

// Wants reports whether the target asked for event.
func (t *NotifyTarget) Wants(event string) bool { return slices.Contains(t.On, event) }

// notify decodes the notify: list.
func (l *loader) notify(e entry) {
	seq, ok := unwrap(e.val).(*ast.SequenceNode)
	if !ok {
		if !isNull(e.val) {
			l.fail(e.valAt(), "want a list of targets ({webhook: URL, on: [...]} or {command: [argv], on: [...]}), got %s", describe(e.val))
		}
		return
	}
	for i, item := range seq.Values {
		path := fmt.Sprintf("notify[%d]", i)
		self := where(item, path)
		if _, ok := unwrap(item).(*ast.MappingNode); !ok {
			l.fail(self, "want {webhook: URL, on: [...]} or {command: [argv], on: [...]}, got %s", describe(item))
			continue
		}
		t := &NotifyTarget{NotifyAfter: DefaultNotifyAfter}
		var webhook, command, on bool
		l.fields(item, path, []string{"webhook", "command", "on", "notify_after"}, func(e entry) {
			switch e.name {
			case "webhook":
				u := l.nonEmpty(e)
				if !u.set {
					return
				}
				webhook = true
				if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
					l.fail(u.at, "invalid webhook %q (want an http:// or https:// URL)", u.v)
					return
				}
				t.Webhook = u.v
			case "command":
				argv := l.stringList(e)
				if !argv.set {
					return
				}
				command = true
				if len(argv.v) == 0 || argv.v[0] == "" {
					l.fail(argv.at, "must not be empty")
					return
				}
				t.Command = argv.v
				l.w.programs = append(l.w.programs, programRef{what: "notify command", prog: argv.v[0], at: argv.at})
			case "on":
				list := l.stringList(e)
				if !list.set {
					return
				}
				on = true
				eseq := unwrap(e.val).(*ast.SequenceNode)
				for j, ev := range list.v {
					at := where(eseq.Values[j], fmt.Sprintf("%s[%d]", e.path, j))
					switch {
					case !slices.Contains(NotifyEvents, ev):
						l.fail(at, "unknown event %q (want %s)", ev, alternatives(NotifyEvents, "or"))
					case slices.Contains(t.On, ev):
						l.fail(at, "event %q is listed twice", ev)
					default:
						t.On = append(t.On, ev)
					}
				}
				if len(list.v) == 0 {
					l.fail(list.at, "no events (want some of %s)", alternatives(NotifyEvents, "and"))
				}
			case "notify_after":
				t.NotifyAfter = l.duration(e, time.Second).get(DefaultNotifyAfter)
			}
		})
		switch {
		case webhook && command:
			l.fail(self, "a target has webhook or command, not both")
		case !webhook && !command && !l.hasErrorAt(path+".webhook") && !l.hasErrorAt(path+".command"):
			l.fail(self, "missing webhook or command")
		}
		if !on && !l.hasErrorAt(path+".on") {
			l.fail(self, "missing on (want a list of events: %s)", alternatives(NotifyEvents, "and"))
		}
		l.w.Notify = append(l.w.Notify, t)
	}
}
