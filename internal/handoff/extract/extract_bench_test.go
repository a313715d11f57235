package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

const (
	benchSize  = 64 << 20 // bytes of input per benchmark
	benchChunk = 32 << 10 // write size, as from a pipe
)

// benchText returns n deterministic sentences of agent prose as a JSON
// string body: words, code with braces and brackets, escaped quotes and
// newlines, non-ASCII.
func benchText(rng *rand.Rand, n int) string {
	words := []string{
		"the", "handoff", "test", "passes", "now", "after", "fixing", "parser", "cache", "retry",
		`map[string]any{\"a\": []int{1}}`, `\"quoted\"`, `\n`, "naïve", "→", "日本", `\u00e9`,
	}
	var b strings.Builder
	for range n {
		for range 8 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString(". ")
	}
	return b.String()
}

// claudeTranscript builds a Claude stream-json transcript of at least size
// bytes: an init line, assistant messages, and a final result line.
func claudeTranscript(size int) (transcript []byte, lines [][]byte) {
	rng := rand.New(rand.NewPCG(7, 7))
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = benchText(rng, 4+rng.IntN(40))
	}
	const session = "7f3c2a9e-1b4d-4c6e-9a2f-3e8d5b7c1a20"
	var buf bytes.Buffer
	buf.Grow(size + 64<<10)
	fmt.Fprintf(&buf, `{"type":"system","subtype":"init","session_id":%q,"tools":["Bash","Edit","Read"]}`+"\n", session)
	for i := 0; buf.Len() < size; i++ {
		fmt.Fprintf(&buf, `{"type":"assistant","message":{"id":"msg_%016x","type":"message","role":"assistant","content":[{"type":"text","text":"%s"}],"usage":{"input_tokens":%d,"output_tokens":%d}},"session_id":%q}`+"\n",
			rng.Uint64(), texts[i%len(texts)], 1000+i, 10+i%500, session)
	}
	fmt.Fprintf(&buf, `{"type":"result","subtype":"success","is_error":false,"num_turns":42,"result":"Done.\n`+"```json\\n{\\\"success\\\": true}\\n```"+`","session_id":%q,"total_cost_usd":1.25}`+"\n", session)
	transcript = buf.Bytes()
	return transcript, bytes.Split(bytes.TrimSuffix(transcript, []byte("\n")), []byte("\n"))
}

// logText turns benchText into plain log prose: no escapes, and no
// brackets that would start a candidate.
var logText = strings.NewReplacer(`\`, "", "{", "(", "}", ")", "[", "(", "]", ")")

// proseWithJSON builds at least size bytes of log lines and prose with
// JSON objects embedded, returning the stream and the embedded values.
func proseWithJSON(size int) (stream []byte, values [][]byte) {
	rng := rand.New(rand.NewPCG(9, 9))
	var buf bytes.Buffer
	buf.Grow(size + 64<<10)
	for buf.Len() < size {
		for range rng.IntN(6) {
			fmt.Fprintf(&buf, "[INFO] 2026-11-22T10:%02d:%02dZ step %d: %s\n", rng.IntN(60), rng.IntN(60), rng.IntN(9),
				logText.Replace(benchText(rng, 1+rng.IntN(3))))
		}
		start := buf.Len()
		fmt.Fprintf(&buf, `{"success":%t,"summary":"%s","files_changed":["internal/a.go","internal/a_test.go"],"tests":{"passed":%d,"failed":%d}}`,
			rng.IntN(2) == 0, benchText(rng, 1+rng.IntN(4)), rng.IntN(500), rng.IntN(3))
		values = append(values, buf.Bytes()[start:buf.Len():buf.Len()])
		buf.WriteString("\n```\n")
	}
	return buf.Bytes(), values
}

// scanChunks feeds data to a fresh Scanner in pipe-sized writes and returns
// the number of values found. With keep set, each value is copied out to a
// callback, as a caller that uses them would; without it, the Scanner only
// finds and validates them, which is the work json.Valid does.
func scanChunks(data []byte, keep bool) int64 {
	var onValue func(Value)
	if keep {
		onValue = func(Value) {}
	}
	s := NewScanner(Options{}, onValue, nil)
	for len(data) > 0 {
		n := min(benchChunk, len(data))
		s.Write(data[:n])
		data = data[n:]
	}
	s.Close()
	return s.Stats().Values
}

// benchScanner runs the Scanner sub-benchmarks over data, which holds want
// values.
func benchScanner(b *testing.B, data []byte, want int) {
	for _, keep := range []bool{false, true} {
		name := "Scanner"
		if keep {
			name = "Scanner+copy"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if n := scanChunks(data, keep); n != int64(want) {
					b.Fatalf("found %d values, want %d", n, want)
				}
			}
		})
	}
}

func BenchmarkTranscript(b *testing.B) {
	transcript, lines := claudeTranscript(benchSize)
	benchScanner(b, transcript, len(lines))
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(transcript)))
		b.ReportAllocs()
		for b.Loop() {
			for _, line := range lines {
				if !json.Valid(line) {
					b.Fatalf("invalid line %.80q", line)
				}
			}
		}
	})
}

func BenchmarkProse(b *testing.B) {
	stream, values := proseWithJSON(benchSize)
	benchScanner(b, stream, len(values))
	// json.Valid cannot skip prose, so it is given only the embedded
	// values: the bytes it is measured on are fewer than the Scanner's.
	b.Run("json.Valid", func(b *testing.B) {
		var total int64
		for _, v := range values {
			total += int64(len(v))
		}
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range values {
				if !json.Valid(v) {
					b.Fatalf("invalid value %.80q", v)
				}
			}
		}
	})
}
