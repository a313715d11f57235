package extract

import (
	"bytes"
	"strings"
	"testing"
)

// TestMemoryBounded streams megabytes of prose and an oversized value in
// small writes and checks the Scanner's buffers never outgrow MaxBytes.
func TestMemoryBounded(t *testing.T) {
	const maxBytes = 4 << 10
	var stream bytes.Buffer
	for stream.Len() < 2<<20 {
		stream.WriteString("[INFO] building package; no JSON on this line, only prose.\n")
	}
	stream.WriteString(`{"big":"` + strings.Repeat("x", 64<<10) + `"}` + "\n")
	stream.WriteString(`{"after":true}` + "\n")
	stream.WriteString(`{"open":"` + strings.Repeat("y", 64<<10))

	var values [][]byte
	s := NewScanner(Options{MaxBytes: maxBytes}, func(v Value) { values = append(values, v.Data) }, nil)
	data := stream.Bytes()
	for len(data) > 0 {
		n := min(1000, len(data))
		s.Write(data[:n])
		data = data[n:]
		if cap(s.buf) > 2*maxBytes || cap(s.replay) > 2*maxBytes {
			t.Fatalf("buffers grew to %d and %d bytes with MaxBytes %d", cap(s.buf), cap(s.replay), maxBytes)
		}
	}
	if tail := s.Close(); tail != nil {
		t.Errorf("tail of %d bytes for a value already dropped as too large", len(tail))
	}
	if len(values) != 1 || string(values[0]) != `{"after":true}` {
		t.Errorf("values = %q, want only {\"after\":true}", values)
	}
	if st := s.Stats(); st.Overflows != 2 || st.Errors == 0 {
		t.Errorf("stats = %+v, want 2 overflows and the [INFO] errors", st)
	}
}

// TestAllocationsPerValue checks that scanning allocates only the copy of
// each value handed to onValue, and nothing when nobody receives values.
func TestAllocationsPerValue(t *testing.T) {
	var chunk bytes.Buffer
	const perChunk = 50
	for range perChunk {
		chunk.WriteString(`[INFO] {"type":"assistant","message":{"content":[{"type":"text","text":"ok {}"}]}} done` + "\n")
	}
	tests := []struct {
		name    string
		onValue func(Value)
		want    float64
	}{
		{"no callback", nil, 0},
		{"callback", func(Value) {}, perChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScanner(Options{}, tt.onValue, nil)
			data := chunk.Bytes()
			half := len(data) / 3 // cut mid-value, so buffering is exercised
			allocs := testing.AllocsPerRun(20, func() {
				s.Write(data[:half])
				s.Write(data[half:])
			})
			if allocs > tt.want {
				t.Errorf("%.1f allocations per %d values, want at most %.0f", allocs, perChunk, tt.want)
			}
			if got := s.Stats().Values; got != 21*perChunk {
				t.Errorf("found %d values, want %d", got, 21*perChunk)
			}
		})
	}
}

// TestRescanBounded feeds inputs built to make malformed candidates
// rescan as much as possible and checks the bytes read again stay within
// MaxDepth per byte of input.
func TestRescanBounded(t *testing.T) {
	const depth = 16
	tests := []struct {
		name  string
		block string
	}{
		{"nested opens then garbage", strings.Repeat("[", depth-1) + "x"},
		{"nested objects then garbage", strings.Repeat(`{"k":`, depth-1) + "x"},
		{"long valid prefix then garbage", strings.Repeat("[", depth/2) + strings.Repeat(`1,"{[",`, 50) + "x"},
		{"quotes flipping contexts", strings.Repeat(`["[\"`, depth/4) + "x"},
		{"closed elements before garbage", "[" + strings.Repeat(`{"a":[1]},`, 30) + "x]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := []byte(strings.Repeat(tt.block+"\n", 40))
			scanAllModes(t, input, Options{MaxDepth: depth})
			s := NewScanner(Options{MaxDepth: depth}, nil, nil)
			s.Write(input)
			if limit := int64(depth * len(input)); s.rescanned > limit {
				t.Errorf("read %d bytes again for %d bytes of input, more than MaxDepth per byte (%d)",
					s.rescanned, len(input), limit)
			}
			if s.Stats().Errors == 0 {
				t.Error("no malformed candidates reported")
			}
		})
	}
}
