package repair

import "bytes"

// scalar parses a string, number or bare word at p.pos, whose first byte is c.
func (p *parser) scalar(c byte) *parseError {
	switch {
	case c == '"':
		return p.dqString(false)
	case c == '\\' && p.escQuoteAt(p.pos):
		return p.escString()
	case c == '\'':
		p.reps.add(idSingleQuotes)
		return p.altString(quoteSingle)
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		return p.number()
	case isWordByte(c):
		return p.word(p.pos, false)
	}
	if q := smartOpen(p.in, p.pos); q != quoteNone {
		p.reps.add(idSmartQuotes)
		return p.altString(q)
	}
	return p.fail(p.pos, "expected a value, found %q", c)
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
			return nil
		}
	}
	return p.fail(start, "unexpected word %q", w)
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
	if in[p.pos] == '-' {
		p.out = append(p.out, '-')
	}
	ds := i
	for i < len(in) && isDigit(in[i]) {
		i++
	}
	switch digits := in[ds:i]; {
	case len(digits) > 1 && digits[0] == '0':
		p.reps.add(idNumberFormat)
		k := 0
		for k < len(digits)-1 && digits[k] == '0' {
			k++
		}
		p.out = append(p.out, digits[k:]...)
	case len(digits) > 0:
		p.out = append(p.out, digits...)
	case i >= len(in) && signed:
		p.out = append(p.out, '0')
		p.markTruncated()
	case i < len(in) && in[i] == '.' && (i+1 >= len(in) || isDigit(in[i+1])):
		p.reps.add(idNumberFormat)
		p.out = append(p.out, '0')
	default:
		return p.fail(p.pos, "invalid number")
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
		default:
			return p.fail(i, "exponent without digits")
		}
	}
	if i < len(in) && (isWordByte(in[i]) || in[i] == '.') {
		return p.fail(i, "invalid number")
	}
	p.pos = i
	return nil
}
