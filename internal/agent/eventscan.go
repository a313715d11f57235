package agent

import "bytes"

// An agent's transcript is one JSON event a line, and a line can be tens of
// megabytes: a tool result holding a whole file, a write whose input is
// one. eventScanner parses a line as its bytes arrive, keeping only the
// fields the protocol reads (a few short strings, the final answer), so
// that memory never depends on the length of a line or of the transcript.
//
// It checks the grammar of the line (objects, arrays, strings, separators)
// but not the spelling of what it skips: a number or literal that is not
// captured is taken as written, and so are the escapes inside a skipped
// string. Captured values are decoded later by encoding/json, which checks
// them fully. A line whose grammar breaks is not an event.

// capture names a field to keep: a path of keys from the top-level object,
// "*" standing for every element of an array, and the most raw bytes of
// the value to keep.
type capture struct {
	path  []string
	limit int
	// decoded, when positive, marks a string whose decoded length matters
	// up to this many bytes: once the value is sure to decode to more, it
	// is no longer kept (field.over), whatever the limit.
	decoded int64
}

// field is one captured value.
type field struct {
	raw  []byte // the value's raw JSON, or its first limit bytes
	over bool   // the value was longer than the capture's limit
	size int64  // the value's whole raw length
	elem int    // the element it belongs to, for a path with "*" (innermost); else -1
}

// scanState is where the scanner is in the grammar.
type scanState uint8

const (
	scTop        scanState = iota // before the top-level '{'
	scKeyOrEnd                    // after '{': a key or '}'
	scKey                         // after ',' in an object: a key
	scKeyStr                      // in a key
	scColon                       // after a key: ':'
	scValue                       // a value
	scValueOrEnd                  // after '[': a value or ']'
	scStr                         // in a string value
	scScalar                      // in a number or literal
	scAfter                       // after a value: ',' or the closer
	scEnd                         // after the top-level '}': only white space
	scBad                         // the grammar broke; the rest of the line is ignored
)

// maxKey is the longest key kept for matching; longer keys match nothing.
const maxKey = 64

type scanFrame struct {
	obj   bool
	key   []byte // the current member's key (objects), if at most maxKey bytes
	long  bool   // the current key is longer than maxKey
	index int    // the current element's index (arrays)
}

type eventScanner struct {
	caps    []capture
	maxPath int
	fields  [][]field // per capture, in document order

	st    scanState
	stack []scanFrame
	esc   bool // the last byte read in a string was an unescaped backslash

	cap      int // the capture in progress, or -1
	capDepth int // the stack depth at which the captured value began
	capFrom  int // index in the current chunk where its bytes resume, or -1
	capBuf   []byte
	// capMore holds what a long captured value adds past capBuf's first
	// capChunk bytes, in blocks of capChunk that are never copied while
	// the value grows: a final answer that turns out too large is dropped
	// having cost what it kept, not twice that in growing copies.
	capMore  [][]byte
	capSize  int64
	capSlash int64 // backslashes in the captured value so far
	capElem  int
	pathBuf  []string
	// budget bounds what one line may capture in all: a line of many
	// captured blocks cannot add up past it.
	budget int
	kept   int
}

func newEventScanner(caps []capture, budget int) *eventScanner {
	e := &eventScanner{caps: caps, fields: make([][]field, len(caps)), cap: -1, budget: budget}
	for _, c := range caps {
		e.maxPath = max(e.maxPath, len(c.path))
	}
	return e
}

// reset prepares for a new line. Captured fields of the last line are
// dropped; buffers are kept for reuse.
func (e *eventScanner) reset() {
	for i := range e.fields {
		e.fields[i] = e.fields[i][:0]
	}
	e.st, e.stack, e.esc = scTop, e.stack[:0], false
	e.cap, e.capFrom, e.capBuf, e.capMore, e.capSize = -1, -1, e.capBuf[:0], nil, 0
	e.kept = 0
}

// ok reports whether the line read since reset was one complete JSON
// object.
func (e *eventScanner) ok() bool { return e.st == scEnd }

// get returns the first captured value of capture i, if any.
func (e *eventScanner) get(i int) (field, bool) {
	if len(e.fields[i]) == 0 {
		return field{elem: -1}, false
	}
	return e.fields[i][0], true
}

// all returns every captured value of capture i, in document order.
func (e *eventScanner) all(i int) []field { return e.fields[i] }

// write scans the next bytes of the line (without its newline).
func (e *eventScanner) write(p []byte) {
	if e.cap >= 0 {
		e.capFrom = 0
	}
	i := 0
	for i < len(p) && e.st != scBad {
		c := p[i]
		switch e.st {
		case scStr, scKeyStr:
			i = e.str(p, i)
			continue
		case scScalar:
			switch c {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				e.endValue(p, i)
				e.st = scAfter
				continue // the delimiter is read in scAfter
			}
			i++
			continue
		}
		if isSpaceByte(c) {
			i++
			continue
		}
		switch e.st {
		case scTop:
			if c != '{' {
				e.st = scBad
				break
			}
			e.stack = append(e.stack, scanFrame{obj: true})
			e.st = scKeyOrEnd
		case scKeyOrEnd, scKey:
			switch {
			case c == '"':
				top := &e.stack[len(e.stack)-1]
				top.key, top.long = top.key[:0], false
				e.st, e.esc = scKeyStr, false
			case c == '}' && e.st == scKeyOrEnd:
				e.close(p, i, true)
			default:
				e.st = scBad
			}
		case scColon:
			if c != ':' {
				e.st = scBad
				break
			}
			e.st = scValue
		case scValue, scValueOrEnd:
			if c == ']' && e.st == scValueOrEnd {
				e.close(p, i, false)
				break
			}
			e.beginValue(p, i)
			switch c {
			case '"':
				e.st, e.esc = scStr, false
			case '{':
				e.stack = append(e.stack, scanFrame{obj: true})
				e.st = scKeyOrEnd
			case '[':
				e.stack = append(e.stack, scanFrame{index: -1})
				e.st = scValueOrEnd
			case ',', ':', '}', ']':
				e.st = scBad
			default:
				e.st = scScalar
			}
		case scAfter:
			top := &e.stack[len(e.stack)-1]
			switch {
			case c == ',' && top.obj:
				e.st = scKey
			case c == ',':
				e.st = scValue
			case c == '}' && top.obj, c == ']' && !top.obj:
				e.close(p, i, top.obj)
			default:
				e.st = scBad
			}
		case scEnd:
			e.st = scBad
		}
		i++
	}
	if e.cap >= 0 && e.capFrom >= 0 {
		e.keep(p[e.capFrom:])
	}
}

// str reads string bytes from p[i:]: up to and including the closing quote
// when it is there, else to the end of p. It returns where it stopped.
// Transcripts are mostly strings full of escapes (code, diffs), so the
// loop looks at each byte once for a quote or a backslash.
func (e *eventScanner) str(p []byte, i int) int {
	start := i
	if e.esc && i < len(p) {
		e.esc = false
		i++
	}
	for i < len(p) {
		for i < len(p) && !strSpecial[p[i]] {
			i++
		}
		if i == len(p) {
			break
		}
		if p[i] == '\\' {
			if i+1 == len(p) {
				e.esc = true // the escaped byte is in the next piece
				i++
				break
			}
			i += 2
			continue
		}
		// The closing quote.
		if e.st == scKeyStr {
			e.keyBytes(p[start:i])
			e.st = scColon
		} else {
			e.endValue(p, i+1)
			e.st = scAfter
		}
		return i + 1
	}
	if e.st == scKeyStr {
		e.keyBytes(p[start:i])
	}
	return i
}

// strSpecial marks the bytes that end a run of plain string bytes: in code
// and diffs, escapes come every few dozen bytes, so one look at each byte
// beats searching for the two of them separately.
var strSpecial = [256]bool{'"': true, '\\': true}

func (e *eventScanner) keyBytes(b []byte) {
	top := &e.stack[len(e.stack)-1]
	if top.long || len(top.key)+len(b) > maxKey {
		top.long = true
		return
	}
	top.key = append(top.key, b...)
}

// beginValue is called at the first byte of a value, p[i]: it counts an
// array element and starts a capture whose path matches.
func (e *eventScanner) beginValue(p []byte, i int) {
	top := &e.stack[len(e.stack)-1]
	if !top.obj {
		top.index++
	}
	if e.cap >= 0 || len(e.stack) > e.maxPath {
		return
	}
	elem := -1
	e.pathBuf = e.pathBuf[:0]
	for k := range e.stack {
		f := &e.stack[k]
		switch {
		case !f.obj:
			e.pathBuf = append(e.pathBuf, "*")
			elem = f.index
		case f.long:
			return
		default:
			e.pathBuf = append(e.pathBuf, string(f.key))
		}
	}
	for n, c := range e.caps {
		if samePath(c.path, e.pathBuf) {
			e.cap, e.capDepth, e.capFrom, e.capElem = n, len(e.stack), i, elem
			e.capBuf, e.capMore, e.capSize, e.capSlash = e.capBuf[:0], nil, 0, 0
			return
		}
	}
}

// close ends the container whose closer is p[i].
func (e *eventScanner) close(p []byte, i int, obj bool) {
	e.stack = e.stack[:len(e.stack)-1]
	if len(e.stack) == 0 {
		e.st = scEnd
		return
	}
	e.endValue(p, i+1)
	e.st = scAfter
}

// endValue is called when a value has ended just before p[i]: a capture
// that began at this depth is complete.
func (e *eventScanner) endValue(p []byte, i int) {
	if e.cap < 0 || len(e.stack) != e.capDepth {
		return
	}
	if e.capFrom >= 0 {
		e.keep(p[e.capFrom:i])
	}
	// The field takes the buffer over; short ones are copied so that the
	// buffer is reused for the many small fields of a transcript. A long
	// one is joined once, at its final size.
	raw := e.capBuf
	switch {
	case len(e.capMore) > 0:
		n := len(raw)
		for _, c := range e.capMore {
			n += len(c)
		}
		raw = make([]byte, 0, n)
		raw = append(raw, e.capBuf...)
		for _, c := range e.capMore {
			raw = append(raw, c...)
		}
		e.capMore = nil
	case cap(raw) <= 4<<10:
		raw = append([]byte(nil), raw...)
	default:
		e.capBuf = nil
	}
	f := field{raw: raw, over: e.capSize > int64(len(raw)), size: e.capSize, elem: e.capElem}
	e.fields[e.cap] = append(e.fields[e.cap], f)
	e.cap, e.capFrom = -1, -1
}

// keep adds bytes of the value being captured, up to the capture's limit
// and the line's budget.
func (e *eventScanner) keep(b []byte) {
	e.capSize += int64(len(b))
	c := &e.caps[e.cap]
	if c.decoded > 0 {
		// An escape is at most six bytes for one: past this, the string
		// decodes to more than c.decoded whatever follows.
		e.capSlash += int64(bytes.Count(b, []byte{'\\'}))
		if e.capSize-2-5*e.capSlash > c.decoded {
			e.kept -= e.capKept()
			e.capBuf, e.capMore = nil, nil
			return
		}
	}
	room := min(c.limit-e.capKept(), e.budget-e.kept)
	n := min(len(b), room)
	if n <= 0 {
		return
	}
	e.kept += n
	b = b[:n]
	for len(b) > 0 {
		if len(e.capMore) == 0 {
			// The first capChunk bytes (or what a reused buffer holds)
			// grow as one slice.
			if room := max(cap(e.capBuf), capChunk) - len(e.capBuf); room > 0 {
				k := min(room, len(b))
				e.capBuf, b = append(e.capBuf, b[:k]...), b[k:]
				continue
			}
		}
		last := len(e.capMore) - 1
		if last < 0 || len(e.capMore[last]) == capChunk {
			e.capMore = append(e.capMore, make([]byte, 0, capChunk))
			last++
		}
		k := min(capChunk-len(e.capMore[last]), len(b))
		e.capMore[last], b = append(e.capMore[last], b[:k]...), b[k:]
	}
}

// capChunk is the size of the blocks a long captured value is kept in.
const capChunk = 1 << 20

// capKept is how many bytes of the value in progress are kept.
func (e *eventScanner) capKept() int {
	n := len(e.capBuf)
	for _, c := range e.capMore {
		n += len(c)
	}
	return n
}

func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
