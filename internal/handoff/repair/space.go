package repair

// skipSpace moves past whitespace and // or /* */ comments between tokens
// (and, in escaped mode, the escapes \n, \t and \r).
// An unterminated block comment runs to the end of input.
func (p *parser) skipSpace() {
	// Most tokens follow one another with no space between (compact
	// JSON): that case stays small enough to be inlined.
	if p.pos < len(p.in) && !spaceStart[p.in[p.pos]] {
		return
	}
	p.skipSpaceSlow()
}

// spaceStart marks the bytes that may start whitespace or a comment.
var spaceStart = func() (t [256]bool) {
	for _, c := range []byte{' ', '\t', '\n', '\r', '/', '\\'} {
		t[c] = true
	}
	for c := 0xC2; c < 256; c++ {
		t[c] = true
	}
	return t
}()

// skipSpaceSlow is skipSpace past at least one byte that may start space.
func (p *parser) skipSpaceSlow() {
	in := p.in
	for p.pos < len(in) {
		switch in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		case '/':
			if p.pos+1 >= len(in) {
				return
			}
			switch in[p.pos+1] {
			case '/':
				p.reps.add(idComments)
				p.pos += 2
				for p.pos < len(in) && in[p.pos] != '\n' {
					p.pos++
				}
			case '*':
				p.reps.add(idComments)
				p.pos += 2
				for p.pos < len(in) && !(in[p.pos] == '*' && p.pos+1 < len(in) && in[p.pos+1] == '/') {
					p.pos++
				}
				p.pos = min(p.pos+2, len(in))
			default:
				return
			}
		case '\\':
			// In escaped mode, the literal's escaped whitespace.
			if !p.esc || p.pos+1 >= len(in) || in[p.pos+1] != 'n' && in[p.pos+1] != 't' && in[p.pos+1] != 'r' {
				return
			}
			p.pos += 2
		default:
			if in[p.pos] < 0xC2 || !p.skipSpecialSpace() {
				return
			}
		}
	}
}

// skipSpecialSpace moves past a Unicode space at p.pos and reports
// whether there was one.
func (p *parser) skipSpecialSpace() bool {
	n := specialSpaceAt(p.in, p.pos)
	if n == 0 {
		return false
	}
	p.reps.add(idSpecialWhitespace)
	p.pos += n
	return true
}

// specialSpaceAt returns the length of a Unicode space at in[i] that
// agents and editors put between tokens: U+00A0, U+180E, U+2000 to U+200B,
// U+202F, U+205F, U+3000 and a byte order mark; 0 when there is none.
// Between tokens it is whitespace; inside strings it is kept.
func specialSpaceAt(in []byte, i int) int {
	if i+1 < len(in) && in[i] == 0xC2 && in[i+1] == 0xA0 {
		return 2
	}
	if i+2 >= len(in) {
		return 0
	}
	a, b, c := in[i], in[i+1], in[i+2]
	switch {
	case a == 0xE2 && b == 0x80 && (c >= 0x80 && c <= 0x8B || c == 0xAF),
		a == 0xE2 && b == 0x81 && c == 0x9F,
		a == 0xE3 && b == 0x80 && c == 0x80,
		a == 0xEF && b == 0xBB && c == 0xBF,
		a == 0xE1 && b == 0xA0 && c == 0x8E:
		return 3
	}
	return 0
}

// skipWS returns the first position at or after i that is not JSON
// whitespace.
func skipWS(in []byte, i int) int {
	for i < len(in) && isSpace(in[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hasFence reports whether a markdown code fence starts at in[i].
func hasFence(in []byte, i int) bool {
	return i+2 < len(in) && in[i] == '`' && in[i+1] == '`' && in[i+2] == '`'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isWordByte reports bytes of bare words such as true, None or NaN.
func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '$' }

// isKeyByte reports bytes allowed in an unquoted object key.
func isKeyByte(c byte) bool { return isWordByte(c) || c == '-' || c == '.' || c >= 0x80 }

// isKeyStart reports whether an object key starts at in[i].
func isKeyStart(in []byte, i int) bool {
	c := in[i]
	return c == '"' || c == '\'' || smartOpen(in, i) != quoteNone || isKeyByte(c) && c != 0xE2
}

// isValueStart reports whether a value starts at in[i].
func isValueStart(in []byte, i int) bool {
	switch c := in[i]; {
	case c == '{' || c == '[' || c == '"' || c == '\'' || c == '-' || c == '+' || c == '.':
		return true
	case isDigit(c) || isLetter(c) || c == '_' || c == '$':
		return true
	}
	return smartOpen(in, i) != quoteNone
}
