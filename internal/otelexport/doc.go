// Package otelexport sends a run's history to an OpenTelemetry collector
// as traces (SPEC §20): a span for the run, one for each step instance
// (loop iterations and their inner steps, map items) and one for each
// attempt, with the agent, session, failure class, cost, tokens and
// repairs as attributes, and events for waits and decisions.
//
// It exports from the stored records, not from the run loop: at the end
// of each `cadence run` or `cadence resume` process, the spans that are
// complete in the state (an attempt that finished, a step instance that
// reached its final status, the run once it ended) and were not exported
// before are built with their stored start and end times and sent. The
// run loop stays untouched and pays nothing, and a process killed before
// it exports loses nothing: the next process of the run finds the same
// spans unexported and sends them.
//
// Span ids are derived from the trace id and the span's place in the run
// (a step's path, an item's key, an attempt's number), so a span sent
// twice (a process killed between sending and recording that it sent) is
// the same span, and a child may be sent before its parent. The trace id
// is derived from the run id, or taken from TRACEPARENT when the run
// started with one; either way it is recorded in the run's audit log, so
// every resume continues the same trace.
package otelexport
