// Package extract finds the JSON values an agent embeds in its output.
//
// Agent output mixes prose, markdown fences, log lines and JSON, and it
// arrives in chunks of arbitrary size. A Scanner is an io.Writer that reads
// that stream once and reports every top-level JSON object and array in it,
// in order, together with the malformed candidates it recovered from and the
// values it had to drop for being too large or too deeply nested.
//
// A candidate starts at any '{' or '[' seen outside another candidate. From
// there a strict RFC 8259 state machine follows the bytes: strings and their
// escapes, numbers, literals and nesting, so brackets inside strings never
// count. A candidate that completes is emitted with its exact bytes; one
// that turns out malformed (a "[INFO]" log prefix, a "{see below}" in prose)
// is reported and scanning restarts at the byte after its opening bracket,
// so "[see {"a":1}]" still yields {"a":1}.
//
// Memory is bounded regardless of stream length: prose is skipped without
// being buffered, only the current candidate is kept (at most
// Options.MaxBytes), and the results do not depend on how the stream was cut
// into chunks.
package extract
