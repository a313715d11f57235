package handoff

// looksLikeJSON reports whether the candidate that failed at off looks like
// an attempt at JSON rather than prose that happens to contain a bracket.
// The candidate's opening bracket is taken to be the nearest '{' or '['
// at or before off; it looks like JSON when what follows it is a string,
// a nested container, a closing bracket, a number or literal (in an
// array), or an unquoted key followed by ':' (in an object).
func looksLikeJSON(data []byte, off int64) bool {
	if off >= int64(len(data)) {
		off = int64(len(data)) - 1
	}
	start := int64(-1)
	for i := off; i >= 0; i-- {
		if data[i] == '{' || data[i] == '[' {
			start = i
			break
		}
	}
	if start < 0 {
		return false
	}
	open := data[start]
	i := skipSpace(data, start+1)
	if i >= int64(len(data)) {
		return true // the bracket is the last thing: a value cut off at once
	}
	switch c := data[i]; {
	case c == '"' || c == '\'' || c == '{' || c == '[' || c == '}' || c == ']':
		return true
	case c == 0xE2: // smart quotes (U+201C, U+2018) start with 0xE2
		return true
	case open == '[' && (c == '-' || (c >= '0' && c <= '9')):
		return true
	case open == '[':
		return hasWord(data[i:], "true") || hasWord(data[i:], "false") || hasWord(data[i:], "null")
	case isIdentStart(c):
		j := i
		for j < int64(len(data)) && isIdent(data[j]) {
			j++
		}
		j = skipSpace(data, j)
		return j < int64(len(data)) && data[j] == ':'
	}
	return false
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(data []byte, i int64) int64 {
	for i < int64(len(data)) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// hasWord reports whether b starts with word not followed by a letter.
func hasWord(b []byte, word string) bool {
	if len(b) < len(word) || string(b[:len(word)]) != word {
		return false
	}
	return len(b) == len(word) || !isIdent(b[len(word)])
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
