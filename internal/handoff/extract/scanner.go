package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// mode is what a Scanner is doing with the bytes it reads.
type mode uint8

const (
	modeProse     mode = iota // outside any candidate, looking for '{' or '['
	modeValue                 // inside a candidate, validating and buffering it
	modeLarge                 // past MaxBytes: validating to find its end, buffering nothing
	modeDeep                  // past MaxDepth: following strings and nesting to find its end
	modeDeepValue             // past strictDepth within MaxDepth: buffering, following strings and nesting to its end
)

// Scanner extracts the top-level JSON objects and arrays from a stream
// written to it in chunks of any size. Feeding the same stream in different
// chunks yields the same values, errors, tail and stats.
//
// A Scanner is not safe for concurrent use, and the callbacks must not call
// back into it.
type Scanner struct {
	opts    Options
	onValue func(Value)
	onError func(*Error)

	mode mode
	m    machine
	skip skipper

	buf    []byte // the current candidate's bytes from earlier slices
	replay []byte // a failed candidate's bytes after its bracket, rescanned
	seg    int    // index in the current slice where unbuffered candidate bytes begin

	candOff     int64 // stream offset of the current candidate's bracket
	candLine    int   // line of that bracket
	candIdx     int   // index of that bracket in the current slice, if candInSlice
	candInSlice bool  // whether the current candidate started in the current slice

	rescanned int64 // bytes read again after malformed candidates, to check the bound in tests

	line   int   // line of the byte the current slice's line count has reached
	off    int64 // stream offset of the next byte written
	stats  Stats
	closed bool
}

// NewScanner returns a Scanner that calls onValue for each value found and
// onError for each candidate that failed, in stream order. Either callback
// may be nil.
func NewScanner(opts Options, onValue func(Value), onError func(*Error)) *Scanner {
	opts = opts.withDefaults()
	return &Scanner{
		opts:    opts,
		onValue: onValue,
		onError: onError,
		m:       machine{maxDepth: min(opts.MaxDepth, strictDepth)},
		line:    1,
	}
}

// Write scans p as the next part of the stream. It always consumes all of
// p and never fails, so a Scanner can sit behind an io.MultiWriter or
// io.Copy. Writes after Close are ignored.
func (s *Scanner) Write(p []byte) (int, error) {
	if s.closed {
		return len(p), nil
	}
	s.feed(p, s.off)
	s.off += int64(len(p))
	s.stats.Scanned += int64(len(p))
	return len(p), nil
}

// Close ends the stream. If a candidate is still open, the output was cut
// off inside what may be the value of interest: Close returns a copy of its
// bytes (at most MaxBytes) so a later stage can try to repair it. Otherwise,
// including when the open value had already been dropped as too large or
// too deep, it returns nil.
func (s *Scanner) Close() (tail []byte) {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.mode == modeValue || s.mode == modeDeepValue {
		tail = bytes.Clone(s.buf)
	}
	s.mode = modeProse
	s.buf, s.replay = nil, nil
	return tail
}

// Stats returns the counts so far.
func (s *Scanner) Stats() Stats { return s.stats }

// feed scans the slice p, whose first byte is at stream offset base.
//
// A malformed candidate is rescanned from the byte after its bracket. When
// the candidate began in p this is just a jump back; when it began in an
// earlier slice its bytes are in s.buf, and they are fed again, once, from
// s.replay. A replay starts outside any candidate, so it never needs a
// replay of its own: the recursion is at most one level deep.
func (s *Scanner) feed(p []byte, base int64) {
	s.seg = 0
	i, ln := 0, 0 // s.line is the line of p[ln]
	nextBrace, nextBracket := -1, -1
	for i < len(p) {
		switch s.mode {
		case modeProse:
			if nextBrace < i {
				nextBrace = indexFrom(p, i, '{')
			}
			if nextBracket < i {
				nextBracket = indexFrom(p, i, '[')
			}
			j := min(nextBrace, nextBracket)
			if j == len(p) {
				i = j
				continue
			}
			ln = s.countLines(p, ln, j)
			s.start(p, j, base)
			i = j + 1

		case modeValue:
			end := len(p)
			if room := s.opts.MaxBytes - int64(len(s.buf)+i-s.seg); int64(end-i) > room {
				end = i + int(room)
			}
			n, out := s.m.run(p[i:end])
			i += n
			switch out {
			case outMore:
				if i < len(p) { // stopped by MaxBytes, not by the end of p
					ln = s.countLines(p, ln, i)
					s.report(ErrTooLarge, base+int64(i))
					s.mode = modeLarge
					s.buf = s.buf[:0]
				}
			case outDone:
				s.emit(p[s.seg:i])
				s.mode = modeProse
			case outDeep:
				if len(s.m.stack) < s.opts.MaxDepth {
					// Deeper than the strict machine goes, within MaxDepth.
					s.mode = modeDeepValue
					s.skip = skipper{depth: len(s.m.stack) + 1, limit: s.opts.MaxDepth}
					continue
				}
				ln = s.countLines(p, ln, i-1)
				s.report(ErrTooDeep, base+int64(i-1))
				s.mode = modeDeep
				s.skip = skipper{depth: len(s.m.stack) + 1}
				s.buf = s.buf[:0]
			case outFail:
				ln = s.countLines(p, ln, i-1)
				s.report(ErrMalformed, base+int64(i-1))
				s.mode = modeProse
				s.line = s.candLine
				if s.candInSlice {
					s.rescanned += int64(i - s.candIdx - 1)
					i = s.candIdx + 1
					ln = i
					continue
				}
				s.replay = append(append(s.replay[:0], s.buf[1:]...), p[s.seg:i]...)
				s.buf = s.buf[:0]
				s.rescanned += int64(len(s.replay))
				s.feed(s.replay, s.candOff+1)
				ln = i // the replay ended where p[i] begins
				s.seg = i
			}

		case modeLarge:
			n, out := s.m.run(p[i:])
			i += n
			switch out {
			case outDone, outFail:
				// Already reported as too large; a break in syntax ends it
				// just as well as its closing bracket does.
				s.mode = modeProse
			case outDeep:
				s.mode = modeDeep
				s.skip = skipper{depth: len(s.m.stack) + 1}
			}

		case modeDeep:
			n, done := s.skip.run(p[i:])
			i += n
			if done {
				s.mode = modeProse
			}

		case modeDeepValue:
			end := len(p)
			if room := s.opts.MaxBytes - int64(len(s.buf)+i-s.seg); int64(end-i) > room {
				end = i + int(room)
			}
			n, done := s.skip.run(p[i:end])
			i += n
			switch {
			case s.skip.over:
				ln = s.countLines(p, ln, i-1)
				s.report(ErrTooDeep, base+int64(i-1))
				s.mode = modeDeep
				s.skip.limit, s.skip.over = 0, false
				s.buf = s.buf[:0]
			case done:
				ln = s.countLines(p, ln, i)
				after := s.line // deepValue may set s.line to report a failure
				s.deepValue(p[s.seg:i])
				s.line = after
				s.mode = modeProse
			case i < len(p): // stopped by MaxBytes
				ln = s.countLines(p, ln, i)
				s.report(ErrTooLarge, base+int64(i))
				s.mode = modeDeep
				s.buf = s.buf[:0]
			}
		}
	}
	s.countLines(p, ln, len(p))
	if s.mode == modeValue || s.mode == modeDeepValue {
		s.buf = append(s.buf, p[s.seg:]...)
	}
	s.candInSlice = false
}

// deepValue ends a candidate nested deeper than the strict machine follows:
// it is emitted if encoding/json finds it valid, and otherwise reported as
// malformed where encoding/json stopped, without a rescan.
func (s *Scanner) deepValue(rest []byte) {
	s.buf = append(s.buf, rest...)
	var se *json.SyntaxError
	if err := json.Unmarshal(s.buf, new(json.RawMessage)); !errors.As(err, &se) {
		if err == nil {
			s.emit(nil)
			return
		}
		se = &json.SyntaxError{Offset: int64(len(s.buf))}
	}
	at := min(max(se.Offset, 1), int64(len(s.buf)))
	s.m.failByte = s.buf[at-1]
	s.m.failMsg = "in a value nested deeper than " + strconv.Itoa(strictDepth) + " levels"
	s.line = s.candLine + bytes.Count(s.buf[:at], newline)
	s.buf = s.buf[:0]
	s.report(ErrMalformed, s.candOff+at-1)
}

// start opens a candidate at p[j].
func (s *Scanner) start(p []byte, j int, base int64) {
	s.mode = modeValue
	s.m.open(p[j])
	s.buf = s.buf[:0]
	s.seg = j
	s.candIdx = j
	s.candInSlice = true
	s.candOff = base + int64(j)
	s.candLine = s.line
}

// countLines advances s.line from p[from] to p[to] and returns to.
func (s *Scanner) countLines(p []byte, from, to int) int {
	s.line += bytes.Count(p[from:to], newline)
	return to
}

var newline = []byte{'\n'}

// emit delivers the completed candidate: the buffered bytes followed by
// rest, copied into one new slice. Appending to a nil slice, unlike make,
// does not zero memory that is about to be overwritten.
func (s *Scanner) emit(rest []byte) {
	s.stats.Values++
	s.stats.ValueBytes += int64(len(s.buf) + len(rest))
	if s.onValue == nil {
		s.buf = s.buf[:0]
		return // nobody keeps the value, so it is not copied
	}
	var data []byte
	if len(s.buf) == 0 {
		data = append(data, rest...)
	} else {
		s.buf = append(s.buf, rest...)
		data = append(data, s.buf...)
		s.buf = s.buf[:0]
	}
	s.onValue(Value{Data: data, Offset: s.candOff, Line: s.candLine})
}

// report counts a failed candidate and passes it to onError. The message
// is only built when someone listens, so prose full of "[INFO]" costs
// nothing but the count.
func (s *Scanner) report(kind ErrorKind, off int64) {
	if kind == ErrMalformed {
		s.stats.Errors++
	} else {
		s.stats.Overflows++
	}
	if s.onError == nil {
		return
	}
	var msg string
	switch kind {
	case ErrMalformed:
		msg = fmt.Sprintf("invalid character %s %s", quoteByte(s.m.failByte), s.m.failMsg)
	case ErrTooLarge:
		msg = fmt.Sprintf("value starting at offset %d exceeds %d bytes", s.candOff, s.opts.MaxBytes)
	case ErrTooDeep:
		msg = fmt.Sprintf("value starting at offset %d nests deeper than %d", s.candOff, s.opts.MaxDepth)
	}
	s.onError(&Error{Kind: kind, Start: s.candOff, Offset: off, Line: s.line, Msg: msg, reason: s.m.failMsg})
}

// indexFrom returns the index of the first c in p at or after i, or len(p).
func indexFrom(p []byte, i int, c byte) int {
	if k := bytes.IndexByte(p[i:], c); k >= 0 {
		return i + k
	}
	return len(p)
}

// Scan extracts every value from data at once. It is the same as writing
// data to a new Scanner and closing it.
func Scan(data []byte, opts Options) (values []Value, errs []*Error, tail []byte) {
	s := NewScanner(opts,
		func(v Value) { values = append(values, v) },
		func(e *Error) { errs = append(errs, e) })
	s.Write(data)
	return values, errs, s.Close()
}
