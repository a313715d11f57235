package handoff

import (
	"strings"
	"testing"
)

func TestLineColumn(t *testing.T) {
	data := []byte("ab\ncdé\n\nx")
	tests := []struct {
		off       int64
		line, col int
	}{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {6, 2, 4}, {8, 3, 1}, {9, 4, 1}, {99, 4, 2}, {-1, 1, 1},
	}
	for _, tt := range tests {
		if l, c := lineColumn(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("lineColumn(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func TestCutBytes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"aé", 2, "a"},   // é is two bytes
		{"a€b", 3, "a"},  // € is three bytes
		{"a€b", 4, "a€"}, // cut after the whole character
	}
	for _, tt := range tests {
		if got := string(cutBytes([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("cutBytes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestExcerpts(t *testing.T) {
	data := []byte(strings.Repeat("x", 30) + `{"a": @}` + strings.Repeat("y", 30))
	if got, want := excerptAround(data, 36), strings.Repeat("x", 14)+`{"a": >>>@}`+strings.Repeat("y", 18); got != want {
		t.Errorf("excerptAround = %q, want %q", got, want)
	}
	if got, want := excerptAround([]byte("{@"), 1), "{>>>@"; got != want {
		t.Errorf("excerptAround = %q, want %q", got, want)
	}
	if got, want := tailExcerpt([]byte(strings.Repeat("z", 50)+"end")), strings.Repeat("z", 37)+"end"; got != want {
		t.Errorf("tailExcerpt = %q, want %q", got, want)
	}
}

func TestLooksLikeJSON(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{`[INFO] starting`, false},
		{`see {below} for details`, false},
		{`{see below}`, false},
		{`{"a": @}`, true},
		{`{'a': 1}`, true},
		{`{a: 1}`, true},
		{`{ “a”: 1}`, true},
		{`[1, 2 3]`, true},
		{`[true false]`, true},
		{`[truest]`, false},
		{`{`, true},
		{`no bracket at all`, false},
	}
	for _, tt := range tests {
		// The error is reported at the last byte, as a worst case for
		// finding the opening bracket.
		if got := looksLikeJSON([]byte(tt.text), int64(len(tt.text)-1)); got != tt.want {
			t.Errorf("looksLikeJSON(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
