package main

import (
	"strings"
	"testing"
)

// TestClean shows what the view makes of hostile agent text before it
// quotes it on a terminal.
func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"plain", "unknown field", "unknown field", 160},
		{"colour", "\x1b[1;31merror\x1b[0m: x", "error: x", 160},
		{"osc title with BEL", "a\x1b]0;pwned\x07b", "ab", 160},
		{"osc link with ST", "\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\", "link", 160},
		{"cursor moves and clear", "\x1b[2J\x1b[Hx\x1b[10;10Hy", "xy", 160},
		{"lone escape", "a\x1bcb", "ab", 160},
		{"controls", "a\rb\x00c\x08d\x7f", "abcd", 160},
		{"c1 control", "a\u009bb", "ab", 160},
		{"bidi override", "a\u202eb", "ab", 160},
		{"invalid utf-8", "a\xffb", "ab", 160},
		{"tab", "a\tb", "a b", 160},
		{"cut", strings.Repeat("é", 10), strings.Repeat("é", 4) + "…", 4},
		{"exactly n", "abcd", "abcd", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clean(tc.in, tc.n); got != tc.want {
				t.Errorf("clean(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
