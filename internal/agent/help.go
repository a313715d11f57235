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
	for line := range strings.SplitSeq(s, "\n") {
		h.line(line)
	}
}

// line feeds one line (without its newline).
func (h *helpScanner) line(line string) {
	line = strings.TrimRight(line, "\r")
	if h.awaiting {
		if strings.TrimSpace(line) == "" {
			return // blank lines between marker and context are tolerated
		}
		h.awaiting = false
		if obj, ok := jsonObject(line); ok {
			h.context = obj
			return
		}
	}
	i := strings.Index(line, h.marker)
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
func jsonObject(s string) (json.RawMessage, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
		return nil, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, false
	}
	return json.RawMessage(buf.Bytes()), true
}
