package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/otelexport"
)

// exportTraces sends the run's spans that are complete and not yet sent
// to the OTLP endpoint of the OTEL_EXPORTER_OTLP_* variables (SPEC §20);
// without them it does nothing. A failure is a warning: the spans stay
// unsent, and the run's next process sends them.
func exportTraces(e *env, dir, state, runID, traceparent string) {
	cfg, ok, err := otelexport.FromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "cadence: traces not exported: %v\n", err)
		return
	}
	if !ok {
		return
	}
	// The process may be ending on a signal: export anyway, briefly.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 30*time.Second)
	defer cancel()
	exp, err := otelexport.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "cadence: traces not exported: %v\n", err)
		return
	}
	defer exp.Shutdown(ctx)
	if _, err := exp.Export(ctx, dir, history.StateTarget(dir, state), runID, traceparent); err != nil {
		fmt.Fprintf(e.stderr, "cadence: traces: %v\n", err)
	}
}
