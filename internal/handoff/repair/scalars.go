package repair

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// scalar parses a string, number or bare word at p.pos, whose first byte is c.
func (p *parser) scalar(c byte) *parseError {
	if c == '"' {
		p.evidence = true
		return p.dqString(false)
	}
	return p.scalarPart(c)
}

// scalarPart parses one scalar, without a concatenation after it.
func (p *parser) scalarPart(c byte) *parseError {
	switch {
	case c == '"':
		p.evidence = true
		return p.dqString(false)
	case c == '\\' && p.escQuoteAt(p.pos):
		p.evidence = true
		return p.escString()
	case c == '\'':
		p.evidence = true
		p.reps.add(idSingleQuotes)
		return p.altString(quoteSingle)
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		return p.number()
	case isWordByte(c):
		return p.word(p.pos, false)
	case c == '/':
		return p.regex()
	case c == '`' && !hasFence(p.in, p.pos):
		p.evidence = true
		p.reps.add(idBacktickQuotes)
		return p.altString(quoteBacktick)
	}
	if q := smartOpen(p.in, p.pos); q != quoteNone {
		p.evidence = true
		p.reps.add(idSmartQuotes)
		return p.altString(q)
	}
	if c >= 0x80 && p.runeIsLetter(p.pos) {
		return p.unquoted(p.pos)
	}
	return p.fail(p.pos, "expected a value, found %q", p.runeAt(p.pos))
}

// runeAt returns the character at in[i], for messages: a byte of a
// multi-byte character alone would print as a different character.
func (p *parser) runeAt(i int) rune {
	r, _ := utf8.DecodeRune(p.in[i:])
	return r
}

// runeIsLetter reports whether the character at in[i] is a letter
// (a bare value may start with one: {"city": Zürich}, {"name": Łukasz}).
func (p *parser) runeIsLetter(i int) bool {
	return unicode.IsLetter(p.runeAt(i))
}

// concatenation joins the strings of a JavaScript concatenation ("a" +
// "b", with spaces, line breaks and comments around the '+') into the
// string just written, which ends p.out, and reports whether it joined
// any. Each part is read once. It is called where a '+' follows a string
// (next, and parse for a top-level string), never on the common path.
func (p *parser) concatenation() bool {
	joined := false
	for {
		if !p.plusAhead() {
			return joined
		}
		save, reps := p.pos, p.reps.mark()
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '+' {
			p.pos = save
			p.reps.undo(reps)
			return joined
		}
		p.pos++
		p.skipSpace()
		if p.pos >= len(p.in) || !isStringStart(p.in, p.pos) {
			p.pos = save
			p.reps.undo(reps)
			return joined
		}
		p.reps.add(idConcatenation)
		p.out = p.out[:len(p.out)-1] // the first part's closing quote
		mark := len(p.out)
		if err := p.scalarPart(p.in[p.pos]); err != nil {
			p.pos = save
			p.reps.undo(reps)
			p.out = append(p.out[:mark], '"')
			return joined
		}
		p.out = append(p.out[:mark], p.out[mark+1:]...) // the next part's opening quote
		joined = true
	}
}

// plusAhead reports whether, after plain whitespace, a '+' or a comment
// (which may hide one) comes next: the cheap test that spares a string
// not followed by a concatenation the full look.
func (p *parser) plusAhead() bool {
	k := p.pos
	for k < len(p.in) && isSpace(p.in[k]) {
		k++
	}
	return k < len(p.in) && (p.in[k] == '+' || p.in[k] == '/')
}

// isStringStart reports whether a quoted string starts at in[i].
func isStringStart(in []byte, i int) bool {
	return in[i] == '"' || in[i] == '\'' || in[i] == '`' && !hasFence(in, i) || smartOpen(in, i) != quoteNone
}

// unquoted writes the bare value that starts at start as a string: it
// runs to the next ',', bracket or line break, trailing spaces dropped
// ({"name": John Smith}, [https://x.org/a, 2], 2024-10-18T18:35:22Z). A
// '"' right before such a delimiter is the value's end quote, its start
// quote missing ({"a": foo"}). A word followed by '(' is a call around a
// value (ObjectId("1"), NumberLong(2)): the call is removed.
func (p *parser) unquoted(start int) *parseError {
	in := p.in
	i := start
	for i < len(in) && isWordByte(in[i]) {
		i++
	}
	if i > start && i < len(in) && in[i] == '(' {
		return p.wrapper(i + 1)
	}
	end := start
	quote := false
scan:
	for i = start; i < len(in); i++ {
		switch in[i] {
		case ',', '}', ']', '\n', '\r', '{', '[':
			break scan
		case '"':
			if endsValue(in, i+1) {
				quote = true
				break scan
			}
			if i > start && len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{' && keyAhead(in, i) {
				// {"key":value "key2":"value2"}: the next member's key
				// ends the bare value, and a comma is missing; swallowed,
				// it would make one wrong string of two members.
				break scan
			}
		case '/':
			if i+1 < len(in) && in[i+1] == '*' || i > start && in[i-1] == ' ' && i+1 < len(in) && in[i+1] == '/' {
				break scan
			}
		}
		if in[i] != ' ' && in[i] != '\t' {
			end = i + 1
		}
	}
	if end == start {
		return p.fail(start, "expected a value, found %q", p.runeAt(start))
	}
	p.reps.add(idUnquotedValue)
	p.bare = true
	if quote {
		p.reps.add(idMissingQuote)
	}
	if len(p.stack) == 0 && bytes.ContainsAny(in[start:end], " \t") {
		p.bareTop = true
	}
	p.out = append(p.out, '"')
	if err := p.copyRaw(start, end); err != nil {
		return err
	}
	p.out = append(p.out, '"')
	p.pos = end
	if quote {
		p.pos = i + 1
	}
	return nil
}

// keyAhead reports whether a quoted key and its ':' start at in[i], on
// one line.
func keyAhead(in []byte, i int) bool {
	j := i + 1
	for j < len(in) && in[j] != '"' && in[j] != '\n' {
		if in[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(in) || in[j] != '"' {
		return false
	}
	for j++; j < len(in) && (in[j] == ' ' || in[j] == '\t'); j++ {
	}
	return j < len(in) && in[j] == ':'
}

// copyRaw writes in[from:to] as the content of a JSON string: quotes and
// backslashes are escaped, control characters written as escapes, so the
// string holds exactly those bytes; a control character that is not text
// refuses the value (see notText).
func (p *parser) copyRaw(from, to int) *parseError {
	in := p.in
	for i := from; i < to; {
		j := i
		for j < to && !dqStop[in[j]] {
			j++
		}
		p.out = append(p.out, in[i:j]...)
		if j >= to {
			return nil
		}
		switch c := in[j]; c {
		case '"', '\\':
			p.out = append(p.out, '\\', c)
		default:
			if err := p.escapeControl(j); err != nil {
				return err
			}
		}
		i = j + 1
	}
	return nil
}

// wrapper reads the value inside a call such as ObjectId("123") or
// callback(2), whose '(' ends just before i, and the ')' after it.
func (p *parser) wrapper(i int) *parseError {
	p.reps.add(idFunctionWrapper)
	p.pos = i
	p.skipSpace()
	if p.pos >= len(p.in) {
		p.out = append(p.out, "null"...)
		p.markTruncated()
		return nil
	}
	if c := p.in[p.pos]; c == '{' || c == '[' || c == ')' {
		return p.fail(p.pos, "expected a value inside a call, found %q", p.runeAt(p.pos))
	}
	p.inCall = true
	err := p.scalar(p.in[p.pos])
	p.inCall = false
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ')' {
		p.pos++
		return nil
	}
	if p.pos >= len(p.in) {
		p.markTruncated()
		return nil
	}
	return p.fail(p.pos, "expected ')' after the value of a call, found %q", p.runeAt(p.pos))
}

// maxRegex bounds the length of a regular expression literal, so that a
// line of '/' in prose costs a bounded look each, never a scan to its end.
const maxRegex = 256

// regex writes a JavaScript regular expression literal (/a+b/i) as a
// string holding its text. It ends at the next '/' that no backslash
// escapes, on the same line, within maxRegex bytes.
func (p *parser) regex() *parseError {
	in := p.in
	i := p.pos + 1
	limit := min(len(in), p.pos+maxRegex)
	for ; i < limit && in[i] != '/' && in[i] != '\n'; i++ {
		if in[i] == '\\' {
			i++
		}
	}
	if i >= limit || in[i] != '/' {
		return p.fail(p.pos, "expected a value, found %q", '/')
	}
	i++
	for i < len(in) && isLetter(in[i]) {
		i++
	}
	p.reps.add(idUnquotedValue)
	p.bare = true
	p.out = append(p.out, '"')
	if err := p.copyRaw(p.pos, i); err != nil {
		return err
	}
	p.out = append(p.out, '"')
	p.pos = i
	return nil
}

// literal is a bare word a value may be written as.
type literal struct {
	word, json string
	repair     repairID // idTruncated when the word is already strict JSON
}

// literals in the order that settles which one a cut-off word completes to.
var literals = []literal{
	{"true", "true", idTruncated},
	{"false", "false", idTruncated},
	{"null", "null", idTruncated},
	{"True", "true", idPythonLiterals},
	{"False", "false", idPythonLiterals},
	{"None", "null", idPythonLiterals},
	{"NaN", "null", idNonFinite},
	{"Infinity", "null", idNonFinite},
	{"undefined", "null", idNonFinite},
}

// word parses the bare word at start. A word the input ends inside is
// completed to the first literal it begins. After a sign only Infinity is
// allowed (-Infinity is null like Infinity).
func (p *parser) word(start int, signed bool) *parseError {
	in := p.in
	end := start
	for end < len(in) && isWordByte(in[end]) {
		end++
	}
	w := in[start:end]
	for pass := range 2 {
		cut := pass == 1
		if cut && end < len(in) {
			break
		}
		for _, l := range literals {
			if signed && l.word != "Infinity" {
				continue
			}
			if !cut && string(w) != l.word || cut && !bytes.HasPrefix([]byte(l.word), w) {
				continue
			}
			if l.repair != idTruncated {
				p.reps.add(l.repair)
			}
			if cut {
				p.markTruncated()
			}
			p.out = append(p.out, l.json...)
			p.pos = end
			p.evidence = true
			return nil
		}
	}
	if signed {
		start--
	}
	return p.unquoted(start)
}

// number parses a number at p.pos, normalising the forms agents write that
// JSON forbids: a leading '+', leading zeros, '.5' and '1.'. A number the
// input ends inside is completed with a 0 digit.
func (p *parser) number() *parseError {
	in := p.in
	i := p.pos
	if in[i] == '+' || in[i] == '-' {
		i++
	}
	signed := i > p.pos
	if i < len(in) && isLetter(in[i]) {
		return p.word(i, true)
	}
	if in[p.pos] == '+' {
		p.reps.add(idNumberFormat)
	}
	mark := len(p.out)
	if in[p.pos] == '-' {
		p.out = append(p.out, '-')
	}
	ds := i
	for i < len(in) && isDigit(in[i]) {
		i++
	}
	switch digits := in[ds:i]; {
	case len(digits) > 1 && digits[0] == '0':
		// 0789 is a zip code or an id far more often than the number 789:
		// its digits are kept, as a string.
		p.out = p.out[:mark]
		return p.unquoted(p.pos)
	case len(digits) > 0:
		p.out = append(p.out, digits...)
	case i >= len(in) && signed:
		p.out = append(p.out, '0')
		p.markTruncated()
	case i < len(in) && in[i] == '.' && (i+1 >= len(in) || isDigit(in[i+1])):
		p.reps.add(idNumberFormat)
		p.out = append(p.out, '0')
	default:
		if signed || i < len(in) && in[i] == '.' {
			return p.fail(p.pos, "invalid number")
		}
		p.out = p.out[:mark]
		return p.unquoted(p.pos)
	}
	if i < len(in) && in[i] == '.' {
		i++
		fs := i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		p.out = append(p.out, '.')
		switch {
		case i > fs:
			p.out = append(p.out, in[fs:i]...)
		case i >= len(in):
			p.out = append(p.out, '0')
			p.markTruncated()
		default:
			p.reps.add(idNumberFormat)
			p.out = append(p.out, '0')
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		p.out = append(p.out, in[i])
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			p.out = append(p.out, in[i])
			i++
		}
		es := i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		switch {
		case i > es:
			p.out = append(p.out, in[es:i]...)
		case i >= len(in):
			p.out = append(p.out, '0')
			p.markTruncated()
		case endsValue(in, i):
			p.reps.add(idNumberFormat)
			p.out = append(p.out, '0')
		default:
			p.out = p.out[:mark]
			return p.unquoted(p.pos)
		}
	}
	if i < len(in) && (isWordByte(in[i]) || in[i] == '.' || in[i] == '-' || in[i] == ':') {
		// 0.0.1, 2e3.4, ES2020-style ids and dates: not a number, a bare value.
		p.out = p.out[:mark]
		return p.unquoted(p.pos)
	}
	p.pos = i
	p.evidence = true
	return nil
}
