package agent

import (
	"bytes"
	"testing"
)

func TestHelpScanner(t *testing.T) {
	const marker = "CADENCE_HELP"
	tests := []struct {
		name     string
		lines    []string
		wantSeen bool
		want     string // the compacted context; "" for none
	}{
		{"no marker", []string{"prose", `{"a": 1}`}, false, ""},
		{"marker with its context on the line", []string{"x CADENCE_HELP {\"q\": \"which?\"}\r"}, true, `{"q":"which?"}`},
		{"context on the next line after blanks", []string{"CADENCE_HELP", "", "  \r", ` { "q" : 1 } `}, true, `{"q":1}`},
		{"a line that is not an object ends the wait", []string{"CADENCE_HELP", "prose", `{"q": 1}`}, true, ""},
		{"the first marker wins", []string{"CADENCE_HELP {\"q\": 1}", "CADENCE_HELP {\"q\": 2}"}, true, `{"q":1}`},
		{"invalid JSON after the marker", []string{"CADENCE_HELP {\"q\": ", `{"q": 3}`}, true, `{"q":3}`},
		{"an array is not a context", []string{"CADENCE_HELP [1]"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := helpScanner{marker: marker}
			for _, l := range tc.lines {
				b := []byte(l)
				h.line(b)
				// The scanner keeps no part of a line: the caller reuses it.
				for i := range b {
					b[i] = '#'
				}
			}
			if h.seen != tc.wantSeen || string(h.context) != tc.want {
				t.Fatalf("seen %v context %q, want %v %q", h.seen, h.context, tc.wantSeen, tc.want)
			}
		})
	}
}

// TestHelpScannerLineAllocatesNothing holds a text agent's stream to no
// allocation per line: every line of a gigabyte of output passes through
// the scanner, and a copy per line once made cadence's resident memory
// pass SPEC §5's bound.
func TestHelpScannerLineAllocatesNothing(t *testing.T) {
	line := bytes.Repeat([]byte("x"), 1023)
	h := helpScanner{marker: "CADENCE_HELP"}
	if n := testing.AllocsPerRun(100, func() { h.line(line) }); n != 0 {
		t.Fatalf("%v allocations per line without the marker, want 0", n)
	}
	h.line([]byte(`CADENCE_HELP {"q": 1}`))
	if n := testing.AllocsPerRun(100, func() { h.line(line) }); n != 0 {
		t.Fatalf("%v allocations per line after the marker, want 0", n)
	}
}
