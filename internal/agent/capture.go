package agent

import (
	"fmt"
	"io"
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
}

func newOutputCopy(w io.Writer, limit int64) *outputCopy {
	if w == nil {
		w = io.Discard
	}
	return &outputCopy{w: w, cap: limit}
}

func (o *outputCopy) write(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
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
