package ghsummary

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxCell is the longest text, in runes, put in a table cell or a heading.
const maxCell = 200

// maxBlock is the longest text, in bytes, put in one code block: an error
// or a diagnosis past it is cut, with a note saying so.
const maxBlock = 4000

// text escapes s for Markdown inline text: one line, at most n runes, with
// every ASCII punctuation character backslash-escaped (CommonMark allows
// that for all of them) so that nothing in s becomes a link, an emphasis,
// a table separator, an HTML tag or a mention.
func text(s string, n int) string {
	var b strings.Builder
	runes := 0
	for _, r := range oneLine(s) {
		if runes == n {
			b.WriteString("…")
			break
		}
		runes++
		if r < utf8.RuneSelf && unicode.IsPunct(r) || r < utf8.RuneSelf && unicode.IsSymbol(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// oneLine replaces line breaks and tabs by spaces and drops other control
// characters, invalid UTF-8 and bidirectional controls.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r == utf8.RuneError, unicode.IsControl(r), unicode.In(r, unicode.Bidi_Control):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// block keeps s's lines but drops control characters other than newlines
// and tabs, and cuts it at maxBlock bytes on a rune boundary.
func block(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r == '\r' || r == '\u2028' || r == '\u2029':
			r = '\n'
		case r == utf8.RuneError, unicode.IsControl(r), unicode.In(r, unicode.Bidi_Control):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > maxBlock {
			b.WriteString("\n… (cut at 4000 bytes; see cadence inspect)")
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), "\n ")
}

// fence returns a code fence of backticks longer than any run of
// backticks in s (at least three), so that s cannot close it.
func fence(s string) string {
	return strings.Repeat("`", max(3, longestTicks(s)+1))
}

// longestTicks is the length of the longest run of backticks in s.
func longestTicks(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// code renders s as inline code that s cannot close: delimited by a
// backtick run longer than any inside it, padded with spaces when s
// starts or ends with a backtick.
func code(s string) string {
	s = oneLine(s)
	d := strings.Repeat("`", longestTicks(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return d + " " + s + " " + d
	}
	return d + s + d
}
