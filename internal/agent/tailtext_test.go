package agent

import (
	"strings"
	"testing"
)

func TestTailText(t *testing.T) {
	tests := []struct {
		name   string
		max    int64
		blocks []string
		want   string
	}{
		{"joined by newlines", 100, []string{"a", "b", "c"}, "a\nb\nc"},
		{"empty blocks are empty lines", 100, []string{"", "x", ""}, "\nx\n"},
		{"the oldest lines go whole", 7, []string{"first", "second", "third"}, "third"},
		{"a cut on a line start keeps that line", 12, []string{"first", "second", "third"}, "second\nthird"},
		{"lines inside a block count as lines", 8, []string{"a\nbb\nccc", "dd"}, "ccc\ndd"},
		{"one line longer than max keeps its end", 4, []string{"abcdefgh"}, "efgh"},
		{"a cut inside a character moves past it", 3, []string{"xxé€"}, "€"},
		{"a million empty blocks stay within max", 10, make([]string, 1_000_000), strings.Repeat("\n", 10)},
		{"across chunks", tailChunk + 10, []string{strings.Repeat("a", tailChunk), strings.Repeat("b", tailChunk)}, strings.Repeat("b", tailChunk)},
		{"a block longer than a chunk", 3 * tailChunk, []string{"old", strings.Repeat("c", 2*tailChunk+5)}, "old\n" + strings.Repeat("c", 2*tailChunk+5)},
		{"nothing", 10, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := newTailText(tt.max)
			for _, b := range tt.blocks {
				tx.add(b)
				if held := len(tx.chunks) * tailChunk; int64(held) > tt.max+2*tailChunk {
					t.Fatalf("%d chunks held for max %d", len(tx.chunks), tt.max)
				}
			}
			if got := string(tx.bytes()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestClaudeFallbackTextBounded: the assistant text kept for a stream
// without a result event is one buffer of at most MaxBytes, however many
// text events came.
func TestClaudeFallbackTextBounded(t *testing.T) {
	var b strings.Builder
	for range 100_000 {
		b.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":""}]}}` + "\n")
	}
	b.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":"{\"ok\": true}"}]}}` + "\n")
	res := feedSpec(t, Spec{Protocol: ProtocolClaudeStream, MaxBytes: 64}, []byte(b.String()), nil)
	if len(res.Text) > 64 || !strings.HasSuffix(string(res.Text), "\n{\"ok\": true}") {
		t.Fatalf("Text = %q (%d bytes), want at most 64 bytes ending in the answer", res.Text, len(res.Text))
	}
}
