package repair

// JSON cut out of a string literal keeps the literal's escapes: agents
// that were shown a handoff as a string, or that log one, hand over
// {\"name\": \"x\", \"tags\": [\"a\"]} without the outer quotes that would
// make it string-encoded JSON. Such a value is read in escaped mode (one
// mode per value, set by the first member): every quote is the two bytes
// \", the literal's escaped whitespace (\n, \t, \r) separates tokens, and
// the escapes of the strings inside are doubled (\\n, \\\").

// escQuoteAt reports whether, in escaped mode, an escaped quote \" starts
// at in[i].
func (p *parser) escQuoteAt(i int) bool {
	return p.esc && i+1 < len(p.in) && p.in[i] == '\\' && p.in[i+1] == '"'
}

// escapedStart reports whether the backslash at p.pos, the first byte of a
// top-level container's first member, begins escaped JSON: after spaces
// and escaped whitespace comes an escaped quote. If so it turns escaped
// mode on and moves p.pos to that quote.
func (p *parser) escapedStart() bool {
	in := p.in
	for i := p.pos; i+1 < len(in); {
		switch {
		case isSpace(in[i]):
			i++
		case in[i] != '\\':
			return false
		case in[i+1] == 'n' || in[i+1] == 't' || in[i+1] == 'r':
			i += 2
		case in[i+1] == '"':
			p.esc, p.pos = true, i
			return true
		default:
			return false
		}
	}
	return false
}

// escString copies a string of escaped JSON, starting at the \" at p.pos.
// Each character of the string literal is decoded first (\" is a quote,
// \\ a backslash, \n a line feed, …) and the bytes it yields are read as
// the content of the inner string, with its own escapes. Escapes of
// non-ASCII characters are copied as they are, so surrogate pairs stay
// whole. A string cut off by the end of input is closed.
func (p *parser) escString() *parseError {
	in := p.in
	i := p.pos + 2
	p.out = append(p.out, '"')
	inEsc := false // the inner string's previous byte was a backslash
	for i < len(in) {
		b, next, raw, ok := literalChar(in, i)
		if !ok {
			break
		}
		if raw {
			if inEsc {
				p.reps.add(idInvalidEscapes)
				p.out = append(p.out, '\\', '\\')
				inEsc = false
			}
			p.out = append(p.out, in[i:next]...)
			i = next
			continue
		}
		i = next
		if inEsc {
			inEsc = false
			switch b {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.out = append(p.out, '\\', b)
				continue
			case '\'':
				p.out = append(p.out, '\'')
				continue
			case 'u':
				end, hex := hexDigits(in, i, 4)
				if end > len(in) {
					return p.endCutString()
				}
				if hex {
					p.out = append(p.out, '\\', 'u')
					p.out = append(p.out, in[i:end]...)
					i = end
					continue
				}
			}
			p.reps.add(idInvalidEscapes)
			p.out = append(p.out, '\\', '\\')
		}
		switch {
		case b == '"':
			p.out = append(p.out, '"')
			p.pos = i
			return nil
		case b == '\\':
			inEsc = true
		case b < 0x20:
			p.writeControl(b)
		default:
			p.out = append(p.out, b)
		}
	}
	return p.endCutString()
}

// literalChar decodes the character of a string literal at in[i]: the
// byte it stands for and where the next one starts. raw is set for the
// \uXXXX escape of a non-ASCII character, which stands for no single byte;
// ok is false when the input ends inside an escape. A backslash that
// starts no escape stands for itself.
func literalChar(in []byte, i int) (b byte, next int, raw, ok bool) {
	if in[i] != '\\' {
		return in[i], i + 1, false, true
	}
	if i+1 >= len(in) {
		return 0, 0, false, false
	}
	switch e := in[i+1]; e {
	case '"', '\\', '/':
		return e, i + 2, false, true
	case 'b':
		return '\b', i + 2, false, true
	case 'f':
		return '\f', i + 2, false, true
	case 'n':
		return '\n', i + 2, false, true
	case 'r':
		return '\r', i + 2, false, true
	case 't':
		return '\t', i + 2, false, true
	case 'u':
		end, hex := hexDigits(in, i+2, 4)
		if end > len(in) {
			return 0, 0, false, false
		}
		if hex {
			v := 0
			for _, h := range in[i+2 : end] {
				v = v<<4 | hexValue(h)
			}
			if v < 0x80 {
				return byte(v), end, false, true
			}
			return 0, end, true, true
		}
	}
	return '\\', i + 1, false, true
}

// hexValue is the value of hex digit h.
func hexValue(h byte) int {
	switch {
	case isDigit(h):
		return int(h - '0')
	case h >= 'a':
		return int(h-'a') + 10
	}
	return int(h-'A') + 10
}
