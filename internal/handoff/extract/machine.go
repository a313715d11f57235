package extract

import "fmt"

// state is the position of the strict JSON state machine inside a candidate.
type state uint8

const (
	stValue    state = iota // expecting a value: after ':' or after ',' in an array
	stArrFirst              // after '[': a value or ']'
	stObjFirst              // after '{': a key or '}'
	stObjKey                // after ',' in an object: a key
	stColon                 // after a key: ':'
	stAfter                 // after a value in a container: ',' or the closer
	stStr                   // inside a string (key or value, see machine.strNext)
	stStrEsc                // after '\' in a string
	stStrHex                // inside the four hex digits of a \u escape
	stNeg                   // after a leading '-'
	stZero                  // after a leading '0'
	stInt                   // in the integer digits
	stDot                   // after '.', expecting a fraction digit
	stFrac                  // in the fraction digits
	stExpMark               // after 'e' or 'E'
	stExpSign               // after the exponent's sign
	stExp                   // in the exponent digits
	stLit                   // inside true, false or null
)

// outcome is how a run of the state machine over a slice ended.
type outcome uint8

const (
	outMore outcome = iota // every byte consumed; the value is still open
	outDone                // the last consumed byte closed the value
	outFail                // the last consumed byte is not valid JSON here
	outDeep                // the last consumed byte opened a container beyond maxDepth
)

// Container kinds kept on the nesting stack.
const (
	inObject byte = '{'
	inArray  byte = '['
)

// strStop marks the bytes that end the fast path through a string: the
// closing quote, an escape and the control characters JSON forbids raw.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// isDigit reports whether c is an ASCII decimal digit.
func isDigit(c byte) bool { return c-'0' < 10 }

// isHex reports whether c is an ASCII hexadecimal digit.
func isHex(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 6
}

// isSpace reports whether c is JSON insignificant whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// machine validates one candidate strictly, byte by byte, across any number
// of slices. It keeps only a small state and the nesting stack, so feeding
// it a value in pieces costs no more than feeding it whole.
type machine struct {
	st       state
	strNext  state  // state after the current string closes: stColon for keys, stAfter for values
	hex      int    // hex digits seen in the current \u escape
	lit      string // remaining bytes of the current literal
	stack    []byte // open containers, innermost last
	maxDepth int
	failMsg  string // why the last outFail happened
	failByte byte   // the byte that caused it
}

// open starts a candidate at its opening bracket c ('{' or '[').
func (m *machine) open(c byte) {
	m.stack = append(m.stack[:0], c)
	if c == '{' {
		m.st = stObjFirst
	} else {
		m.st = stArrFirst
	}
}

// fail records why p[i] is invalid and returns the count consumed through it.
func (m *machine) fail(p []byte, i int, msg string) (int, outcome) {
	m.failMsg = msg
	m.failByte = p[i]
	return i + 1, outFail
}

// run feeds p to the machine. It returns how many bytes it consumed and why
// it stopped; on anything but outMore the last consumed byte is the one
// that completed, broke or overflowed the value.
func (m *machine) run(p []byte) (int, outcome) {
	st := m.st
	i := 0
	for i < len(p) {
		c := p[i]
		switch st {
		case stValue, stArrFirst:
			switch {
			case isSpace(c):
			case c == '"':
				st, m.strNext = stStr, stAfter
			case c == '{' || c == '[':
				if len(m.stack) >= m.maxDepth {
					m.st = st
					return i + 1, outDeep
				}
				m.stack = append(m.stack, c)
				if c == '{' {
					st = stObjFirst
				} else {
					st = stArrFirst
				}
			case c == '-':
				st = stNeg
			case c == '0':
				st = stZero
			case c >= '1' && c <= '9':
				st = stInt
			case c == 't':
				st, m.lit = stLit, "rue"
			case c == 'f':
				st, m.lit = stLit, "alse"
			case c == 'n':
				st, m.lit = stLit, "ull"
			case c == ']' && st == stArrFirst:
				st = stAfter
				if m.pop() {
					m.st = st
					return i + 1, outDone
				}
			default:
				m.st = st
				return m.fail(p, i, "looking for beginning of value")
			}
		case stObjFirst, stObjKey:
			switch {
			case isSpace(c):
			case c == '"':
				st, m.strNext = stStr, stColon
			case c == '}' && st == stObjFirst:
				st = stAfter
				if m.pop() {
					m.st = st
					return i + 1, outDone
				}
			default:
				m.st = st
				return m.fail(p, i, "looking for beginning of object key string")
			}
		case stColon:
			switch {
			case isSpace(c):
			case c == ':':
				st = stValue
			default:
				m.st = st
				return m.fail(p, i, "after object key")
			}
		case stAfter:
			top := m.stack[len(m.stack)-1]
			switch {
			case isSpace(c):
			case c == ',':
				if top == inObject {
					st = stObjKey
				} else {
					st = stValue
				}
			case c == '}' || c == ']':
				want := inArray
				if c == '}' {
					want = inObject
				}
				if want != top {
					m.st = st
					return m.fail(p, i, afterMsg(top))
				}
				if m.pop() {
					m.st = st
					return i + 1, outDone
				}
			default:
				m.st = st
				return m.fail(p, i, afterMsg(top))
			}
		case stStr:
			for i < len(p) && !strStop[p[i]] {
				i++
			}
			if i == len(p) {
				continue
			}
			switch p[i] {
			case '"':
				st = m.strNext
			case '\\':
				st = stStrEsc
			default:
				m.st = st
				return m.fail(p, i, "in string literal")
			}
		case stStrEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				st = stStr
			case 'u':
				st, m.hex = stStrHex, 0
			default:
				m.st = st
				return m.fail(p, i, "in string escape code")
			}
		case stStrHex:
			if !isHex(c) {
				m.st = st
				return m.fail(p, i, `in \u hexadecimal character escape`)
			}
			m.hex++
			if m.hex == 4 {
				st = stStr
			}
		case stNeg:
			switch {
			case c == '0':
				st = stZero
			case c >= '1' && c <= '9':
				st = stInt
			default:
				m.st = st
				return m.fail(p, i, "in numeric literal")
			}
		case stInt, stFrac, stExp:
			for i < len(p) && isDigit(p[i]) {
				i++
			}
			if i == len(p) {
				continue
			}
			switch c = p[i]; {
			case st == stInt && c == '.':
				st = stDot
			case st != stExp && (c == 'e' || c == 'E'):
				st = stExpMark
			default:
				st = stAfter // the number ended; c is looked at again
				continue
			}
		case stZero:
			switch c {
			case '.':
				st = stDot
			case 'e', 'E':
				st = stExpMark
			default:
				st = stAfter
				continue
			}
		case stDot:
			if !isDigit(c) {
				m.st = st
				return m.fail(p, i, "after decimal point in numeric literal")
			}
			st = stFrac
		case stExpMark:
			switch {
			case c == '+' || c == '-':
				st = stExpSign
			case isDigit(c):
				st = stExp
			default:
				m.st = st
				return m.fail(p, i, "in exponent of numeric literal")
			}
		case stExpSign:
			if !isDigit(c) {
				m.st = st
				return m.fail(p, i, "in exponent of numeric literal")
			}
			st = stExp
		case stLit:
			if c != m.lit[0] {
				m.st = st
				return m.fail(p, i, "in literal (expecting "+quoteByte(m.lit[0])+")")
			}
			m.lit = m.lit[1:]
			if m.lit == "" {
				st = stAfter
			}
		}
		i++
	}
	m.st = st
	return i, outMore
}

// pop closes the innermost container and reports whether it was the
// outermost one, which completes the value.
func (m *machine) pop() (done bool) {
	m.stack = m.stack[:len(m.stack)-1]
	return len(m.stack) == 0
}

// afterMsg names the context of an unexpected byte after a value.
func afterMsg(top byte) string {
	if top == inObject {
		return "after object key:value pair"
	}
	return "after array element"
}

// quoteByte renders c for an error message: printable ASCII in quotes,
// anything else in hex. It runs only when a candidate fails.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("0x%02x", c)
}
