package handoff

import (
	"bytes"
	"fmt"

	"github.com/cadence-dev/cadence/internal/handoff/extract"
	"github.com/cadence-dev/cadence/internal/handoff/provenance"
)

// DefaultWindow is how much of the end of a long output a Stream keeps for
// repair and diagnosis. Output up to this size is judged exactly as Check
// judges it. An agent's answer is kilobytes; 4 MiB of the end of its output
// holds it with room to spare, and keeps a Stream's memory small.
const DefaultWindow = 4 << 20

// Stream runs the handoff pipeline on output that arrives in pieces, such as
// a text agent's stdout while the agent runs, in memory bounded by the
// window and by the largest JSON value in the output, not by the output's
// length (a chatty agent may print a gigabyte of log before its answer).
//
// Output that fits in the window is kept whole and judged by Check, so
// nothing changes for it. Once the output outgrows the window, the strictly
// valid values are extracted as they stream past and only two are kept:
// the last one, and the last one that satisfies the schema. The window
// then holds only the end of the output (cut at a line start): that is
// where an agent's final answer is, and where repair and the diagnosis of a
// broken answer look. Positions in a diagnosis are still counted from the
// start of the whole output.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	schema *Schema
	opts   Options
	window int

	buf     []byte // the whole output, or its end once it outgrew the window
	head    []byte // the first sampleLen bytes of the output
	total   int64
	dropped int // lines wholly dropped from the front of buf

	scanner   *extract.Scanner // nil until the output outgrows the window
	last      *candidate       // the last strictly valid value
	lastValid *candidate       // the last strictly valid value that satisfies the schema
}

// NewStream returns a Stream that judges against schema (nil accepts any
// value) with opts, keeping window bytes of the end of a long output
// (DefaultWindow when window <= 0).
func NewStream(schema *Schema, opts Options, window int) *Stream {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Stream{schema: schema, opts: opts, window: window}
}

// Write adds the next piece of output. It never fails, so that a Stream can
// stand behind an io.MultiWriter.
func (s *Stream) Write(p []byte) (int, error) {
	if n := min(len(p), sampleLen-len(s.head)); n > 0 {
		s.head = append(s.head, p[:n]...)
	}
	s.total += int64(len(p))
	if s.scanner == nil && len(s.buf)+len(p) > s.window {
		// From here on buf is a window of the output's end: it is
		// trimmed instead of grown.
		s.scanner = extract.NewScanner(extract.Options{MaxBytes: s.opts.MaxBytes, MaxDepth: s.opts.MaxDepth}, s.value, nil)
		_, _ = s.scanner.Write(s.buf) // what came before, once
	}
	if s.scanner != nil {
		_, _ = s.scanner.Write(p)
		if len(s.buf)+len(p) > cap(s.buf) {
			s.trim()
		}
	}
	if n := len(s.buf) + len(p); n > cap(s.buf) && n > s.window/4 {
		// An output a quarter of the window long may well outgrow it:
		// the buffer takes the size it keeps from then on at once,
		// instead of doubling its way there and leaving each smaller
		// copy to the collector. A chatty agent's gigabyte then holds
		// one buffer of a window and a half.
		grown := make([]byte, len(s.buf), max(n, s.window+s.window/2+max(len(p), 64<<10)))
		copy(grown, s.buf)
		s.buf = grown
	}
	s.buf = append(s.buf, p...)
	return len(p), nil
}

// trim drops the front of buf, keeping at most window bytes that start at a
// line start, so that lines and columns in the rest stay countable.
func (s *Stream) trim() {
	cut := len(s.buf) - s.window
	if cut <= 0 {
		return // a piece bigger than the buffer's room follows: buf grows
	}
	if i := bytes.IndexByte(s.buf[cut:], '\n'); i >= 0 {
		cut += i + 1
	} // else one line longer than the window: its end is kept, columns shift

	s.dropped += bytes.Count(s.buf[:cut], []byte{'\n'})
	s.buf = append(s.buf[:0], s.buf[cut:]...)
}

// value keeps a strictly valid value found in a long output.
func (s *Stream) value(v extract.Value) {
	c, ok := newCandidate(v.Data, nil, false, s.schema)
	if !ok {
		return
	}
	// The fences and code spans of a long output are not kept: a value
	// found as it streams past is held to the rules of prose, where code
	// is not told apart (docs/repair-policy.md).
	c.start, c.end = int(v.Offset), int(v.Offset)+len(v.Data)
	c.place = provenance.Place{Kind: provenance.Prose}
	if admit(c, s.schema) != nil {
		return
	}
	s.last = &c
	if len(c.violations) == 0 {
		s.lastValid = &c
	}
}

// Len is the number of bytes written so far.
func (s *Stream) Len() int64 { return s.total }

// Result judges the output written so far, as Check judges a whole output.
func (s *Stream) Result() Result {
	if s.opts.MaxBytes > 0 && s.total > s.opts.MaxBytes {
		return failed(tooLargeDiagnosis(s.total, s.opts.MaxBytes))
	}
	if s.scanner == nil {
		return Check(s.buf, s.schema, s.opts)
	}
	s.scanner.Close()
	if s.lastValid != nil {
		return accepted(*s.lastValid)
	}
	if len(s.buf) > s.window {
		s.trim()
	}
	r := Check(s.buf, s.schema, s.opts)
	if r.OK {
		return r
	}
	if r.Diagnosis.Class != ClassSchema && s.last != nil {
		// The window holds no value that parses; an earlier one did.
		r = rejectedOrCoerced(s.head, s.schema, *s.last, s.opts)
		if r.OK {
			return r
		}
	}
	s.wholeOutput(r.Diagnosis)
	return r
}

// wholeOutput restates a diagnosis of the window in terms of the whole
// output: its size, its first bytes, and lines counted from its start.
func (s *Stream) wholeOutput(d *Diagnosis) {
	d.OutputSize = s.total
	d.OutputSample = string(cutBytes(s.head, sampleLen))
	if d.Line > 0 {
		d.Line += s.dropped
	}
	if d.Class == ClassEmpty {
		d.Details = fmt.Sprintf("No JSON value was found in the %d bytes of output.", s.total)
	}
}
