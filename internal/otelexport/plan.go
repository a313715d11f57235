package otelexport

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// records are a run's stored records, as read for one export.
type records struct {
	run       *checkpoint.Run
	steps     []checkpoint.Step            // the run's rows: steps, loop iterations and their inner steps
	items     map[string][]checkpoint.Step // a map step's items, by step id
	attempts  map[checkpoint.Unit][]checkpoint.Attempt
	approvals map[checkpoint.Unit]checkpoint.Approval
	events    []checkpoint.Event // the run's audit log
}

// spanSpec is one span to build: its key (from which its id is derived),
// its parent's key ("" for the run's span), and what it holds.
type spanSpec struct {
	key, parent string
	name        string
	start, end  time.Time
	attrs       []attribute.KeyValue
	events      []eventSpec
	err         string // the error status's description; "" for OK
}

type eventSpec struct {
	name  string
	at    time.Time
	attrs []attribute.KeyValue
}

// Keys of the spans of a run.
const runKey = "run"

func rowKey(id string) string         { return "step\x00" + id }
func itemKey(step, key string) string { return "item\x00" + step + "\x00" + key }
func attemptKey(a checkpoint.Attempt) string {
	return fmt.Sprintf("attempt\x00%s\x00%s\x00%d", a.StepID, a.ItemKey, a.N)
}

// final reports whether a step row or item will not change any more.
func final(status checkpoint.StepStatus) bool {
	return status == checkpoint.StepSucceeded || status == checkpoint.StepFailed || status == checkpoint.StepSkipped
}

// maxText bounds an agent-written text put in an attribute or event.
const maxText = 1024

func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// plan returns the spans of the run that are complete in the records:
// every finished attempt, every step row and item in a final status, and
// the run once it ended, each with its parent's key.
func plan(r records) []spanSpec {
	var out []spanSpec
	rows := make(map[string]bool, len(r.steps))
	for _, s := range r.steps {
		rows[s.ID] = true
	}
	inner := r.innerIntervals()
	for _, s := range r.steps {
		parent := runKey
		if up := address.Of(s.ID).Parent(); !up.IsZero() && rows[up.String()] {
			parent = rowKey(up.String())
		}
		items := r.items[s.ID]
		for _, it := range items {
			out = append(out, r.attemptSpans(it, itemKey(s.ID, it.ItemKey))...)
			if final(it.Status()) {
				out = append(out, r.unitSpan(it, itemKey(s.ID, it.ItemKey), rowKey(s.ID), nil, nil))
			}
		}
		out = append(out, r.attemptSpans(s, rowKey(s.ID))...)
		if final(s.Status()) {
			out = append(out, r.unitSpan(s, rowKey(s.ID), parent, items, inner))
		}
	}
	if rs := r.runSpan(); rs != nil {
		out = append(out, *rs)
	}
	return out
}

// interval is when the attempts of a row's inner steps ran.
type interval struct{ start, end time.Time }

// innerIntervals maps each loop or iteration row to the interval of the
// attempts of the rows inside it (implement/2/code's attempts widen
// implement/2 and implement), in one pass over the attempts.
func (r records) innerIntervals() map[string]interval {
	out := map[string]interval{}
	for u, atts := range r.attempts {
		if u.Item != "" {
			continue
		}
		for up := address.Of(u.StepID).Parent(); !up.IsZero(); up = up.Parent() {
			id := up.String()
			in := out[id]
			for _, a := range atts {
				if in.start.IsZero() || a.StartedAt.Before(in.start) {
					in.start = a.StartedAt
				}
				if a.FinishedAt != nil && a.FinishedAt.After(in.end) {
					in.end = *a.FinishedAt
				}
			}
			out[id] = in
		}
	}
	return out
}

// runSpan is the run's span once the run ended, with the audit log's
// entries (stops, resumes, answers, reopened steps) as events.
func (r records) runSpan() *spanSpec {
	run := r.run
	if run.FinishedAt == nil || run.Status() == checkpoint.RunRunning || run.Status() == checkpoint.RunInterrupted {
		return nil
	}
	sp := spanSpec{key: runKey, name: "cadence run", start: run.StartedAt, end: *run.FinishedAt,
		attrs: []attribute.KeyValue{
			attribute.String("cadence.run.id", run.ID),
			attribute.String("cadence.run.status", string(run.Status())),
			attribute.String("cadence.workflow", run.WorkflowPath),
		}}
	if run.Status() == checkpoint.RunFailed {
		sp.err = "run failed"
	}
	for _, e := range r.events {
		if strings.HasPrefix(e.Kind, eventPrefix) {
			continue
		}
		ev := eventSpec{name: e.Kind, at: e.At}
		if e.Detail != "" {
			ev.attrs = []attribute.KeyValue{attribute.String("cadence.detail", cut(e.Detail))}
		}
		sp.events = append(sp.events, ev)
	}
	return &sp
}

// unitSpan is the span of a step row or an item in a final status: from
// the first thing that happened in it (an attempt, a gate's request, an
// inner step's or item's attempt) to its last change.
func (r records) unitSpan(s checkpoint.Step, key, parent string, items []checkpoint.Step, inner map[string]interval) spanSpec {
	u := s.Unit()
	start, end := time.Time{}, s.UpdatedAt
	widen := func(from time.Time, to *time.Time) {
		if start.IsZero() || from.Before(start) {
			start = from
		}
		if to != nil && to.After(end) {
			end = *to
		}
	}
	for _, a := range r.attempts[u] {
		widen(a.StartedAt, a.FinishedAt)
	}
	for _, it := range items {
		for _, a := range r.attempts[it.Unit()] {
			widen(a.StartedAt, a.FinishedAt)
		}
	}
	if u.Item == "" {
		if in, ok := inner[s.ID]; ok {
			widen(in.start, &in.end)
		}
	}
	gate, isGate := r.approvals[u]
	if isGate {
		widen(gate.RequestedAt, gate.DecidedAt)
	}
	if start.IsZero() || start.After(end) {
		start = end
	}
	name := "cadence step " + s.ID
	attrs := []attribute.KeyValue{attribute.String("cadence.step.id", s.ID), attribute.String("cadence.step.status", string(s.Status()))}
	if u.Item != "" {
		name = "cadence item " + s.ID
		attrs = append(attrs, attribute.String("cadence.item.key", u.Item))
	}
	if s.Agent != "" {
		attrs = append(attrs, attribute.String("cadence.agent", s.Agent))
	}
	if s.MaxAttempts > 0 {
		attrs = append(attrs, attribute.Int("cadence.max_attempts", s.MaxAttempts))
	}
	if s.CostKnown {
		attrs = append(attrs, attribute.Float64("cadence.cost_usd", s.CostUSD))
	}
	sp := spanSpec{key: key, parent: parent, name: name, start: start, end: end, attrs: attrs}
	if len(s.DecisionJSON) > 0 {
		sp.events = append(sp.events, eventSpec{name: "decision", at: start,
			attrs: []attribute.KeyValue{attribute.String("cadence.decision", cut(string(s.DecisionJSON)))}})
	}
	if isGate {
		sp.events = append(sp.events, eventSpec{name: "approval requested", at: gate.RequestedAt,
			attrs: []attribute.KeyValue{attribute.String("cadence.approval.prompt", cut(gate.Prompt))}})
		if gate.DecidedAt != nil {
			sp.events = append(sp.events, eventSpec{name: "approval " + gate.Decision, at: *gate.DecidedAt,
				attrs: []attribute.KeyValue{attribute.String("cadence.approval.by", cut(gate.By)),
					attribute.String("cadence.approval.comment", cut(gate.Comment))}})
		}
	}
	if s.Status() == checkpoint.StepFailed {
		sp.err = "step failed"
		if atts := r.attempts[u]; len(atts) > 0 {
			last := atts[len(atts)-1]
			sp.err = cut(strings.TrimSpace(last.Class + ": " + firstLine(last.Error)))
		}
	}
	return sp
}

// attemptSpans are the spans of a unit's finished attempts.
func (r records) attemptSpans(s checkpoint.Step, parent string) []spanSpec {
	var out []spanSpec
	for _, a := range r.attempts[s.Unit()] {
		if a.FinishedAt == nil {
			continue
		}
		agent := a.Agent
		if agent == "" && a.Kind != checkpoint.KindHelp {
			agent = s.Agent
		}
		attrs := []attribute.KeyValue{
			attribute.Int("cadence.attempt.n", a.N),
			attribute.String("cadence.attempt.kind", a.Kind),
			attribute.String("cadence.attempt.status", string(a.Status())),
			attribute.String("cadence.agent", agent),
			attribute.String("cadence.session.id", a.SessionID),
			attribute.String("cadence.class", a.Class),
			attribute.Int64("gen_ai.usage.input_tokens", a.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", a.OutputTokens),
			attribute.Int64("cadence.usage.cached_input_tokens", a.CachedTokens),
			attribute.Int("cadence.turns", a.Turns),
			attribute.StringSlice("cadence.repairs", nonNil(a.Repairs)),
			attribute.Int("cadence.repairs.count", len(a.Repairs)),
		}
		if a.CostUSD != nil {
			attrs = append(attrs, attribute.Float64("cadence.cost_usd", *a.CostUSD))
		}
		if a.ExitCode != nil {
			attrs = append(attrs, attribute.Int("cadence.exit_code", *a.ExitCode))
		}
		if a.Provenance != "" {
			attrs = append(attrs, attribute.String("cadence.provenance", a.Provenance))
		}
		if a.Uncounted {
			attrs = append(attrs, attribute.Bool("cadence.attempt.uncounted", true))
		}
		sp := spanSpec{key: attemptKey(a), parent: parent, name: "cadence attempt", start: a.StartedAt, end: *a.FinishedAt, attrs: attrs}
		if a.Status() != "succeeded" {
			sp.err = cut(strings.TrimSpace(a.Class + ": " + firstLine(a.Error)))
		}
		if a.Warning != "" {
			sp.events = append(sp.events, eventSpec{name: "warning", at: *a.FinishedAt,
				attrs: []attribute.KeyValue{attribute.String("cadence.warning", cut(a.Warning))}})
		}
		if a.NextRetryAt != nil {
			ev := eventSpec{name: "retry scheduled", at: *a.FinishedAt,
				attrs: []attribute.KeyValue{attribute.String("cadence.next_retry_at", a.NextRetryAt.UTC().Format(time.RFC3339Nano))}}
			if a.DelayMS != nil {
				ev.attrs = append(ev.attrs, attribute.Int64("cadence.delay_ms", *a.DelayMS))
			}
			if a.RetryAfterMS != nil {
				ev.attrs = append(ev.attrs, attribute.Int64("cadence.retry_after_ms", *a.RetryAfterMS))
			}
			sp.events = append(sp.events, ev)
		}
		out = append(out, sp)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
