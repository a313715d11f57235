package otelexport

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		ok       bool
		protocol string
		err      string
	}{
		{"nothing set", nil, false, "", ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, true, "http/protobuf", ""},
		{"traces endpoint, grpc", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, "grpc", ""},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, "http/protobuf", ""},
		{"protocol alone", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "", ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false, "", ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false, "", ""},
		{"exporter zipkin", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "zipkin"}, false, "", "OTEL_TRACES_EXPORTER=zipkin"},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "", `"http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, ok, err := FromEnv(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok || cfg.Protocol != tc.protocol {
				t.Errorf("got %+v %v %v, want protocol %q ok %v", cfg, ok, err, tc.protocol, tc.ok)
			}
		})
	}
}

func TestParseTraceparent(t *testing.T) {
	for _, tc := range []struct {
		in, trace, span string
		ok              bool
	}{
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true},
		{" 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\n", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", "", "", false},
		{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "", "", false},
		{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "", false},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "", "", false},
		{"00-XYZ7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "", false},
		{"", "", "", false},
	} {
		sc, ok := parseTraceparent(tc.in)
		if ok != tc.ok || ok && (sc.TraceID().String() != tc.trace || sc.SpanID().String() != tc.span) {
			t.Errorf("parseTraceparent(%q) = %v %v, want %s %s %v", tc.in, sc, ok, tc.trace, tc.span, tc.ok)
		}
	}
	sc, _ := parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if got := traceparent(sc); got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent round trip: %s", got)
	}
}

// TestIDsDeterministic: the same run and key give the same ids in every
// process; another run or key another.
func TestIDsDeterministic(t *testing.T) {
	a, b := deriveTraceID("20261127-1"), deriveTraceID("20261127-2")
	if a != deriveTraceID("20261127-1") || a == b || !a.IsValid() {
		t.Fatalf("trace ids %s %s", a, b)
	}
	keys := []string{runKey, rowKey("plan"), rowKey("review/1"), itemKey("fix", "a"), itemKey("fix", "b"),
		attemptKey(checkpoint.Attempt{StepID: "plan", N: 1}), attemptKey(checkpoint.Attempt{StepID: "plan", N: 2}),
		attemptKey(checkpoint.Attempt{StepID: "fix", ItemKey: "a", N: 1})}
	seen := map[string]string{}
	for _, k := range keys {
		id := spanID(a, k)
		if id != spanID(a, k) || !id.IsValid() {
			t.Errorf("span id of %q not stable", k)
		}
		if other, dup := seen[id.String()]; dup {
			t.Errorf("keys %q and %q share span id %s", k, other, id)
		}
		seen[id.String()] = k
		if spanID(b, k) == id {
			t.Errorf("key %q has the same span id in two traces", k)
		}
	}
}

// TestPlanCompleteOnly: only finished attempts, units in a final status
// and an ended run become spans; a map item's spans hang under its step.
func TestPlanCompleteOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	u := func(step, item string) checkpoint.Unit { return checkpoint.Unit{RunID: "r", StepID: step, Item: item} }
	states := checkpointtest.New(t)
	rec := records{
		run: new(states.Run(checkpoint.Run{ID: "r", StartedAt: t0}, checkpoint.RunRunning)),
		steps: []checkpoint.Step{
			states.Step(checkpoint.Step{RunID: "r", ID: "plan", UpdatedAt: *at(3 * time.Second)}, checkpoint.StepSucceeded),
			states.Step(checkpoint.Step{RunID: "r", ID: "fix", UpdatedAt: *at(4 * time.Second)}, checkpoint.StepRunning),
		},
		items: map[string][]checkpoint.Step{"fix": {
			states.Step(checkpoint.Step{RunID: "r", ID: "fix", ItemKey: "a", UpdatedAt: *at(6 * time.Second)}, checkpoint.StepFailed),
			states.Step(checkpoint.Step{RunID: "r", ID: "fix", ItemKey: "b", UpdatedAt: *at(6 * time.Second)}, checkpoint.StepRunning),
		}},
		attempts: map[checkpoint.Unit][]checkpoint.Attempt{
			u("plan", ""): {states.Attempt(checkpoint.Attempt{RunID: "r", StepID: "plan", N: 1, StartedAt: t0, FinishedAt: at(2 * time.Second)},
				checkpoint.AttemptSucceeded)},
			u("fix", "a"): {states.Attempt(checkpoint.Attempt{RunID: "r", StepID: "fix", ItemKey: "a", N: 1, Class: "schema", Error: "bad\nmore",
				StartedAt: *at(4 * time.Second), FinishedAt: at(5 * time.Second)}, checkpoint.AttemptFailed)},
			u("fix", "b"): {states.Attempt(checkpoint.Attempt{RunID: "r", StepID: "fix", ItemKey: "b", N: 1, StartedAt: *at(4 * time.Second)},
				checkpoint.AttemptRunning)},
		},
	}
	got := map[string]spanSpec{}
	for _, sp := range plan(rec) {
		got[sp.key] = sp
	}
	want := map[string]string{ // key → parent key
		attemptKey(checkpoint.Attempt{StepID: "plan", N: 1}): rowKey("plan"),
		rowKey("plan"): runKey,
		attemptKey(checkpoint.Attempt{StepID: "fix", ItemKey: "a", N: 1}): itemKey("fix", "a"),
		itemKey("fix", "a"): rowKey("fix"),
	}
	if len(got) != len(want) {
		t.Fatalf("%d spans, want %d: %v", len(got), len(want), got)
	}
	for k, parent := range want {
		if sp, ok := got[k]; !ok || sp.parent != parent {
			t.Errorf("span %q: %+v, want parent %q", k, sp, parent)
		}
	}
	item := got[itemKey("fix", "a")]
	if item.err != "schema: bad" || !item.start.Equal(*at(4 * time.Second)) || !item.end.Equal(*at(6 * time.Second)) {
		t.Errorf("failed item span %+v", item)
	}
	rec.run = new(states.Run(checkpoint.Run{ID: "r", StartedAt: t0, FinishedAt: at(7 * time.Second)}, checkpoint.RunFailed))
	rec.events = []checkpoint.Event{{Kind: "run_stopped", At: *at(time.Second)}, {Kind: eventExported, Detail: "x"}}
	var run *spanSpec
	for _, sp := range plan(rec) {
		if sp.key == runKey {
			run = &sp
		}
	}
	if run == nil || run.err == "" || len(run.events) != 1 || run.events[0].name != "run_stopped" {
		t.Errorf("ended run's span %+v, want an error status and the audit log but the exporter's own records", run)
	}
}

// TestBuildValidUTF8: agent text that is not UTF-8 reaches the spans as
// valid UTF-8, which OTLP's protobuf requires of every string.
func TestBuildValidUTF8(t *testing.T) {
	bad := "exit \xff\xfe ok"
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	e := &Exporter{res: resource.Empty()}
	spans := e.build(context.Background(), deriveTraceID("r"), "", []spanSpec{{key: "k", name: "step " + bad, start: t0, end: t0,
		attrs:  []attribute.KeyValue{attribute.String("cadence.class", bad), attribute.StringSlice("cadence.repairs", []string{bad})},
		events: []eventSpec{{name: bad, at: t0, attrs: []attribute.KeyValue{attribute.String("cadence.warning", bad)}}},
		err:    bad}})
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	strs := []string{s.Name(), s.Status().Description, s.Events()[0].Name}
	for _, kv := range append(s.Attributes(), s.Events()[0].Attributes...) {
		strs = append(strs, kv.Value.Emit())
	}
	for _, x := range strs {
		if !utf8.ValidString(x) || !strings.Contains(x, "exit \uFFFD ok") {
			t.Errorf("%q: want valid UTF-8 with the bad bytes replaced", x)
		}
	}
}
