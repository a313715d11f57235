package mockmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// sseWriter writes server-sent events, flushing after each one so clients
// see a real stream.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

// startSSE sends the headers of a 200 event stream.
func startSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

// event writes one event; an empty name writes a data-only event. A write
// error means the client went away, which the next write will meet too, so
// it is not reported.
func (s *sseWriter) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte(`{}`)
	}
	s.raw(name, string(b))
}

// raw writes one event with data as is.
func (s *sseWriter) raw(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if s.f != nil {
		s.f.Flush()
	}
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// jsonChunk is the size of the pieces a tool call's input is streamed in:
// larger than a text delta, so that a call that writes a big file does not
// take tens of thousands of events.
const jsonChunk = 4096

// chunks splits text into pieces of at most size bytes, on rune
// boundaries, so a streamed answer arrives as several deltas.
func chunks(text string, size int) []string {
	if text == "" {
		return nil
	}
	var out []string
	for len(text) > 0 {
		n := 0
		for n < len(text) && n < size {
			_, w := utf8.DecodeRuneInString(text[n:])
			n += w
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// tokens is a rough token count for usage fields: four bytes a token.
func tokens(n int) int { return n/4 + 1 }

// setRetryAfter copies the reply's retry-after into the response headers.
func setRetryAfter(w http.ResponseWriter, r Reply) {
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
}
