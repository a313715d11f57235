package otelexport

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is what the standard OTEL_* variables ask for.
type Config struct {
	// Protocol is grpc or http/protobuf.
	Protocol string
}

// FromEnv reads the exporter's configuration through getenv. ok is false
// when no OTLP endpoint is set, or the SDK or trace export is switched
// off (OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none): then nothing
// is exported. An unsupported protocol is an error naming it.
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return Config{}, false, nil
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Config{}, false, nil
	}
	switch e := getenv("OTEL_TRACES_EXPORTER"); e {
	case "", "otlp":
	case "none":
		return Config{}, false, nil
	default:
		return Config{}, false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: cadence exports traces with otlp only (or none)", e)
	}
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return Config{Protocol: "http/protobuf"}, true, nil
	case "grpc":
		return Config{Protocol: "grpc"}, true, nil
	}
	return Config{}, false, fmt.Errorf("OTLP protocol %q: cadence exports with grpc or http/protobuf", p)
}

// newExporter makes the OTLP exporter of the protocol; the exporters read
// the endpoint, headers, timeout, compression and TLS settings from the
// OTEL_EXPORTER_OTLP_* variables themselves.
func newExporter(ctx context.Context, cfg Config) (sdktrace.SpanExporter, error) {
	if cfg.Protocol == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}
