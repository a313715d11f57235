package repair

import "bytes"

// scanner walks an input once, finds the top-level values in it and hands
// each one to emit. Outside values it skips prose and notes markdown code
// fences; inside them the parser tracks strings, so braces, quotes and
// fences within strings never confuse it.
type scanner struct {
	in    []byte
	p     parser
	emit  func(*candidate)       // takes ownership of c.json
	fresh func(start int) []byte // an empty buffer for a value starting at start

	prose   bool // text other than values, whitespace and fence markers
	found   int  // values emitted
	err     parseError
	failed  bool // err is set
	errGain int  // bytes the failed parse behind err consumed
}

// scan searches in[from:]. It returns a fatal error only (nesting too deep);
// other failures are remembered in s.err for when nothing is found.
func (s *scanner) scan(from int) *parseError {
	in := s.in
	i := skipWS(in, from)
	if i < len(in) && in[i] != '{' && in[i] != '[' && !hasFence(in, i) {
		i = s.tryScalar(i, fenceNone)
	}
	fence := fenceNone
	for i < len(in) {
		switch c := in[i]; {
		case hasFence(in, i):
			for i < len(in) && in[i] == '`' {
				i++
			}
			if fence != fenceNone {
				fence = fenceNone
				continue
			}
			start := i
			for i < len(in) && (isWordByte(in[i]) || in[i] == '-' || in[i] == '+') {
				i++
			}
			fence = fenceKindOf(in[start:i])
			if j := skipWS(in, i); j < len(in) && in[j] != '{' && in[j] != '[' && !hasFence(in, j) {
				i = s.tryScalar(j, fence)
			}
		case c == '[' && taskBox(in, i):
			s.prose = true
			i += 3
		case c == '{' || c == '[':
			next, err := s.tryContainer(i, fence)
			if err != nil {
				return err
			}
			i = next
		default:
			if !isSpace(c) {
				s.prose = true
			}
			i++
		}
	}
	return nil
}

// taskBox reports whether in[i] starts the box of an unchecked markdown
// task-list item, "[ ]" after a list marker at the start of a line
// ("- [ ] write tests"): prose, not an empty array. The look back covers
// the marker and the indentation before it, which no other box shares.
func taskBox(in []byte, i int) bool {
	if i < 2 || i+2 >= len(in) || in[i+1] != ' ' || in[i+2] != ']' || in[i-1] != ' ' {
		return false
	}
	m := i - 2
	if in[m] != '-' && in[m] != '*' && in[m] != '+' {
		return false
	}
	for m--; m >= 0 && (in[m] == ' ' || in[m] == '\t'); m-- {
	}
	return m < 0 || in[m] == '\n'
}

// fenceKindOf classifies a fence by its info string.
func fenceKindOf(lang []byte) fenceKind {
	switch {
	case len(lang) == 0:
		return fenceBare
	case len(lang) >= 4 && bytes.EqualFold(lang[:4], []byte("json")):
		return fenceJSON
	}
	return fenceOther
}

// tryScalar accepts a string, number or literal at i only when it is all
// there is (up to the end of input or of the fence): a scalar is otherwise
// indistinguishable from prose. It returns where scanning goes on.
func (s *scanner) tryScalar(i int, fence fenceKind) int {
	p := &s.p
	p.reset(i, s.fresh(i))
	p.stopFence = fence != fenceNone
	if i+1 < len(s.in) && s.in[i] == '\\' && s.in[i+1] == '"' {
		// \"hello\": a string cut out of a string literal.
		p.esc = true
		p.reps.add(idEscapedQuotes)
	}
	if err := p.parse(); err != nil {
		// A bare word or number that fails is prose; a string that fails
		// (a bad escape) is broken JSON worth reporting.
		if s.in[i] == '"' {
			s.remember(err, i)
		}
		return i
	}
	end := len(s.in)
	if fence != fenceNone {
		if f := bytes.Index(s.in[p.pos:], []byte("```")); f >= 0 {
			end = p.pos + f
		}
	}
	j := skipWS(s.in, p.pos)
	switch {
	case j < end && s.in[j] == ';' && p.reps.has(idFunctionWrapper):
		j = skipWS(s.in, j+1) // callback(2);
	case j < end && s.in[j] == ',' && skipWS(s.in, j+1) >= end:
		p.reps.add(idTrailingComma) // 4,
		j = skipWS(s.in, j+1)
	case j < end && !p.bareTop && (s.in[j] == ',' || bytes.IndexByte(s.in[p.pos:j], '\n') >= 0):
		return s.tryList(i, end, fence)
	}
	if p.bareTop || j < end {
		return i
	}
	kind := byte(0)
	if p.out[0] == '"' {
		kind = '"'
	}
	s.found++
	s.emit(&candidate{json: p.out, reps: p.reps, truncated: p.truncated, kind: kind, fence: fence, start: i, end: max(p.pos, j)})
	return p.pos
}

// tryList accepts the scalars at i, separated by commas or line breaks
// up to end (1,2,3 or one number a line), as one array when they are all
// JSON scalars: bare words stay prose.
func (s *scanner) tryList(i, end int, fence fenceKind) int {
	p := &s.p
	p.reset(i, s.fresh(i))
	p.stopFence = fence != fenceNone
	p.out = append(p.out, '[')
	p.stack = append(p.stack, '[')
	p.virtual = true
	err := p.parse()
	p.virtual = false
	if err != nil || p.bare || p.truncated || p.members < 2 || skipWS(s.in, p.pos) < end {
		return i
	}
	p.reps.add(idConcatenated)
	s.found++
	s.emit(&candidate{json: p.out, reps: p.reps, kind: '[', fence: fence, start: i, end: p.pos})
	return p.pos
}

// tryContainer parses the object or array at i and returns where scanning
// goes on: after the value, or after the point where it failed. When a
// failed value had complete members, or a token only JSON has (a quoted
// string, a key and its ':'), it was JSON, not prose with a brace in it,
// and scanning resumes after its closing bracket, so that no fragment of
// it is mistaken for the handoff.
func (s *scanner) tryContainer(i int, fence fenceKind) (int, *parseError) {
	p := &s.p
	p.reset(i, s.fresh(i))
	p.stopFence = fence != fenceNone
	err := p.parse()
	if err == nil {
		s.found++
		s.emit(&candidate{json: p.out, reps: p.reps, truncated: p.truncated, kind: s.in[i], fence: fence, start: i, end: p.pos})
		return p.pos, nil
	}
	if err.fatal {
		return 0, err
	}
	s.prose = true
	s.remember(err, i)
	if p.members > 0 || p.evidence {
		return skipBrackets(s.in, err.off, len(p.stack)), nil
	}
	return max(err.off, i+1), nil
}

// remember keeps the failure that got furthest into its value: that is the
// one to report when no value is found.
func (s *scanner) remember(err *parseError, start int) {
	if gain := err.off - start; !s.failed || gain >= s.errGain {
		s.err, s.errGain, s.failed = *err, gain, true
	}
}

// skipBrackets returns the position after the bracket that closes depth
// open containers, starting at i, skipping double-quoted strings.
func skipBrackets(in []byte, i, depth int) int {
	for ; i < len(in); i++ {
		switch in[i] {
		case '"':
			for i++; i < len(in) && in[i] != '"'; i++ {
				if in[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth <= 0 {
				return i + 1
			}
		}
	}
	return len(in)
}

// listGap reports whether gap, the text between two top-level values (or
// before the first or after the last), holds nothing but whitespace,
// commas and comments; sep reports whether it also separates: a line
// break or a comma.
func listGap(gap []byte) (ok, sep bool) {
	for i := 0; i < len(gap); i++ {
		switch c := gap[i]; {
		case c == '\n' || c == ',':
			sep = true
		case isSpace(c):
		case c == '/' && i+1 < len(gap) && gap[i+1] == '/':
			for i < len(gap) && gap[i] != '\n' {
				i++
			}
			sep = true
		case c == '/' && i+1 < len(gap) && gap[i+1] == '*':
			end := bytes.Index(gap[i+2:], []byte("*/"))
			if end < 0 {
				return false, sep
			}
			i += end + 3
		default:
			return false, sep
		}
	}
	return true, sep
}
