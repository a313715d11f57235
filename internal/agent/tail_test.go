package agent

import (
	"strings"
	"testing"
)

func TestLineTail(t *testing.T) {
	long := strings.Repeat("x", MaxTailLine+10)
	tests := []struct {
		name   string
		max    int
		pieces []string
		want   string
	}{
		{"fewer lines than kept", 3, []string{"a\nb\n"}, "a\nb"},
		{"the last lines only", 2, []string{"1\n2\n3\n4\n"}, "3\n4"},
		{"a line split across writes", 2, []string{"ok\nFA", "IL: Tes", "tAdd\n"}, "ok\nFAIL: TestAdd"},
		{"a last line without a newline", 2, []string{"a\nb\nc"}, "b\nc"},
		{"CRLF", 2, []string{"a\r\nb\r\n"}, "a\nb"},
		{"a long line is cut", 2, []string{long + "\nend\n"}, long[:MaxTailLine] + " [… line cut]\nend"},
		{"empty lines count", 3, []string{"a\n\n\nb\n"}, "\n\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &lineTail{max: tt.max}
			for _, p := range tt.pieces {
				l.write([]byte(p))
			}
			if got := l.String(); got != tt.want {
				t.Errorf("tail = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLineTailIsBounded: a gigabyte of short lines, or one endless line,
// leaves the tail's memory where it was.
func TestLineTailIsBounded(t *testing.T) {
	l := &lineTail{max: 60}
	chunk := []byte(strings.Repeat("line of test output\n", 1<<12))
	for range 1 << 10 {
		l.write(chunk)
	}
	endless := []byte(strings.Repeat("y", 1<<16))
	for range 1 << 8 {
		l.write(endless)
	}
	if len(l.lines) != 60 || cap(l.cur) > 4*MaxTailLine {
		t.Fatalf("%d lines kept, current line buffer %d bytes", len(l.lines), cap(l.cur))
	}
}
