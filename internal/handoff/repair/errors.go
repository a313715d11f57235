package repair

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrNoJSON reports input that holds no JSON value at all: empty output or
// prose without a single object or array in it. It is returned wrapped, so
// test for it with errors.Is.
var ErrNoJSON = errors.New("no JSON value found")

// Error describes input that holds JSON which cannot be repaired. Line and
// Column are 1-based and count bytes; Offset is the 0-based byte offset in
// the input given to Repair. Excerpt shows about 40 bytes around the point,
// with the marker ">>>" just before it.
type Error struct {
	Offset, Line, Column int
	Msg, Excerpt         string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("invalid JSON at line %d, column %d: %s, near %q", e.Line, e.Column, e.Msg, e.Excerpt)
}

// excerptMarker marks the point of an error inside Error.Excerpt.
const excerptMarker = ">>>"

// newError locates offset off in in and builds the caller-facing error.
func newError(in []byte, off int, msg string) *Error {
	off = min(max(off, 0), len(in))
	line := bytes.Count(in[:off], []byte{'\n'}) + 1
	col := off - (bytes.LastIndexByte(in[:off], '\n') + 1) + 1
	lo, hi := max(off-20, 0), min(off+20, len(in))
	for lo > 0 && lo < off && !utf8.RuneStart(in[lo]) {
		lo--
	}
	for hi < len(in) && hi > off && !utf8.RuneStart(in[hi]) {
		hi++
	}
	excerpt := string(in[lo:off]) + excerptMarker + string(in[off:hi])
	return &Error{Offset: off, Line: line, Column: col, Msg: msg, Excerpt: excerpt}
}
