package handoff

import (
	"bytes"
	"unicode/utf8"
)

// lineColumn converts a byte offset into a 1-based line and a 1-based
// column counted in bytes, as the repair package counts them.
func lineColumn(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	col = len(before) - start + 1
	return line, col
}

// cutBytes returns at most n bytes of b, shortened further so that it does
// not end inside a UTF-8 sequence.
func cutBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// cutString shortens s to at most n bytes on a character boundary, marking
// the cut with "…".
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(cutBytes([]byte(s), n)) + "…"
}

// excerptMarker marks the point of an error in an excerpt, as the repair
// package marks it.
const excerptMarker = ">>>"

// excerptAround returns about 20 bytes either side of off, with
// excerptMarker at off, cut on character boundaries.
func excerptAround(data []byte, off int64) string {
	const span = 20
	off = min(max(off, 0), int64(len(data)))
	lo, hi := max(off-span, 0), min(off+span, int64(len(data)))
	for lo > 0 && lo < off && !utf8.RuneStart(data[lo]) {
		lo--
	}
	for hi < int64(len(data)) && hi > off && !utf8.RuneStart(data[hi]) {
		hi++
	}
	return string(data[lo:off]) + excerptMarker + string(data[off:hi])
}

// tailExcerpt returns about the last 40 bytes of data, cut on a character
// boundary, to show where a cut-off value ends.
func tailExcerpt(data []byte) string {
	const span = 40
	lo := max(len(data)-span, 0)
	for lo > 0 && !utf8.RuneStart(data[lo]) {
		lo--
	}
	return string(data[lo:])
}
