package agent

import (
	"bytes"
	"unicode/utf8"
)

// tailChunk is the size of the blocks a tailText keeps its text in.
const tailChunk = 64 << 10

// tailText keeps the end of a sequence of text blocks joined by newlines:
// at most max bytes of it, whatever the number of blocks (millions of
// empty ones included), in fixed chunks, so that it never holds more than
// max plus one chunk and never copies what it keeps. The text it returns
// starts at the beginning of a line (the oldest lines are dropped whole),
// unless the last line alone is longer than max; then its end is kept,
// from the start of a character.
type tailText struct {
	max    int64
	chunks [][]byte // the kept text; each chunk has capacity tailChunk
	off    int      // bytes of chunks[0] already dropped
	size   int64    // bytes kept
	some   bool     // a block was added: the next one follows a newline
	// cutAtLine: nothing was dropped, or the last byte dropped was a
	// newline, so the kept text starts at the beginning of a line.
	cutAtLine bool
}

func newTailText(max int64) tailText { return tailText{max: max, cutAtLine: true} }

// add appends a block.
func (t *tailText) add(text string) {
	if t.some {
		t.write("\n")
	}
	t.some = true
	t.write(text)
}

func (t *tailText) write(s string) {
	for len(s) > 0 {
		if n := len(t.chunks); n == 0 || len(t.chunks[n-1]) == tailChunk {
			t.chunks = append(t.chunks, make([]byte, 0, tailChunk))
		}
		last := &t.chunks[len(t.chunks)-1]
		n := min(len(s), tailChunk-len(*last))
		*last = append(*last, s[:n]...)
		s = s[n:]
		t.size += int64(n)
		t.drop()
	}
}

// drop lets go of the oldest bytes past max.
func (t *tailText) drop() {
	for t.size > t.max {
		first := t.chunks[0][t.off:]
		excess := t.size - t.max
		if int64(len(first)) <= excess {
			t.cutAtLine = first[len(first)-1] == '\n'
			t.size -= int64(len(first))
			t.chunks[0] = nil
			t.chunks = t.chunks[1:]
			t.off = 0
			continue
		}
		t.off += int(excess)
		t.size -= excess
		t.cutAtLine = t.chunks[0][t.off-1] == '\n'
	}
}

// bytes returns the kept text, from the start of its first whole line.
func (t *tailText) bytes() []byte {
	out := make([]byte, 0, t.size)
	for i, c := range t.chunks {
		if i == 0 {
			c = c[t.off:]
		}
		out = append(out, c...)
	}
	if t.cutAtLine {
		return out
	}
	if i := bytes.IndexByte(out, '\n'); i >= 0 {
		return out[i+1:]
	}
	cut := 0
	for cut < len(out) && !utf8.RuneStart(out[cut]) {
		cut++
	}
	return out[cut:]
}
