package extract

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ErrorKind tells apart the ways a candidate can fail.
type ErrorKind int

const (
	// ErrMalformed: a '{' or '[' started a candidate that is not valid
	// JSON. Scanning restarted right after that bracket.
	ErrMalformed ErrorKind = iota + 1
	// ErrTooLarge: a value grew beyond Options.MaxBytes. Its bytes were
	// discarded, still validated, up to its closing bracket or to the
	// first byte that breaks its syntax, whichever came first.
	ErrTooLarge
	// ErrTooDeep: a value nested deeper than Options.MaxDepth. Its bytes
	// were discarded, following only strings and nesting, up to its end.
	ErrTooDeep
)

// String returns a short lower-case name for the kind.
func (k ErrorKind) String() string {
	switch k {
	case ErrMalformed:
		return "malformed"
	case ErrTooLarge:
		return "too large"
	case ErrTooDeep:
		return "too deep"
	default:
		return fmt.Sprintf("ErrorKind(%d)", int(k))
	}
}

// Error describes one failed candidate.
type Error struct {
	Kind ErrorKind
	// Start is the byte offset of the failed candidate's opening bracket.
	Start int64
	// Offset and Line locate the byte at which the candidate failed: the
	// offending byte of a malformed candidate, the first byte beyond
	// MaxBytes, or the bracket that exceeded MaxDepth.
	Offset int64
	Line   int
	// Msg says what was wrong, in the style of encoding/json. It names
	// the offending byte: a stream cut into chunks may not hold the rest
	// of its character. MsgIn names the character.
	Msg string

	reason string // what Msg says after the byte, for MsgIn
}

// MsgIn is Msg with the offending character named from data, the whole
// stream the error was found in: a no-break space is '\u00a0' (U+00A0),
// not its first byte 0xc2. It is Msg when data does not hold the
// character.
func (e *Error) MsgIn(data []byte) string {
	if e.Kind != ErrMalformed || e.reason == "" || e.Offset < 0 || e.Offset >= int64(len(data)) || data[e.Offset] < 0x80 {
		return e.Msg
	}
	r, n := utf8.DecodeRune(data[e.Offset:])
	if r == utf8.RuneError && n <= 1 {
		return e.Msg
	}
	if unicode.IsGraphic(r) {
		return fmt.Sprintf("invalid character '%c' (U+%04X) %s", r, r, e.reason)
	}
	return fmt.Sprintf("invalid character U+%04X %s", r, e.reason)
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("json %s at line %d (offset %d): %s", e.Kind, e.Line, e.Offset, e.Msg)
}
