package otelexport

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// deriveTraceID is the trace id of a run that started without a
// TRACEPARENT: a function of the run id alone.
func deriveTraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte("cadence trace\x00" + runID))
	var id trace.TraceID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// spanID is the id of the span at key in the trace: the same key in the
// same trace is always the same span.
func spanID(tid trace.TraceID, key string) trace.SpanID {
	h := sha256.New()
	h.Write(tid[:])
	h.Write([]byte(key))
	var id trace.SpanID
	copy(id[:], h.Sum(nil))
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// parseTraceparent reads a W3C traceparent header value
// (00-TRACEID-SPANID-FLAGS); ok is false for anything else.
func parseTraceparent(s string) (trace.SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	if len(parts) != 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags byte
	if _, err := fmt.Sscanf(parts[3], "%02x", &flags); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags), Remote: true})
	return sc, sc.IsValid()
}

// traceparent formats a span context as a W3C traceparent value.
func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// fixedIDs is an sdktrace.IDGenerator that gives each span the ids put in
// its start context by withIDs, so that spans built from the stored
// records get their derived ids.
type fixedIDs struct{}

type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{tid, sid})
}

func (fixedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.trace, v.span
}

func (fixedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.span
}
