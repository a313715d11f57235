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
	comma     bool       // a ',' was read and its element has not started yet
	stopFence bool       // treat a ``` where a token is expected as the end of input
	objects   int        // open objects on the stack
	keyQuoted bool       // the current key was quoted (a missing ':' may follow it)
	elided    bool       // an ellipsis was dropped in the innermost array; a ']' may follow
	esc       bool       // the value's quotes are escaped (\"a\"): see escString
	bareTop   bool       // the value is a bare top-level text with spaces: prose, unless a container holds it
	keyEnd    int        // p.pos after the current key
	strOut    int        // len(out) where the current double-quoted string began
	strReps   repairMark // the repairs before it
	reread    bool       // a string was read again up to its first guessed inner quote
	virtual   bool       // the outermost '[' is not in the input: a list of top-level scalars
	inCall    bool       // the value is inside a call: a ')' may end a string
	keyCut    bool       // the current key was cut off by the end of input
	bare      bool       // a bare value was quoted (unquoted_value)
	docStart  int        // where the input's first token is: a value starting there has no prose before it
	evidence  bool       // a token only JSON has was read: a quoted string, a number, a literal, a key and its ':'
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
	p.objects = 0
	p.keyQuoted = false
	p.elided = false
	p.esc = false
	p.bareTop = false
	p.keyEnd = 0
	p.bare = false
	p.evidence = false
	p.inCall = false
	p.keyCut = false
	p.virtual = false
	p.reread = false
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
	start := p.pos
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.stopFence && hasFence(p.in, p.pos) {
			if err := p.closeAtEnd(st); err != nil {
				return err
			}
			return p.checkEvidence(start)
		}
		c := p.in[p.pos]
		var err *parseError
		switch st {
		case stValue:
			st, err = p.value(c)
		case stKey:
			st, err = p.key(c)
		case stColon:
			st, err = p.colon(c)
		case stNext:
			st, err = p.next(c)
		}
		if err != nil {
			return err
		}
		if len(p.stack) == 0 && st == stNext {
			if p.lastOut() == '"' {
				p.concatenation() // "a" + "b" at the top level
			}
			return p.checkEvidence(start)
		}
	}
}

// checkEvidence refuses a container, starting at in[start], that holds
// one bare value and nothing that only JSON has: no quoted string, number,
// literal or key followed by ':'. Such brackets are prose ("[INFO]",
// "[see below]", a "- [x]" checkbox), and scanning goes on after the
// opening bracket. Two members or more ([a, b]) are a list, and so are
// brackets that are the whole input ([0789], [https://x.org/]): there is
// no prose for them to belong to.
func (p *parser) checkEvidence(start int) *parseError {
	if !p.bare || p.evidence || p.members >= 2 || start >= len(p.in) || p.in[start] != '{' && p.in[start] != '[' {
		return nil
	}
	if start == p.docStart && onlyCommasAfter(p.in, p.pos) {
		return nil
	}
	p.members = 0
	return p.fail(start, "brackets around bare words are prose, not JSON")
}

// onlyCommasAfter reports whether in[i:] holds nothing but whitespace and
// commas ("[e5]," as a line of a list).
func onlyCommasAfter(in []byte, i int) bool {
	for ; i < len(in); i++ {
		if !isSpace(in[i]) && in[i] != ',' {
			return false
		}
	}
	return true
}

// value handles a byte where a value is expected.
func (p *parser) value(c byte) (state, *parseError) {
	inArray := len(p.stack) > 0 && p.stack[len(p.stack)-1] == '['
	if inArray {
		if arrayEdge[c] {
			st, err, done := p.arrayEdge(c)
			if done {
				return st, err
			}
			c = p.in[p.pos]
		}
		if p.lastOut() != '[' {
			p.out = append(p.out, ',')
		}
	}
	p.comma, p.elided = false, false
	switch c {
	case '{', '[':
		if len(p.stack) >= p.maxDepth {
			err := p.fail(p.pos, "nesting deeper than %d levels", p.maxDepth)
			err.fatal = true
			return stValue, err
		}
		p.stack = append(p.stack, c)
		if c == '{' {
			p.objects++
		}
		p.out = append(p.out, c)
		p.pos++
		if c == '{' {
			return stKey, nil
		}
		return stValue, nil
	case ',', ']', '}', ':':
		if !inArray && len(p.stack) > 0 && (c == ',' || c == '}') {
			// {"a": } and {"a": , "b": 1}: the value is missing, and null
			// says so where any invented value might pass for the agent's.
			p.reps.add(idMissingValue)
			p.out = append(p.out, "null"...)
			return p.completed(), nil
		}
		return stValue, p.fail(p.pos, "expected a value, found %q", rune(c))
	}
	if err := p.scalar(c); err != nil {
		return stValue, err
	}
	return p.completed(), nil
}

// arrayEdge marks the bytes that may begin something other than an
// element where an array element is expected: a closer, a comma, an
// ellipsis, an escaped quote. Valid elements start with none but '\\',
// so the common path costs one table lookup.
var arrayEdge = [256]bool{',': true, ']': true, '}': true, '.': true, 0xE2: true, '\\': true}

// arrayEdge handles a byte c that arrayEdge marks, where an array element
// is expected. done reports that it was handled (st and err are the
// result); otherwise the element starts at p.pos, which it may have
// moved past an escaped opening.
func (p *parser) arrayEdge(c byte) (st state, err *parseError, done bool) {
	if n := ellipsisAt(p.in, p.pos); n > 0 {
		st, err = p.elide(n)
		return st, err, true
	}
	switch {
	case c == ',' && p.lastOut() == '[' && !p.comma:
		p.reps.add(idLeadingComma)
		p.pos++
		return stValue, nil, true
	case c == '}' && p.lastOut() == '[':
		st, err = p.mismatched(c)
		return st, err, true
	case c == ']' && (p.comma || p.elided || p.lastOut() == '['):
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		st, err = p.close(c)
		return st, err, true
	case c == '}' && (p.comma || p.elided):
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		st, err = p.mismatched(c)
		return st, err, true
	case c == '\\' && !p.esc && len(p.stack) == 1 && p.lastOut() == '[' && p.escapedStart():
		p.reps.add(idEscapedQuotes)
	}
	return stValue, nil, false
}

// elide drops the ellipsis of n bytes at p.pos that stands for more
// members ("...", "…"), with a ',' after it: the members it stands for are
// unknown, so it is left out rather than guessed. Only an ellipsis after a
// member is dropped: a lone [...] is prose far more often than JSON.
func (p *parser) elide(n int) (state, *parseError) {
	p.reps.add(idEllipsis)
	p.pos += n
	p.skipSpace()
	p.comma, p.elided = false, true
	if p.pos < len(p.in) && p.in[p.pos] == ',' {
		p.pos++
		p.comma, p.elided = true, false
	}
	if len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{' {
		return stKey, nil
	}
	return stValue, nil
}

// ellipsisAt returns the length of an ellipsis ("..." or "…") at in[i]
// that stands alone as a member, followed by a separator, a closer, space
// or the end of input; 0 when there is none.
func ellipsisAt(in []byte, i int) int {
	n := 0
	switch {
	case i+2 < len(in) && in[i] == '.' && in[i+1] == '.' && in[i+2] == '.':
		n = 3
	case i+2 < len(in) && in[i] == 0xE2 && in[i+1] == 0x80 && in[i+2] == 0xA6:
		n = 3
	default:
		return 0
	}
	if j := i + n; j < len(in) {
		switch in[j] {
		case ',', ']', '}', ' ', '\t', '\n', '\r', '/':
		default:
			return 0
		}
	}
	return n
}

// key handles a byte where an object key or '}' is expected.
func (p *parser) key(c byte) (state, *parseError) {
	if c == '}' {
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		return p.close(c)
	}
	if c == ']' && (p.comma || p.elided || p.lastOut() == '{') {
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		return p.mismatched(c)
	}
	if c == '.' || c == 0xE2 {
		if n := ellipsisAt(p.in, p.pos); n > 0 {
			return p.elide(n)
		}
	}
	if c == ',' && p.lastOut() == '{' && !p.comma {
		p.reps.add(idLeadingComma)
		p.pos++
		return stKey, nil
	}
	if c == '{' && p.inArrayParent() {
		// [{"i":1,{"i":2}]: the object's '}' is missing.
		return p.closeForElement()
	}
	p.keyMark = len(p.out)
	if p.lastOut() != '{' {
		p.out = append(p.out, ',')
	}
	p.comma, p.elided = false, false
	p.keyQuoted = true
	switch {
	case c == '"':
		if err := p.dqString(true); err != nil {
			return stColon, err
		}
	case c == '\'':
		p.reps.add(idSingleQuotes)
		return p.keyDone(p.altString(quoteSingle))
	case c == 0xE2 && smartOpen(p.in, p.pos) != quoteNone:
		p.reps.add(idSmartQuotes)
		return p.keyDone(p.altString(smartOpen(p.in, p.pos)))
	case c == '`' && !hasFence(p.in, p.pos):
		p.reps.add(idBacktickQuotes)
		return p.keyDone(p.altString(quoteBacktick))
	case c == '\\' && p.escQuoteAt(p.pos):
		return p.keyDone(p.escString())
	case c == '\\' && !p.esc && len(p.stack) == 1 && p.lastOut() == '{' && p.escapedStart():
		p.reps.add(idEscapedQuotes)
		return p.keyDone(p.escString())
	case isKeyByte(c):
		p.keyQuoted = false
		p.reps.add(idUnquotedKeys)
		start := p.pos
		for p.pos < len(p.in) && isKeyByte(p.in[p.pos]) {
			p.pos++
		}
		p.out = append(p.out, '"')
		p.out = append(p.out, p.in[start:p.pos]...)
		p.out = append(p.out, '"')
		if p.pos < len(p.in) && p.in[p.pos] == '"' && colonAt(p.in, p.pos+1) {
			// {a": 1}: the key's start quote is missing.
			p.reps.add(idMissingQuote)
			p.keyQuoted = true
			p.pos++
		}
	default:
		return stKey, p.fail(p.pos, "expected an object key, found %q", p.runeAt(p.pos))
	}
	return p.keyDone(nil)
}

// keyDone notes where the key just read ends and whether the end of input
// cut it off.
func (p *parser) keyDone(err *parseError) (state, *parseError) {
	p.keyEnd = p.pos
	p.keyCut = p.truncated || !p.keyQuoted && p.pos >= len(p.in)
	return stColon, err
}

// colon handles a byte where the ':' after a key is expected. A quoted key
// followed directly by a value lacks only its ':'; an unquoted word
// followed by another is prose ({see below}), not a key.
func (p *parser) colon(c byte) (state, *parseError) {
	if c == ':' {
		p.evidence = true
		p.out = append(p.out, ':')
		p.pos++
		return stValue, nil
	}
	return p.noColon(c)
}

// noColon handles a byte other than ':' after a key.
func (p *parser) noColon(c byte) (state, *parseError) {
	if p.keyQuoted && (isValueStart(p.in, p.pos) || p.escQuoteAt(p.pos)) || p.pos > p.keyEnd && isStringStart(p.in, p.pos) {
		p.reps.add(idMissingColon)
		p.out = append(p.out, ':')
		return stValue, nil
	}
	return stColon, p.fail(p.pos, "expected ':' after object key, found %q", p.runeAt(p.pos))
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
			return p.mismatched(c)
		}
		return p.close(c)
	case c == '+' && p.lastOut() == '"' && p.concatenation():
		return stNext, nil
	case ellipsisAt(p.in, p.pos) > 0:
		return p.elide(ellipsisAt(p.in, p.pos))
	case top == '{' && c == '{' && p.inArrayParent():
		// [{"i":1{"i":2}]: the object's '}' is missing.
		return p.closeForElement()
	case top == '{' && (isKeyStart(p.in, p.pos) || p.escQuoteAt(p.pos)):
		p.reps.add(idMissingComma)
		return stKey, nil
	case top == '[' && (isValueStart(p.in, p.pos) || p.escQuoteAt(p.pos)):
		p.reps.add(idMissingComma)
		return stValue, nil
	}
	return stNext, p.fail(p.pos, "expected ',' or %q after %s member, found %q", closerOf(top), containerName(top), p.runeAt(p.pos))
}

// inArrayParent reports whether the innermost container, an object, is an
// element of an array.
func (p *parser) inArrayParent() bool {
	n := len(p.stack)
	return n >= 2 && p.stack[n-1] == '{' && p.stack[n-2] == '['
}

// closeForElement closes the innermost object, whose '}' is missing, at a
// '{' that starts the next element of the array around it.
func (p *parser) closeForElement() (state, *parseError) {
	if p.comma && p.lastOut() != '{' {
		p.reps.add(idTrailingComma)
	}
	p.reps.add(idMismatchedCloser)
	p.pop()
	p.out = append(p.out, '}')
	p.members++
	p.comma, p.elided = false, false
	return stValue, nil
}

// close ends the innermost container with closer c at p.pos.
func (p *parser) close(c byte) (state, *parseError) {
	if len(p.stack) == 1 && c == '}' && p.stack[0] == '{' && memberFollows(p.in, p.pos+1) {
		// {"a": 1}, "b": 2}: a '}' the agent typed too early, followed
		// by more members of the same object.
		p.reps.add(idRedundantCloser)
		p.pos++
		return stNext, nil
	}
	p.pop()
	p.out = append(p.out, c)
	p.pos++
	p.comma, p.elided = false, false
	return p.completed(), nil
}

// pop removes the innermost container from the stack.
func (p *parser) pop() {
	if p.stack[len(p.stack)-1] == '{' {
		p.objects--
	}
	p.stack = p.stack[:len(p.stack)-1]
}

// mismatched handles a closer c at p.pos of the wrong kind for the
// innermost container. Agents make two mistakes here: they forget the
// closer of an inner container ({"xs": [1, 2}), or they type one closer
// for the other ({"a": [1, 2}, "b": 3}). When an outer container is of
// c's kind, the first reading closes the inner ones and then it; it is
// refused when it would end the whole value where more members follow (a
// ',' or another closer), since the value was evidently not done. The
// second reading replaces c by the closer the innermost container needs.
// Both are one repair, mismatched_closer.
func (p *parser) mismatched(c byte) (state, *parseError) {
	top := p.stack[len(p.stack)-1]
	// The innermost container is of the other kind, so every open
	// container of c's kind is an outer one.
	outer := p.objects
	if c == ']' {
		outer = len(p.stack) - p.objects
	}
	if outer == 0 && p.moreFollows(p.pos+1) {
		// [{"a":1}}, {"b":2}]: a closer with nothing of its kind to
		// close, followed by more members.
		p.reps.add(idRedundantCloser)
		p.pos++
		return stNext, nil
	}
	p.reps.add(idMismatchedCloser)
	if outer > 0 && !(outer == 1 && p.stack[0] == openerOf(c) && p.moreFollows(p.pos+1)) {
		for p.stack[len(p.stack)-1] != openerOf(c) {
			p.out = append(p.out, closerOf(p.stack[len(p.stack)-1]))
			p.pop()
			p.members++
		}
		return p.close(c)
	}
	return p.close(closerOf(top))
}

// colonAt reports whether, after spaces, in[i] is a ':'.
func colonAt(in []byte, i int) bool {
	for i < len(in) && (in[i] == ' ' || in[i] == '\t') {
		i++
	}
	return i < len(in) && in[i] == ':'
}

// memberFollows reports whether, after optional whitespace, in[i] is a
// ',' followed by an object member: a quoted or bare key and its ':'. The
// look is bounded by the key's closing quote.
func memberFollows(in []byte, i int) bool {
	i = skipWS(in, i)
	if i >= len(in) || in[i] != ',' {
		return false
	}
	i = skipWS(in, i+1)
	if i >= len(in) {
		return false
	}
	switch {
	case in[i] == '"' || in[i] == '\'':
		q := in[i]
		for i++; i < len(in) && in[i] != q && in[i] != '\n'; i++ {
			if in[i] == '\\' {
				i++
			}
		}
		if i >= len(in) || in[i] != q {
			return false
		}
		i++
	case isLetter(in[i]) || in[i] == '_' || in[i] == '$':
		for i < len(in) && isKeyByte(in[i]) {
			i++
		}
	default:
		return false
	}
	i = skipWS(in, i)
	return i < len(in) && in[i] == ':'
}

// moreFollows reports whether, after optional whitespace, in[i] continues
// a container: a ',' or a closer.
func (p *parser) moreFollows(i int) bool {
	i = skipWS(p.in, i)
	return i < len(p.in) && (p.in[i] == ',' || p.in[i] == '}' || p.in[i] == ']')
}

// completed accounts for a finished value and returns the next state.
func (p *parser) completed() state {
	if len(p.stack) > 0 {
		p.members++
	}
	return stNext
}

// closeAtEnd finishes a value cut off by the end of input: a quoted key
// keeps what was written of it, as a cut string value does, and gets null
// for its missing value; an unquoted key cut off is dropped (it may be a
// word of prose), and so is a dangling ','; every open container is
// closed.
func (p *parser) closeAtEnd(st state) *parseError {
	if len(p.stack) == 0 {
		if st == stNext {
			return nil
		}
		return p.fail(p.pos, "expected a value, found end of input")
	}
	if p.virtual && len(p.stack) == 1 && (st == stNext || st == stValue && p.comma) {
		if p.comma {
			p.reps.add(idTrailingComma)
		}
		p.out = append(p.out, ']')
		p.stack = p.stack[:0]
		return nil
	}
	top := p.stack[len(p.stack)-1]
	switch {
	case st == stColon && (!p.keyCut || p.keyQuoted):
		// {"a": 1, "b" and {"a": 1, "b: the value is missing.
		p.reps.add(idMissingValue)
		p.out = append(p.out, ":null"...)
	case st == stValue && top == '{' && !p.comma && p.lastOut() == ':':
		p.reps.add(idMissingValue)
		p.out = append(p.out, "null"...)
	case st == stColon || st == stValue && top == '{':
		p.out = p.out[:p.keyMark]
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		p.out = append(p.out, closerOf(p.stack[i]))
	}
	p.stack = p.stack[:0]
	p.objects = 0
	p.comma, p.elided = false, false
	p.markTruncated()
	return nil
}

func openerOf(closer byte) byte {
	if closer == '}' {
		return '{'
	}
	return '['
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
