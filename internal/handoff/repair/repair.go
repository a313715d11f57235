package repair

import (
	"bytes"
	"fmt"
)

// defaultMaxDepth bounds nesting when Options.MaxDepth is not set: the limit
// of encoding/json, which decodes every value repaired. The parser keeps
// one byte a level on an explicit stack and reads each byte once, so depth
// costs neither stack frames nor time.
const defaultMaxDepth = 10000

// Options tunes a repair.
type Options struct {
	// MaxDepth is the deepest nesting of objects and arrays accepted;
	// 0 (or less) means 10000. Deeper input is an *Error.
	MaxDepth int
}

func (o Options) maxDepth() int {
	if o.MaxDepth <= 0 {
		return defaultMaxDepth
	}
	return o.MaxDepth
}

// Result is one value recovered from the input.
type Result struct {
	// JSON is the value as compact, strictly valid JSON.
	JSON []byte
	// Repairs names the repairs applied, each once, in order of first
	// application; it is empty for valid input. Repairs that concern the
	// input as a whole (bom, code_fence, prose, concatenated) come first.
	Repairs []string
	// Truncated is set when the value was only obtained by closing input
	// that ended inside it.
	Truncated bool
	// Start and End are the offsets in the input of the value's first
	// byte and just past its last, so that a caller can tell where it was
	// found (the whole input, a fence, prose). A list gathered from
	// several values spans all of them.
	Start, End int
}

// Repair returns the handoff in input: the last complete top-level value,
// preferring the content of a ```json fence and objects over arrays, or the
// truncated value closed when there is no complete one. The error is an
// *Error for JSON that cannot be repaired, or wraps ErrNoJSON.
func Repair(input []byte, opts Options) (Result, error) {
	var best *candidate
	var spare []byte
	s := newScanner(input, opts)
	s.fresh = func(start int) []byte {
		if need := outputCap(len(input) - start); cap(spare) < need {
			spare = make([]byte, 0, need)
		}
		return spare[:0]
	}
	// Several complete values, one a line or separated by commas, with
	// nothing but comments between them (NDJSON, a MongoDB export) are one
	// list: they are gathered into an array, so that none is lost.
	var list listBuilder
	s.emit = func(c *candidate) {
		list.add(input, best, c)
		if best != nil && !c.supersedes(best) {
			spare = c.json
			return
		}
		// A small winner is copied so the large buffer is reused for the
		// values after it (think NDJSON); a large one keeps its buffer.
		if len(c.json) < cap(c.json)/4 {
			spare = c.json
			c.json = bytes.Clone(c.json)
		} else {
			spare = nil
		}
		best = c
	}
	if err := s.run(); err != nil {
		return Result{}, err
	}
	if best == nil {
		return Result{}, s.notFound()
	}
	if list.done(input, s.found) {
		return s.listResult(&list), nil
	}
	r := s.result(best)
	if s.found > 1 && !s.prose {
		r.Repairs = withDocRepair(r.Repairs, idConcatenated)
	}
	return r, nil
}

// RepairAll returns every top-level value in input, in order. Strictly
// valid input yields exactly one.
func RepairAll(input []byte, opts Options) ([]Result, error) {
	var found []*candidate
	s := newScanner(input, opts)
	var scratch []byte
	s.fresh = func(start int) []byte {
		if need := outputCap(len(input) - start); cap(scratch) < need {
			scratch = make([]byte, 0, need)
		}
		return scratch[:0]
	}
	s.emit = func(c *candidate) {
		scratch = c.json
		c.json = bytes.Clone(c.json)
		found = append(found, c)
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, s.notFound()
	}
	out := make([]Result, len(found))
	for i, c := range found {
		out[i] = s.result(c)
	}
	return out, nil
}

// outputCap is the buffer size for repairing n bytes of input. The output
// is rarely longer than the input (escaping raw control characters is the
// exception); when it is, append grows the buffer.
func outputCap(n int) int { return n + n/16 + 64 }

// bom is the UTF-8 byte order mark some editors and agents emit.
var bom = []byte{0xEF, 0xBB, 0xBF}

// docScanner wraps a scanner with the input-wide facts results need.
type docScanner struct {
	scanner
	input    []byte
	bodyAt   int
	maxDepth int
}

func newScanner(input []byte, opts Options) *docScanner {
	d := &docScanner{input: input, maxDepth: opts.maxDepth()}
	if bytes.HasPrefix(input, bom) {
		d.bodyAt = len(bom)
	}
	d.in = input
	d.p = parser{in: input, maxDepth: d.maxDepth, docStart: skipWS(input, d.bodyAt)}
	return d
}

// run scans the whole input and converts a fatal failure to an *Error.
func (d *docScanner) run() error {
	if err := d.scan(d.bodyAt); err != nil {
		return newError(d.input, err.off, err.msg())
	}
	return nil
}

// notFound is the error when no value was found.
func (d *docScanner) notFound() error {
	if d.failed {
		return newError(d.input, d.err.off, d.err.msg())
	}
	return fmt.Errorf("%w in %d bytes of input", ErrNoJSON, len(d.input))
}

// result turns a candidate into a Result, adding the input-wide repairs.
func (d *docScanner) result(c *candidate) Result {
	if c.kind == '"' && !c.truncated {
		decodeStringJSON(c, d.maxDepth)
	}
	var reps repairSet
	if d.bodyAt > 0 {
		reps.add(idBOM)
	}
	if c.fence != fenceNone {
		reps.add(idCodeFence)
	}
	if d.prose {
		reps.add(idProse)
	}
	reps.merge(c.reps)
	return Result{JSON: c.json, Repairs: reps.names(), Truncated: c.truncated, Start: c.start, End: c.end}
}

// withDocRepair inserts an input-wide repair after the others of its kind
// (bom, code_fence, prose), ahead of the value's own repairs.
func withDocRepair(list []string, id repairID) []string {
	at := 0
	for at < len(list) && (list[at] == BOM || list[at] == CodeFence || list[at] == Prose) {
		at++
	}
	out := make([]string, 0, len(list)+1)
	out = append(out, list[:at]...)
	out = append(out, names[id])
	return append(out, list[at:]...)
}

// listBuilder gathers the top-level values of an input into one array
// while they may still form a list.
type listBuilder struct {
	json   []byte
	reps   repairSet
	ok     bool // every value so far is complete, outside fences, and the gaps are list gaps
	first  int  // where the first value starts
	lastAt int  // where the last value ends
}

// add takes the value c, found after prev (nil for the first).
func (l *listBuilder) add(input []byte, prev, c *candidate) {
	if prev == nil {
		l.ok = !c.truncated && c.fence == fenceNone
		l.first, l.lastAt = c.start, c.end
		l.reps = c.reps
		return
	}
	if !l.ok {
		return
	}
	ok, sep := listGap(input[l.lastAt:c.start])
	if !ok || !sep || c.truncated || c.fence != fenceNone {
		l.ok = false
		l.json = nil
		return
	}
	if l.json == nil {
		l.json = append(append(make([]byte, 0, len(prev.json)+len(c.json)+16), '['), prev.json...)
	}
	l.json = append(append(l.json, ','), c.json...)
	l.reps.merge(c.reps)
	l.lastAt = c.end
}

// done reports whether the input was such a list of found values.
func (l *listBuilder) done(input []byte, found int) bool {
	if !l.ok || found < 2 || l.json == nil {
		return false
	}
	head, _ := listGap(bytes.TrimPrefix(input[:l.first], bom))
	tail, _ := listGap(input[l.lastAt:])
	return head && tail
}

// listResult is the result for a list of values.
func (d *docScanner) listResult(l *listBuilder) Result {
	var reps repairSet
	if d.bodyAt > 0 {
		reps.add(idBOM)
	}
	reps.add(idConcatenated)
	reps.merge(l.reps)
	return Result{JSON: append(l.json, ']'), Repairs: reps.names(), Start: l.first, End: l.lastAt}
}
