package otelexport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// Audit-log kinds of the exporter's own records, never exported as events.
const (
	eventPrefix   = "otel_"
	eventTrace    = "otel_trace"    // detail: the run's traceContext as JSON
	eventExported = "otel_exported" // detail: the span ids sent, hex, space-separated
)

// traceContext is where the run's spans go: its trace and, when the run
// started under a TRACEPARENT, the span its own span is a child of.
type traceContext struct {
	TraceID      string `json:"trace_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
}

// Exporter sends runs' spans to one OTLP endpoint.
type Exporter struct {
	exp sdktrace.SpanExporter
	res *resource.Resource
}

// New makes the exporter that cfg asks for. The resource is service.name
// cadence unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say
// otherwise.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	exp, err := newExporter(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter (%s): %w", cfg.Protocol, err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "cadence")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("OTel resource: %w", err)
	}
	return &Exporter{exp: exp, res: res}, nil
}

// Shutdown flushes and closes the exporter's connection.
func (e *Exporter) Shutdown(ctx context.Context) error { return e.exp.Shutdown(ctx) }

// Export sends the spans of run runID of the project in dir that are
// complete in the state at target and were not sent before, then records
// in the run's audit log that they were; it returns how many it sent.
// traceparent, when the run has no trace yet (its first export), is the
// W3C traceparent the run started under ("" for none): the run's span
// becomes its child.
func (e *Exporter) Export(ctx context.Context, dir, target, runID, traceparent string) (int, error) {
	store, err := projectid.Open(ctx, dir, target)
	if err != nil {
		return 0, fmt.Errorf("open state %s: %w", target, err)
	}
	defer store.Close()
	var (
		rec  records
		tc   traceContext
		have bool
		sent = map[trace.SpanID]bool{}
	)
	err = store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		rec, err = read(tx, runID)
		if err != nil {
			return err
		}
		tc, have, err = loadTrace(rec.events, sent)
		return err
	})
	if err != nil {
		return 0, err
	}
	if !have {
		tc = newTrace(runID, traceparent)
	}
	tid, err := trace.TraceIDFromHex(tc.TraceID)
	if err != nil {
		return 0, fmt.Errorf("run %s's recorded trace id %q: %w", runID, tc.TraceID, err)
	}
	var todo []spanSpec
	for _, sp := range plan(rec) {
		if !sent[spanID(tid, sp.key)] {
			todo = append(todo, sp)
		}
	}
	if len(todo) == 0 && have {
		return 0, nil
	}
	spans := e.build(ctx, tid, tc.ParentSpanID, todo)
	if len(spans) > 0 {
		if err := e.exp.ExportSpans(ctx, spans); err != nil {
			return 0, fmt.Errorf("export %d spans of run %s: %w", len(spans), runID, err)
		}
	}
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		now, err := tx.Now()
		if err != nil {
			return err
		}
		if !have {
			b, _ := json.Marshal(tc)
			if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: eventTrace, Detail: string(b)}); err != nil {
				return err
			}
		}
		if len(spans) == 0 {
			return nil
		}
		ids := make([]string, len(spans))
		for i, s := range spans {
			ids[i] = s.SpanContext().SpanID().String()
		}
		return tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: eventExported, Detail: strings.Join(ids, " ")})
	})
	if err != nil {
		// Sent but not recorded: the next process sends the same spans
		// again, with the same ids.
		return len(spans), fmt.Errorf("record the spans sent for run %s: %w", runID, err)
	}
	return len(spans), nil
}

// read loads what a run's spans are made of.
func read(tx *checkpoint.Tx, runID string) (records, error) {
	r := records{items: map[string][]checkpoint.Step{}, attempts: map[checkpoint.Unit][]checkpoint.Attempt{},
		approvals: map[checkpoint.Unit]checkpoint.Approval{}}
	var err error
	if r.run, err = tx.Run(runID); err != nil {
		return r, fmt.Errorf("run %s: %w", runID, err)
	}
	if r.steps, err = tx.Steps(runID); err != nil {
		return r, err
	}
	for _, s := range r.steps {
		items, err := tx.Items(runID, s.ID)
		if err != nil {
			return r, err
		}
		if len(items) > 0 {
			r.items[s.ID] = items
		}
	}
	atts, err := tx.AllAttemptsBrief(runID)
	if err != nil {
		return r, err
	}
	for _, a := range atts {
		r.attempts[a.Unit()] = append(r.attempts[a.Unit()], a)
	}
	gates, err := tx.Approvals(runID)
	if err != nil {
		return r, err
	}
	for _, g := range gates {
		r.approvals[g.Unit] = g
	}
	r.events, err = tx.Events(runID)
	return r, err
}

// loadTrace finds the run's recorded trace and fills sent with the span
// ids recorded as sent.
func loadTrace(events []checkpoint.Event, sent map[trace.SpanID]bool) (traceContext, bool, error) {
	var tc traceContext
	have := false
	for _, e := range events {
		switch e.Kind {
		case eventTrace:
			if have {
				continue
			}
			if err := json.Unmarshal([]byte(e.Detail), &tc); err != nil {
				return tc, false, fmt.Errorf("recorded trace of run %s: %w", e.RunID, err)
			}
			have = true
		case eventExported:
			for _, h := range strings.Fields(e.Detail) {
				if id, err := trace.SpanIDFromHex(h); err == nil {
					sent[id] = true
				}
			}
		}
	}
	return tc, have, nil
}

// newTrace is the trace of a run exported for the first time: under
// traceparent when it is a valid one, else one derived from the run id.
func newTrace(runID, traceparent string) traceContext {
	if sc, ok := parseTraceparent(traceparent); ok {
		return traceContext{TraceID: sc.TraceID().String(), ParentSpanID: sc.SpanID().String()}
	}
	return traceContext{TraceID: deriveTraceID(runID).String()}
}

// recorder keeps the spans that end, for one ExportSpans call whose
// error is seen (a span processor's would only be logged).
type recorder struct{ spans []sdktrace.ReadOnlySpan }

func (r *recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorder) OnEnd(s sdktrace.ReadOnlySpan)                   { r.spans = append(r.spans, s) }
func (r *recorder) Shutdown(context.Context) error                  { return nil }
func (r *recorder) ForceFlush(context.Context) error                { return nil }

// build makes the SDK spans of specs with their derived ids, stored
// times, attributes, events and status.
func (e *Exporter) build(ctx context.Context, tid trace.TraceID, remoteParent string, specs []spanSpec) []sdktrace.ReadOnlySpan {
	rec := &recorder{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(e.res), sdktrace.WithIDGenerator(fixedIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeValueLengthLimit: -1, AttributeCountLimit: 128,
			EventCountLimit: 1000, LinkCountLimit: 0, AttributePerEventCountLimit: 16, AttributePerLinkCountLimit: 0}))
	defer tp.Shutdown(context.WithoutCancel(ctx))
	tracer := tp.Tracer("github.com/cadence-dev/cadence")
	for _, sp := range specs {
		parent := context.WithoutCancel(ctx)
		var pid trace.SpanID
		switch {
		case sp.parent != "":
			pid = spanID(tid, sp.parent)
		case remoteParent != "":
			pid, _ = trace.SpanIDFromHex(remoteParent)
		}
		if pid.IsValid() {
			parent = trace.ContextWithSpanContext(parent, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled, Remote: sp.parent == ""}))
		}
		_, span := tracer.Start(withIDs(parent, tid, spanID(tid, sp.key)), validUTF8(sp.name),
			trace.WithTimestamp(sp.start), trace.WithAttributes(validAttrs(sp.attrs)...), trace.WithSpanKind(trace.SpanKindInternal))
		for _, ev := range sp.events {
			span.AddEvent(validUTF8(ev.name), trace.WithTimestamp(ev.at), trace.WithAttributes(validAttrs(ev.attrs)...))
		}
		if sp.err != "" {
			span.SetStatus(codes.Error, validUTF8(sp.err))
		} else {
			span.SetStatus(codes.Ok, "")
		}
		span.End(trace.WithTimestamp(sp.end))
	}
	return rec.spans
}

// validUTF8 replaces invalid UTF-8, which agent output may hold and which
// OTLP's protobuf strings refuse (the whole export would fail), by U+FFFD.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// validAttrs applies validUTF8 to string and string-slice attributes.
func validAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(attrs))
	for i, kv := range attrs {
		switch kv.Value.Type() {
		case attribute.STRING:
			kv = attribute.String(string(kv.Key), validUTF8(kv.Value.AsString()))
		case attribute.STRINGSLICE:
			ss := kv.Value.AsStringSlice()
			for j := range ss {
				ss[j] = validUTF8(ss[j])
			}
			kv = attribute.StringSlice(string(kv.Key), ss)
		}
		out[i] = kv
	}
	return out
}
