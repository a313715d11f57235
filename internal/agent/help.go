package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// helpScanner watches decoded lines for the help marker. The JSON object on
// the line after the marker (or after the marker on its own line) is kept as
// the help context; the first marker wins.
type helpScanner struct {
	marker   string
	seen     bool
	awaiting bool // the marker was the last thing seen; the next line may be the context
	context  json.RawMessage
}

// text feeds a block of decoded text, which may hold several lines.
func (h *helpScanner) text(s string) {
	if h.done() {
		return
	}
	for line := range strings.SplitSeq(s, "\n") {
		h.line([]byte(line))
	}
}

// done reports whether no line can change what the scanner found: the
// marker was seen and the line that may hold its context has passed.
func (h *helpScanner) done() bool { return h.seen && !h.awaiting }

// line feeds one line (without its newline). It keeps nothing of line but
// a compacted copy of a context: a text agent's every line passes
// through here, so the line itself is never copied.
func (h *helpScanner) line(line []byte) {
	if h.done() {
		return
	}
	line = bytes.TrimRight(line, "\r")
	if h.awaiting {
		if len(bytes.TrimSpace(line)) == 0 {
			return // blank lines between marker and context are tolerated
		}
		h.awaiting = false
		if obj, ok := jsonObject(line); ok {
			h.context = obj
			return
		}
	}
	i := bytes.Index(line, []byte(h.marker))
	if i < 0 || h.seen {
		return
	}
	h.seen = true
	if obj, ok := jsonObject(line[i+len(h.marker):]); ok {
		h.context = obj
		return
	}
	h.awaiting = true
}

// jsonObject reports whether s, trimmed, is one JSON object, and returns it
// compacted.
func jsonObject(s []byte) (json.RawMessage, bool) {
	s = bytes.TrimSpace(s)
	if !bytes.HasPrefix(s, []byte("{")) || !json.Valid(s) {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, s); err != nil {
		return nil, false
	}
	return json.RawMessage(buf.Bytes()), true
}
