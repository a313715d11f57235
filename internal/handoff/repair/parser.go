package repair

import "fmt"

// state is what the value parser expects next.
type state uint8

const (
	stValue state = iota // a value (top level, after ':', or an array element)
	stKey                // an object key or '}'
	stColon              // the ':' after a key
	stNext               // ',' or the closer after a container member
)

// parseError is a failure of one candidate value. A fatal one (nesting too
// deep) ends the search for values in the whole input. The message is only
// formatted when it is reported: prose makes many candidates fail.
type parseError struct {
	off    int
	format string
	args   [maxFailArgs]any
	nargs  int
	fatal  bool
}

// maxFailArgs is the most arguments a failure message takes; a test checks
// every call of parser.fail against it and against its format's verbs,
// which go vet cannot see through the deferred formatting.
const maxFailArgs = 3

func (e *parseError) msg() string {
	return fmt.Sprintf(e.format, e.args[:e.nargs]...)
}

// parser is a lenient, non-recursive JSON parser that writes compact strict
// JSON to out as it reads. Every byte of input is looked at a bounded number
// of times, so a parse is linear in the bytes it consumes. A parser is reset
// and reused for each candidate value.
type parser struct {
	in       []byte
	pos      int
	out      []byte
	stack    []byte // open containers: '{' or '['
	maxDepth int

	reps      repairSet
	truncated bool
	members   int // container members completed; >0 means the text looked like JSON
	keyMark   int // len(out) before the current key and its comma
	err       parseError
	comma     bool // a ',' was read and its element has not started yet
	stopFence bool // treat a ``` where a token is expected as the end of input
}

// reset prepares p to parse a value starting at pos, appending to out.
func (p *parser) reset(pos int, out []byte) {
	p.pos = pos
	p.out = out
	p.stack = p.stack[:0]
	p.reps = repairSet{}
	p.truncated = false
	p.members = 0
	p.keyMark = 0
	p.comma = false
}

// fail records the failure of the current value; the returned error stays
// valid until the next call.
func (p *parser) fail(off int, format string, args ...any) *parseError {
	p.err = parseError{off: off, format: format}
	p.err.nargs = copy(p.err.args[:], args)
	return &p.err
}

func (p *parser) markTruncated() {
	p.truncated = true
	p.reps.add(idTruncated)
}

func (p *parser) lastOut() byte {
	if len(p.out) == 0 {
		return 0
	}
	return p.out[len(p.out)-1]
}

// parse reads one value starting at p.pos, which must be at its first byte.
// On success p.pos is just past the value.
func (p *parser) parse() *parseError {
	st := stValue
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.stopFence && hasFence(p.in, p.pos) {
			return p.closeAtEnd(st)
		}
		c := p.in[p.pos]
		var err *parseError
		switch st {
		case stValue:
			st, err = p.value(c)
		case stKey:
			st, err = p.key(c)
		case stColon:
			if c != ':' {
				return p.fail(p.pos, "expected ':' after object key, found %q", c)
			}
			p.out = append(p.out, ':')
			p.pos++
			st = stValue
		case stNext:
			st, err = p.next(c)
		}
		if err != nil {
			return err
		}
		if len(p.stack) == 0 && st == stNext {
			return nil
		}
	}
}

// value handles a byte where a value is expected.
func (p *parser) value(c byte) (state, *parseError) {
	inArray := len(p.stack) > 0 && p.stack[len(p.stack)-1] == '['
	if c == ']' && inArray && (p.comma || p.lastOut() == '[') {
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		return p.close(c)
	}
	if inArray && p.lastOut() != '[' {
		p.out = append(p.out, ',')
	}
	p.comma = false
	switch c {
	case '{', '[':
		if len(p.stack) >= p.maxDepth {
			err := p.fail(p.pos, "nesting deeper than %d levels", p.maxDepth)
			err.fatal = true
			return stValue, err
		}
		p.stack = append(p.stack, c)
		p.out = append(p.out, c)
		p.pos++
		if c == '{' {
			return stKey, nil
		}
		return stValue, nil
	case ',':
		return stValue, p.fail(p.pos, "expected a value, found ','")
	}
	if err := p.scalar(c); err != nil {
		return stValue, err
	}
	return p.completed(), nil
}

// key handles a byte where an object key or '}' is expected.
func (p *parser) key(c byte) (state, *parseError) {
	if c == '}' {
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		return p.close(c)
	}
	p.keyMark = len(p.out)
	if p.lastOut() != '{' {
		p.out = append(p.out, ',')
	}
	p.comma = false
	switch {
	case c == '"':
		if err := p.dqString(); err != nil {
			return stColon, err
		}
	case c == '\'':
		p.reps.add(idSingleQuotes)
		return stColon, p.altString(quoteSingle)
	case c == 0xE2 && smartOpen(p.in, p.pos) != quoteNone:
		p.reps.add(idSmartQuotes)
		return stColon, p.altString(smartOpen(p.in, p.pos))
	case isKeyByte(c):
		p.reps.add(idUnquotedKeys)
		start := p.pos
		for p.pos < len(p.in) && isKeyByte(p.in[p.pos]) {
			p.pos++
		}
		p.out = append(p.out, '"')
		p.out = append(p.out, p.in[start:p.pos]...)
		p.out = append(p.out, '"')
	default:
		return stKey, p.fail(p.pos, "expected an object key, found %q", c)
	}
	return stColon, nil
}

// next handles a byte after a container member.
func (p *parser) next(c byte) (state, *parseError) {
	top := p.stack[len(p.stack)-1]
	switch {
	case c == ',':
		p.comma = true
		p.pos++
		if top == '{' {
			return stKey, nil
		}
		return stValue, nil
	case c == '}' || c == ']':
		if closerOf(top) != c {
			return stNext, p.fail(p.pos, "found %q where %q closes the open %s", c, closerOf(top), containerName(top))
		}
		return p.close(c)
	case top == '{' && isKeyStart(p.in, p.pos):
		p.reps.add(idMissingComma)
		return stKey, nil
	case top == '[' && isValueStart(p.in, p.pos):
		p.reps.add(idMissingComma)
		return stValue, nil
	}
	return stNext, p.fail(p.pos, "expected ',' or %q after %s member, found %q", closerOf(top), containerName(top), c)
}

// close ends the innermost container with closer c at p.pos.
func (p *parser) close(c byte) (state, *parseError) {
	p.stack = p.stack[:len(p.stack)-1]
	p.out = append(p.out, c)
	p.pos++
	p.comma = false
	return p.completed(), nil
}

// completed accounts for a finished value and returns the next state.
func (p *parser) completed() state {
	if len(p.stack) > 0 {
		p.members++
	}
	return stNext
}

// closeAtEnd finishes a value cut off by the end of input: it drops a
// dangling key (with its ':'), a dangling ',' and closes every open
// container.
func (p *parser) closeAtEnd(st state) *parseError {
	if len(p.stack) == 0 {
		if st == stNext {
			return nil
		}
		return p.fail(p.pos, "expected a value, found end of input")
	}
	top := p.stack[len(p.stack)-1]
	if st == stColon || st == stValue && top == '{' {
		p.out = p.out[:p.keyMark]
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		p.out = append(p.out, closerOf(p.stack[i]))
	}
	p.stack = p.stack[:0]
	p.comma = false
	p.markTruncated()
	return nil
}

func closerOf(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func containerName(open byte) string {
	if open == '{' {
		return "object"
	}
	return "array"
}
