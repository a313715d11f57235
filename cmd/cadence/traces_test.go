package main

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// gotSpan is a span as an OTLP receiver decoded it.
type gotSpan struct {
	trace, id, parent string
	name              string
	start, end        time.Time
	attrs             map[string]string
	events            []string
	errStatus         bool
	service           string
}

// receiver is an OTLP trace receiver on loopback, over HTTP (protobuf)
// or gRPC, that decodes every ExportTraceServiceRequest it gets.
type receiver struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []gotSpan
	requests int
}

func (r *receiver) add(req *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				g := gotSpan{trace: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()),
					parent: hex.EncodeToString(s.GetParentSpanId()), name: s.GetName(),
					start: time.Unix(0, int64(s.GetStartTimeUnixNano())), end: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					attrs: attrMap(s.GetAttributes()), errStatus: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					service: service}
				for _, ev := range s.GetEvents() {
					g.events = append(g.events, ev.GetName())
				}
				r.spans = append(r.spans, g)
			}
		}
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range x.ArrayValue.GetValues() {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.GetKey()] = strings.Join(parts, ",")
		}
	}
	return m
}

// Export is the gRPC service.
func (r *receiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	r.add(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is OTLP/HTTP's /v1/traces with a protobuf body.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want protobuf on /v1/traces", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *receiver) snapshot() ([]gotSpan, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gotSpan(nil), r.spans...), r.requests
}

// byName indexes spans by name and, for attempts and steps, the step id
// and attempt number.
func spanIndex(spans []gotSpan) map[string]gotSpan {
	m := map[string]gotSpan{}
	for _, s := range spans {
		k := s.name
		if n := s.attrs["cadence.attempt.n"]; n != "" {
			k = "attempt " + n + " of " + s.parentStep(spans)
		}
		m[k] = s
	}
	return m
}

func (s gotSpan) parentStep(spans []gotSpan) string {
	for _, p := range spans {
		if p.id == s.parent {
			return p.attrs["cadence.step.id"]
		}
	}
	return "?"
}

const tracedWorkflow = `version: 1
name: traced
defaults: {agent: sim, retry: {max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}}
agents: {sim: {preset: sim, scenario: scenario.yaml}}
steps:
  - {id: plan, prompt: plan, handoff: {schema: s.json}}
  - id: gate
    needs: [plan]
    approval: {prompt: 'ship it?'}
  - id: review
    needs: [gate]
    loop:
      max_iterations: 2
      until: steps.check.output.ok
      steps:
        - {id: check, prompt: check}
  - id: each
    needs: [review]
    prompt: 'item {{ .Item.Key }}'
    map:
      items: {file: items.json}
`

var tracedFiles = map[string]string{
	"items.json": `["a", "b"]`,
	"s.json":     `{"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}`,
	"scenario.yaml": `steps:
  plan:
    - {answer: '{"ok": "yes"}', cost_usd: 0.5, input_tokens: 100, output_tokens: 10}
    - {answer: '{"ok": true}', cost_usd: 0.25, input_tokens: 200, output_tokens: 20}
  check:
    - answer: '{"ok": true}'
  each:
    - answer: '{"ok": true}'
`,
}

// TestTracesHTTP: a run that stops at a gate exports its finished
// attempts and steps under the TRACEPARENT it started with; the resume
// after the answer (with another TRACEPARENT, which it ignores) exports
// the rest, the run's span last, in the same trace: every span once,
// every parent among them or the caller's span, times as stored.
func TestTracesHTTP(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_SERVICE_NAME="}

	p := newProject(t, tracedWorkflow, tracedFiles)
	p.cadence(append(otel, "TRACEPARENT="+caller), "run").exits(t, exitAwaiting)
	first, _ := rcv.snapshot()
	idx := spanIndex(first)
	if len(first) != 3 {
		t.Fatalf("after the gate: %d spans, want plan's two attempts and plan: %+v", len(first), first)
	}
	for _, s := range first {
		if s.trace != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("span %s in trace %s, want TRACEPARENT's", s.name, s.trace)
		}
		if s.service != "cadence" {
			t.Errorf("span %s of service %q", s.name, s.service)
		}
	}
	a1 := idx["attempt 1 of plan"]
	if a1.attrs["cadence.class"] != "schema" || !a1.errStatus || a1.attrs["cadence.agent"] != "sim" ||
		a1.attrs["gen_ai.usage.input_tokens"] != "100" || a1.attrs["gen_ai.usage.output_tokens"] != "10" ||
		a1.attrs["cadence.cost_usd"] != "0.5" || a1.attrs["cadence.session.id"] == "" {
		t.Errorf("plan's first attempt: %+v", a1)
	}
	if !contains(a1.events, "retry scheduled") {
		t.Errorf("plan's first attempt has events %v, want its retry", a1.events)
	}
	if a2 := idx["attempt 2 of plan"]; a2.errStatus || a2.attrs["cadence.attempt.status"] != "succeeded" || a2.attrs["cadence.cost_usd"] != "0.25" {
		t.Errorf("plan's second attempt: %+v", a2)
	}
	rep := p.inspect()
	stored := step(rep, "plan").Attempts[0]
	if !a1.start.Equal(stored.StartedAt) || !a1.end.Equal(*stored.FinishedAt) {
		t.Errorf("attempt span %s–%s, stored %s–%s", a1.start, a1.end, stored.StartedAt, *stored.FinishedAt)
	}

	p.cadence(append(otel, "TRACEPARENT=00-11111111111111111111111111111111-2222222222222222-01"), "approve", "gate", "--resume").exits(t, 0)
	// A later resume of the finished run, or an inspect, sends nothing more.
	p.cadence(otel, "resume").exits(t, exitUsage)
	all, _ := rcv.snapshot()
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.id] {
			t.Errorf("span %s (%s) sent twice", s.id, s.name)
		}
		seen[s.id] = true
		if s.trace != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("span %s in trace %s after the resume", s.name, s.trace)
		}
		if !s.end.After(s.start) && !s.end.Equal(s.start) {
			t.Errorf("span %s ends before it starts", s.name)
		}
	}
	for _, s := range all {
		if s.parent != "b7ad6b7169203331" && !seen[s.parent] {
			t.Errorf("span %s has parent %s, which was not sent", s.name, s.parent)
		}
	}
	idx = spanIndex(all)
	run, ok := idx["cadence run"]
	if !ok || run.parent != "b7ad6b7169203331" || run.attrs["cadence.run.status"] != "succeeded" {
		t.Fatalf("run span %+v", run)
	}
	if !contains(run.events, "run_resumed") || !contains(run.events, "gate_approved") {
		t.Errorf("run span events %v, want the resume and the answer", run.events)
	}
	gate := idx["cadence step gate"]
	if gate.parent != run.id || !contains(gate.events, "approval requested") || !contains(gate.events, "approval approved") {
		t.Errorf("gate span %+v", gate)
	}
	loop, iter, inner := idx["cadence step review"], idx["cadence step review/1"], idx["cadence step review/1/check"]
	if loop.parent != run.id || iter.parent != loop.id || inner.parent != iter.id {
		t.Errorf("loop spans not nested: review %s←%s, review/1 %s←%s, review/1/check %s←%s",
			loop.id, loop.parent, iter.id, iter.parent, inner.id, inner.parent)
	}
	if att := idx["attempt 1 of review/1/check"]; att.parent != inner.id {
		t.Errorf("check's attempt %+v not under its step", att)
	}
	each := idx["cadence step each"]
	var items []gotSpan
	for _, s := range all {
		if s.name == "cadence item each" {
			items = append(items, s)
		}
	}
	if each.parent != run.id || len(items) != 2 {
		t.Errorf("map step %+v with %d item spans, want 2", each, len(items))
	}
	for _, it := range items {
		if it.parent != each.id || it.attrs["cadence.step.status"] != "succeeded" {
			t.Errorf("item span %+v not under its step", it)
		}
		n := 0
		for _, s := range all {
			if s.parent == it.id && s.name == "cadence attempt" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("item %s has %d attempt spans, want 1", it.attrs["cadence.item.key"], n)
		}
	}
	if len(all) != 14 {
		t.Errorf("%d spans in all, want 14 (run, plan + 2 attempts, gate, review, review/1, check + 1 attempt, each, 2 items + 2 attempts): %v", len(all), names(all))
	}
}

// TestTracesOff: with no OTLP endpoint set, nothing is sent.
func TestTracesOff(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	p := newProject(t, tracedWorkflow, tracedFiles)
	p.cadence([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "run").exits(t, exitAwaiting)
	p.cadence([]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + srv.URL + "/v1/traces", "OTEL_SDK_DISABLED=true"}, "approve", "gate", "--resume").exits(t, 0)
	if _, n := rcv.snapshot(); n != 0 {
		t.Errorf("%d export requests without an endpoint", n)
	}
}

// TestTracesGRPC: over gRPC, a run without TRACEPARENT gets a trace of
// its own, the same for all its spans; an endpoint that refuses is a
// warning, the exit code is the run's, and the next process sends what
// was left.
func TestTracesGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &receiver{}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, rcv)
	go gs.Serve(lis)
	defer gs.Stop()

	p := newProject(t, tracedWorkflow, tracedFiles)
	// Nothing listens there: the run goes on, the spans wait.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	r := p.cadence([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + deadAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_TIMEOUT=2000"}, "run")
	r.exits(t, exitAwaiting)
	if !strings.Contains(r.stderr, "cadence: traces: export 3 spans of run") {
		t.Errorf("no warning of the failed export:\n%s", r.stderr)
	}
	otel := []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://" + lis.Addr().String(), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"}
	p.cadence(otel, "approve", "gate", "--resume").exits(t, 0)
	spans, _ := rcv.snapshot()
	if len(spans) != 14 {
		t.Fatalf("%d spans over gRPC, want all 14: %v", len(spans), names(spans))
	}
	for _, s := range spans {
		if s.trace != spans[0].trace || s.trace == "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("span %s in trace %s, want the run's own %s", s.name, s.trace, spans[0].trace)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func names(spans []gotSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.name+" "+s.attrs["cadence.step.status"])
	}
	return out
}
