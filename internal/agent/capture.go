package agent

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// outputCopy is the attempt's raw output file: stdout and stderr interleaved
// in arrival order, written by two reader goroutines. Past cap bytes the rest
// is counted but not written, and close appends a note saying so. A failing
// writer does not fail the attempt: later writes are dropped.
type outputCopy struct {
	mu      sync.Mutex
	w       io.Writer
	cap     int64 // 0: no cap
	written int64
	dropped int64
	err     error
	tail    *lineTail // sees every byte, before the cap; nil when not kept
}

func newOutputCopy(w io.Writer, limit int64, tailLines int) *outputCopy {
	if w == nil {
		w = io.Discard
	}
	o := &outputCopy{w: w, cap: limit}
	if tailLines > 0 {
		o.tail = &lineTail{max: tailLines}
	}
	return o
}

func (o *outputCopy) write(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tail != nil {
		o.tail.write(p)
	}
	if o.cap > 0 && o.written+int64(len(p)) > o.cap {
		keep := max(o.cap-o.written, 0)
		o.dropped += int64(len(p)) - keep
		p = p[:keep]
	}
	if len(p) == 0 || o.err != nil {
		return
	}
	n, err := o.w.Write(p)
	o.written += int64(n)
	o.err = err
}

// close writes the truncation note when output was dropped.
func (o *outputCopy) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped == 0 || o.err != nil {
		return
	}
	_, o.err = fmt.Fprintf(o.w, "\n[cadence: output truncated at %d bytes]\n", o.cap)
}

// tailBuffer keeps the last size bytes written to it.
type tailBuffer struct {
	size int
	buf  []byte
}

func (t *tailBuffer) write(p []byte) {
	if len(p) >= t.size {
		t.buf = append(t.buf[:0], p[len(p)-t.size:]...)
		return
	}
	if over := len(t.buf) + len(p) - t.size; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
}

func (t *tailBuffer) String() string { return string(t.buf) }

// MaxTailLine is where a line kept by Spec.TailLines is cut.
const MaxTailLine = 1 << 10

// lineTail keeps the last max lines written to it, each cut at
// MaxTailLine bytes, in memory bounded by max whatever is written.
type lineTail struct {
	max   int
	lines []string // a ring of the last complete lines
	next  int      // where the next line goes once the ring is full
	cur   []byte   // the line being written
	long  bool     // cur was cut
}

func (t *lineTail) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if room := MaxTailLine - len(t.cur); room < len(part) {
			t.cur = append(t.cur, part[:max(room, 0)]...)
			t.long = true
		} else {
			t.cur = append(t.cur, part...)
		}
		if i < 0 {
			return
		}
		t.push()
		p = p[i+1:]
	}
}

func (t *lineTail) push() {
	line := string(bytes.TrimSuffix(t.cur, []byte{'\r'}))
	if t.long {
		line += " [… line cut]"
	}
	t.cur, t.long = t.cur[:0], false
	if len(t.lines) < t.max {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % t.max
}

// String returns the kept lines, oldest first, a line not yet ended last.
func (t *lineTail) String() string {
	if len(t.cur) > 0 {
		t.push()
	}
	out := make([]string, 0, len(t.lines))
	out = append(out, t.lines[t.next:]...)
	out = append(out, t.lines[:t.next]...)
	return strings.Join(out, "\n")
}
