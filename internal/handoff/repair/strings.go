package repair

// quoteKind is the delimiter that opened a string.
type quoteKind uint8

const (
	quoteNone        quoteKind = iota
	quoteSingle                // 'text'
	quoteSmartDouble           // “text”
	quoteSmartSingle           // ‘text’
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
}

// dqString copies a double-quoted string starting at p.pos, escaping raw
// control characters. A string cut off by the end of input is closed.
func (p *parser) dqString() *parseError {
	in := p.in
	i := p.pos + 1
	p.out = append(p.out, '"')
	for {
		j := i
		for j < len(in) && !dqStop[in[j]] {
			j++
		}
		p.out = append(p.out, in[i:j]...)
		if j >= len(in) {
			return p.endCutString()
		}
		switch c := in[j]; c {
		case '"':
			p.out = append(p.out, '"')
			p.pos = j + 1
			return nil
		case '\\':
			next, err := p.escape(j, false)
			if err != nil {
				return err
			}
			if next >= len(in) {
				return p.endCutString()
			}
			i = next
		default:
			p.escapeControl(c)
			i = j + 1
		}
	}
}

// altString copies a string delimited by single or typographic quotes,
// starting at p.pos, re-quoting it with '"'. A single quote (or ’) only
// closes the string when what follows can follow a string: this keeps
// apostrophes such as it's inside the string.
func (p *parser) altString(q quoteKind) *parseError {
	in := p.in
	i := p.pos + 1
	if q != quoteSingle {
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
			if q == quoteSingle && closesString(in, j+1) {
				p.out = append(p.out, '"')
				p.pos = j + 1
				return nil
			}
			p.out = append(p.out, '\'')
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
			p.escapeControl(c)
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
// \xHH anywhere as a Python literal.
func (p *parser) escape(j int, alt bool) (int, *parseError) {
	in := p.in
	if j+1 >= len(in) {
		return len(in), nil
	}
	switch e := in[j+1]; e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.out = append(p.out, '\\', e)
		return j + 2, nil
	case '\'':
		if !alt {
			p.reps.add(idSingleQuotes)
		}
		p.out = append(p.out, '\'')
		return j + 2, nil
	case 'u':
		end, err := p.hexDigits(j, 2, 4)
		if err != nil || end > len(in) {
			return min(end, len(in)), err
		}
		p.out = append(p.out, in[j:end]...)
		return end, nil
	case 'x':
		p.reps.add(idPythonLiterals)
		end, err := p.hexDigits(j, 2, 2)
		if err != nil || end > len(in) {
			return min(end, len(in)), err
		}
		p.out = append(p.out, '\\', 'u', '0', '0', in[j+2], in[j+3])
		return end, nil
	}
	return 0, p.fail(j, "invalid escape %q in string", in[j:j+2])
}

// hexDigits checks the n hex digits of the escape at in[j], which start at
// in[j+skip], and returns the end of the escape. The end is past len(in)
// when the input ends inside the escape.
func (p *parser) hexDigits(j, skip, n int) (int, *parseError) {
	in := p.in
	for k := j + skip; k < j+skip+n; k++ {
		if k >= len(in) {
			return j + skip + n, nil
		}
		if !isHex(in[k]) {
			return 0, p.fail(j, "invalid escape %q in string", in[j:k+1])
		}
	}
	return j + skip + n, nil
}

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// escapeControl writes the JSON escape of a raw control character.
func (p *parser) escapeControl(c byte) {
	p.reps.add(idControlChars)
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
