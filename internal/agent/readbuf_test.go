package agent

import "testing"

// A stream reader starts small and doubles its buffer only while reads
// fill it, so a short stream costs 4 KiB and a long one is read 256 KiB at
// a time after six reads.
func TestGrownAfter(t *testing.T) {
	tests := []struct {
		name string
		size int // len of the buffer read into
		n    int // bytes the read returned
		want int // len of the buffer for the next read
	}{
		{"partial read keeps the buffer", 4 << 10, 100, 4 << 10},
		{"one byte short keeps it", 4 << 10, 4<<10 - 1, 4 << 10},
		{"full read doubles it", 4 << 10, 4 << 10, 8 << 10},
		{"full read below the cap doubles it", 128 << 10, 128 << 10, 256 << 10},
		{"full read at the cap keeps it", 256 << 10, 256 << 10, 256 << 10},
		{"an odd size stops at the cap", 200 << 10, 200 << 10, 256 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, tt.size)
			got := grownAfter(buf, tt.n)
			if len(got) != tt.want {
				t.Fatalf("next buffer %d bytes, want %d", len(got), tt.want)
			}
			if tt.want == tt.size && &got[0] != &buf[0] {
				t.Fatalf("buffer reallocated although it was kept at %d bytes", tt.size)
			}
		})
	}
	// From the first buffer, full reads reach readChunk in six steps.
	buf, reads := make([]byte, firstReadChunk), 0
	for len(buf) < readChunk {
		buf = grownAfter(buf, len(buf))
		reads++
	}
	if len(buf) != readChunk || reads != 6 {
		t.Fatalf("after %d full reads the buffer is %d bytes, want %d after 6", reads, len(buf), readChunk)
	}
}
