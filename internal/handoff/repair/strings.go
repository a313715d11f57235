package repair

import "bytes"

// quoteKind is the delimiter that opened a string.
type quoteKind uint8

const (
	quoteNone        quoteKind = iota
	quoteSingle                // 'text'
	quoteSmartDouble           // “text”
	quoteSmartSingle           // ‘text’
	quoteBacktick              // `text`, `text´ and `text'
)

// UTF-8 encodings of the typographic quotes, all three bytes long and all
// starting with 0xE2 0x80.
const (
	leftDouble  = 0x9C // “
	rightDouble = 0x9D // ”
	leftSingle  = 0x98 // ‘
	rightSingle = 0x99 // ’
)

// smartOpen reports which typographic quote, if any, opens a string at in[i].
func smartOpen(in []byte, i int) quoteKind {
	if i+2 >= len(in) || in[i] != 0xE2 || in[i+1] != 0x80 {
		return quoteNone
	}
	switch in[i+2] {
	case leftDouble, rightDouble:
		return quoteSmartDouble
	case leftSingle:
		return quoteSmartSingle
	}
	return quoteNone
}

// Byte classes that stop the bulk copy of string content.
var dqStop, altStop [256]bool

func init() {
	for c := range 0x20 {
		dqStop[c], altStop[c] = true, true
	}
	dqStop['"'], dqStop['\\'] = true, true
	altStop['"'], altStop['\\'], altStop['\''], altStop[0xE2] = true, true, true, true
	altStop['`'], altStop[0xC2] = true, true
}

// dqString copies a double-quoted string starting at p.pos, escaping raw
// control characters. A string cut off by the end of input is closed.
//
// Inside a value (not a key), a '"' that quoteCloses says cannot end the
// string is taken for a quote the agent forgot to escape. When that guess
// leaves the string open to the end of input, it was wrong (or the output
// is cut off where nothing can be told): the string is read again as ending
// at its first such quote, and what follows is parsed as usual. The string
// is read at most twice, so the parse stays linear.
func (p *parser) dqString(key bool) *parseError {
	in := p.in
	// Where the string began, for a second reading; kept in p, not in
	// registers the copy loop needs.
	p.strOut, p.strReps = len(p.out), p.reps.mark()
	i := p.pos + 1
	p.out = append(p.out, '"')
	g := innerGuess{at: -1}
	for {
		j := i
		for j < len(in) && !dqStop[in[j]] {
			j++
		}
		p.out = append(p.out, in[i:j]...)
		if j >= len(in) {
			if g.at < 0 && !key {
				if d := p.missingEndQuote(p.pos); d >= 0 {
					return p.endStringAt(p.pos, d)
				}
			}
			return p.cutString(g)
		}
		switch c := in[j]; c {
		case '"':
			if key || p.quoteCloses(j) {
				p.out = append(p.out, '"')
				p.pos = j + 1
				return nil
			}
			if g.at < 0 {
				if b := delimiterBefore(in, p.pos+1, j); b >= 0 {
					// ["a,"b"] and "a +\n "b": the quote opens the next
					// string; this one lacks its end quote before the ','
					// or '+'.
					return p.endStringAt(p.pos, b)
				}
			}
			if g.at < 0 {
				g = innerGuess{at: j, out: len(p.out), reps: p.reps.mark()}
			}
			p.reps.add(idInnerQuotes)
			p.out = append(p.out, '\\', '"')
			i = j + 1
		case '\\':
			next, err := p.escape(j, false)
			if err != nil {
				return err
			}
			if next >= len(in) {
				return p.cutString(g)
			}
			i = next
		default:
			if err := p.escapeControl(j); err != nil {
				return err
			}
			i = j + 1
		}
	}
}

// delimiterBefore returns the index of a ',' or '+' that comes last before
// in[j] in in[from:j], past spaces, line breaks and a block comment, or -1.
func delimiterBefore(in []byte, from, j int) int {
	k := j - 1
	for {
		for k >= from && isSpace(in[k]) {
			k--
		}
		if k-1 >= from && in[k] == '/' && in[k-1] == '*' {
			open := bytes.LastIndex(in[from:k-1], []byte("/*"))
			if open < 0 {
				return -1
			}
			k = from + open - 1
			continue
		}
		break
	}
	if k >= from && (in[k] == ',' || in[k] == '+') {
		return k
	}
	return -1
}

// missingEndQuote returns where a string value that starts at in[start]
// and runs to the end of input ends when its end quote is missing rather
// than the input cut off: that is so when the input ends in a closer of an
// open container (["abc], {"a":"b}). The string then ends at the first ','
// , closer or line break; -1 when the input does not end so.
func (p *parser) missingEndQuote(start int) int {
	in := p.in
	e := len(in) - 1
	for e > start && isSpace(in[e]) {
		e--
	}
	if len(p.stack) == 0 || e <= start || in[e] != '}' && in[e] != ']' {
		return -1
	}
	for i := start + 1; i <= e; i++ {
		switch in[i] {
		case ',', '}', ']', '\n', '\r':
			return i
		}
	}
	return -1
}

// endStringAt rewrites the string that starts at in[start] as ending just
// before in[end], trailing spaces dropped: its end quote is missing.
func (p *parser) endStringAt(start, end int) *parseError {
	p.out = p.out[:p.strOut]
	p.reps.undo(p.strReps)
	p.reps.add(idMissingQuote)
	e := trimEnd(p.in, start+1, end)
	if e-2 > start && p.in[e-1] == '+' && isSpace(p.in[e-2]) {
		e = trimEnd(p.in, start+1, e-1) // "hello +]: a '+' with nothing after it
	}
	p.out = append(p.out, '"')
	for i := start + 1; i < e; {
		if p.in[i] == '\\' && i+1 < e {
			next, err := p.escape(i, false)
			if err != nil {
				return err
			}
			i = next
			continue
		}
		if err := p.copyRaw(i, i+1); err != nil {
			return err
		}
		i++
	}
	p.out = append(p.out, '"')
	p.pos = end
	return nil
}

// trimEnd returns the end of in[from:end] without trailing spaces, line
// breaks and block comments.
func trimEnd(in []byte, from, end int) int {
	for end > from {
		switch {
		case isSpace(in[end-1]):
			end--
		case end-2 >= from && in[end-1] == '/' && in[end-2] == '*':
			open := bytes.LastIndex(in[from:end-2], []byte("/*"))
			if open < 0 {
				return end
			}
			end = from + open
		default:
			return end
		}
	}
	return end
}

// innerGuess remembers the first quote of a string taken for an inner
// one: where it is, and the output and repairs before it.
type innerGuess struct {
	at   int // -1 when there is none
	out  int
	reps repairMark
}

// cutString ends a double-quoted string that the end of input cut off: it
// is closed, unless a guessed inner quote left it open, in which case it
// ends at that quote instead.
//
// Only one string of a value may be read again so: after a second, what
// follows the guessed quote would be read once more for every string, and
// the value is refused instead, which keeps the parse linear.
func (p *parser) cutString(g innerGuess) *parseError {
	if g.at < 0 {
		return p.endCutString()
	}
	if p.reread {
		return p.fail(g.at, "a second string with an unescaped '\"' runs to the end of input")
	}
	p.reread = true
	p.out = append(p.out[:g.out], '"')
	p.reps.undo(g.reps)
	p.pos = g.at + 1
	return nil
}

// quoteCloses reports whether the '"' at in[j], inside a string value,
// ends it. It does when what follows, after spaces, can follow a value: a
// ',', a closer, a ':', a line break, a comment, the end of input, or the
// start of the next member where only a comma is missing (another string,
// an unquoted key and its ':' in an object, a number, literal or container
// in an array). Otherwise the quote stands inside the string, unescaped:
// "she wrote "done" twice", "a 12" pipe". Valid JSON always takes the
// first branch, so the strings of valid input are never read differently.
// A closer after the quote ends the string only where a container is open
// for it to close: in a top-level string ("the list [1, 2"] more") it is
// part of the text. The look-ahead stops at the next '"', so each byte is
// looked at by at most one quote's look-ahead.
func (p *parser) quoteCloses(j int) bool {
	in := p.in
	k := j + 1
	if k < len(in) {
		switch in[k] {
		case ',', ':':
			return true
		case '}', ']':
			return len(p.stack) > 0
		}
	}
	if p.esc || p.inCall && k < len(in) && in[k] == ')' {
		return true
	}
	for k < len(in) && (in[k] == ' ' || in[k] == '\t') {
		k++
	}
	if k >= len(in) {
		return true
	}
	switch c := in[k]; {
	case c == '}' || c == ']':
		return len(p.stack) > 0
	case c == ',' || c == ':' || c == '\n' || c == '\r' || c == '\'' || c == '`':
		return true
	case c == '+':
		return concatFollows(in, k)
	case c == '"':
		// Two quotes in a row before the end of the value ("he said
		// "hi"", ...): the first one is inside.
		return k > j+1 || !endsValue(in, k+1)
	case c == '/':
		return k+1 < len(in) && (in[k+1] == '/' || in[k+1] == '*')
	case smartOpen(in, k) != quoteNone:
		return true
	case len(p.stack) == 0:
		return false
	case p.stack[len(p.stack)-1] == '{':
		return unquotedMemberAt(in, k)
	}
	return elementAt(in, k)
}

// concatFollows reports whether in[k], a '+', joins the string before it
// to another: after spaces and line breaks comes a quote, or a comment
// (which a '+' between values has no other use for). It never looks past
// the first byte that is not a space, so it stays linear.
func concatFollows(in []byte, k int) bool {
	for k++; k < len(in) && isSpace(in[k]); k++ {
	}
	if k >= len(in) {
		return false
	}
	return isStringStart(in, k) || in[k] == '/' && k+1 < len(in) && (in[k+1] == '*' || in[k+1] == '/')
}

// endsValue reports whether, after spaces, in[i] is the end of input or a
// byte that ends a value: ',', a closer or a line break.
func endsValue(in []byte, i int) bool {
	for i < len(in) && (in[i] == ' ' || in[i] == '\t') {
		i++
	}
	if i >= len(in) {
		return true
	}
	switch in[i] {
	case ',', '}', ']', '\n', '\r':
		return true
	}
	return false
}

// unquotedMemberAt reports whether an unquoted key and its ':' start at
// in[k]. The key must start with a letter, '_' or '$': digits and a colon
// are a time of day ("at "12:30" sharp"), not a key.
func unquotedMemberAt(in []byte, k int) bool {
	if c := in[k]; !isLetter(c) && c != '_' && c != '$' {
		return false
	}
	for k < len(in) && isKeyByte(in[k]) {
		k++
	}
	for k < len(in) && (in[k] == ' ' || in[k] == '\t') {
		k++
	}
	return k < len(in) && in[k] == ':'
}

// elementAt reports whether an array element that ends where it should
// starts at in[k]: a container, or a number or literal followed by the end
// of the value.
func elementAt(in []byte, k int) bool {
	if in[k] == '{' || in[k] == '[' {
		return true
	}
	e := k
	for e < len(in) && (isWordByte(in[e]) || in[e] == '.' || in[e] == '-' || in[e] == '+') {
		e++
	}
	if e == k {
		return false
	}
	if c := in[k]; !isDigit(c) && c != '-' && c != '+' && c != '.' && !isLiteral(in[k:e]) {
		return false
	}
	return endsValue(in, e)
}

// isLiteral reports whether w is a bare word a value may be written as.
func isLiteral(w []byte) bool {
	for _, l := range literals {
		if string(w) == l.word {
			return true
		}
	}
	return false
}

// altString copies a string delimited by single or typographic quotes,
// starting at p.pos, re-quoting it with '"'. A single quote (or ’) only
// closes the string when what follows can follow a string: this keeps
// apostrophes such as it's inside the string.
func (p *parser) altString(q quoteKind) *parseError {
	in := p.in
	i := p.pos + 1
	if q != quoteSingle && q != quoteBacktick {
		i = p.pos + 3
	}
	p.out = append(p.out, '"')
	for {
		j := i
		for j < len(in) && !altStop[in[j]] {
			j++
		}
		p.out = append(p.out, in[i:j]...)
		if j >= len(in) {
			return p.endCutString()
		}
		switch c := in[j]; {
		case c == '"':
			p.out = append(p.out, '\\', '"')
			i = j + 1
		case c == '\\':
			next, err := p.escape(j, true)
			if err != nil {
				return err
			}
			if next >= len(in) {
				return p.endCutString()
			}
			i = next
		case c == '\'':
			if (q == quoteSingle || q == quoteBacktick) && closesString(in, j+1) {
				p.out = append(p.out, '"')
				p.pos = j + 1
				return nil
			}
			p.out = append(p.out, '\'')
			i = j + 1
		case c == '`' || c == 0xC2:
			n := 1
			if c == 0xC2 {
				n = 2
			}
			if q == quoteBacktick && (c == '`' || j+1 < len(in) && in[j+1] == 0xB4) && closesString(in, j+n) {
				p.out = append(p.out, '"')
				p.pos = j + n
				return nil
			}
			p.out = append(p.out, c)
			i = j + 1
		case c == 0xE2:
			if p.closesSmart(q, j) {
				p.out = append(p.out, '"')
				p.pos = j + 3
				return nil
			}
			p.out = append(p.out, c)
			i = j + 1
		default:
			if err := p.escapeControl(j); err != nil {
				return err
			}
			i = j + 1
		}
	}
}

// closesSmart reports whether the bytes at in[j] close a string opened by q.
func (p *parser) closesSmart(q quoteKind, j int) bool {
	in := p.in
	if j+2 >= len(in) || in[j+1] != 0x80 {
		return false
	}
	switch q {
	case quoteSmartDouble:
		return in[j+2] == rightDouble || in[j+2] == leftDouble
	case quoteSmartSingle:
		return in[j+2] == rightSingle && closesString(in, j+3)
	}
	return false
}

// closesString reports whether a quote just before in[i] can end a string:
// it is followed, after optional whitespace, by the end of input, a line
// break, or a byte that can follow a string value or key.
func closesString(in []byte, i int) bool {
	for ; i < len(in); i++ {
		switch in[i] {
		case ' ', '\t':
			continue
		case '\n', '\r', ',', ':', '}', ']', '\'', '"', '`', '/':
			return true
		case '+':
			return concatFollows(in, i)
		case 0xE2:
			return smartOpen(in, i) != quoteNone || i+2 < len(in) && in[i+1] == 0x80 && in[i+2] == rightSingle
		}
		return false
	}
	return true
}

// endCutString closes a string that the end of input cut off.
func (p *parser) endCutString() *parseError {
	p.out = append(p.out, '"')
	p.pos = len(p.in)
	p.markTruncated()
	return nil
}

// escape copies the escape sequence at in[j] (a backslash) and returns the
// position after it, or len(in) when the input ends inside it, in which
// case the partial escape is dropped. Python escapes (\' and \xHH) are
// accepted; \' in a double-quoted string counts as a single-quote repair,
// \xHH anywhere as a Python literal. A backslash that starts no escape
// (a Windows path, a regular expression: "D:\data", "\d+") is kept as a
// literal backslash, and what follows it is read as ordinary content.
//
// Two shapes are refused, because every reading of them may be wrong:
// \a and \v, which are control characters in C, Go and Python, the
// letter itself in JavaScript and a backslash in a path; and \u with
// fewer than four hex digits before the string's end quote ("\u26"),
// which was meant as a character, but which one is unknown.
func (p *parser) escape(j int, alt bool) (int, *parseError) {
	in := p.in
	if j+1 >= len(in) {
		return len(in), nil
	}
	switch e := in[j+1]; e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.out = append(p.out, '\\', e)
		return j + 2, nil
	case 'a', 'v':
		return j, p.fail(j, "%s is no JSON escape: a control character in C and Python, the letter in JavaScript; write %s for a backslash and the letter", `\`+string(e), `\\`+string(e))
	case '\n':
		// A backslash at the end of a line continues the string on the
		// next (JavaScript, Python): the line break is kept, the
		// backslash was only there to allow it.
		p.reps.add(idInvalidEscapes)
		p.out = append(p.out, '\\', 'n')
		return j + 2, nil
	case '\'':
		if !alt {
			p.reps.add(idSingleQuotes)
		}
		p.out = append(p.out, '\'')
		return j + 2, nil
	case 'u':
		end, ok := hexDigits(in, j+2, 4)
		if ok && end > len(in) {
			return len(in), nil
		}
		if ok {
			p.out = append(p.out, in[j:end]...)
			return end, nil
		}
		if k := hexRun(in, j+2, min(end, len(in))); k > j+2 && k < len(in) && (in[k] == '"' || in[k] == '\'') {
			return j, p.fail(j, "unicode escape %s ends at the quote, short of its 4 hex digits", string(in[j:k]))
		}
	case 'x':
		end, ok := hexDigits(in, j+2, 2)
		if ok && end > len(in) {
			p.reps.add(idPythonLiterals)
			return len(in), nil
		}
		if ok {
			p.reps.add(idPythonLiterals)
			p.out = append(p.out, '\\', 'u', '0', '0', in[j+2], in[j+3])
			return end, nil
		}
	}
	p.reps.add(idInvalidEscapes)
	p.out = append(p.out, '\\', '\\')
	return j + 1, nil
}

// hexRun returns where the hex digits starting at in[i] end, at most at
// end (at most len(in)).
func hexRun(in []byte, i, end int) int {
	for i < end && isHex(in[i]) {
		i++
	}
	return i
}

// hexDigits checks the n hex digits that should start at in[i] and returns
// where they end, past len(in) when the input ends among them; ok is false
// when a byte that is not a hex digit comes first.
func hexDigits(in []byte, i, n int) (end int, ok bool) {
	for k := i; k < i+n; k++ {
		if k >= len(in) {
			return i + n, true
		}
		if !isHex(in[k]) {
			return i + n, false
		}
	}
	return i + n, true
}

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// escapeControl writes the JSON escape of the raw control character at
// in[at], or refuses the value when the character is one that no text
// holds (see notText).
func (p *parser) escapeControl(at int) *parseError {
	c := p.in[at]
	if notText(c) {
		return p.fail(at, "raw control character %U in a string: the bytes there are not text", rune(c))
	}
	p.reps.add(idControlChars)
	p.writeControl(c)
	return nil
}

// notText reports whether c is a control character that text does not
// hold: NUL and the other C0 controls that are neither layout (tab, line
// breaks, vertical tab, form feed, backspace) nor carried by terminal
// output (BEL, and ESC of colour codes). Raw inside a string, such a byte
// means binary data or a wrong encoding, and escaping it would pass that
// on as the agent's text.
func notText(c byte) bool {
	return c < 0x20 && (c < 0x07 || c > 0x0d) && c != 0x1b
}

// writeControl writes the JSON escape of control character c.
func (p *parser) writeControl(c byte) {
	switch c {
	case '\n':
		p.out = append(p.out, '\\', 'n')
	case '\r':
		p.out = append(p.out, '\\', 'r')
	case '\t':
		p.out = append(p.out, '\\', 't')
	case '\b':
		p.out = append(p.out, '\\', 'b')
	case '\f':
		p.out = append(p.out, '\\', 'f')
	default:
		const hex = "0123456789abcdef"
		p.out = append(p.out, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
	}
}
