package extract

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// jsonGen writes random JSON values, compact or indented, whose strings
// hold the characters most likely to confuse an extractor: quotes, braces,
// brackets, backslashes, escapes and multi-byte UTF-8.
type jsonGen struct {
	rng *rand.Rand
}

var stringPieces = []string{
	"a", "Z", " ", "{", "}", "[", "]", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\uD83D\uDE00`,
	"é", "日本", "😀", ":", ",", "null", "true", "-1e5",
}

func (g jsonGen) value(b *strings.Builder, depth int) {
	n := 6
	if depth >= 5 {
		n = 4 // scalars only, so values stay small
	}
	switch g.rng.IntN(n) {
	case 0:
		g.str(b)
	case 1:
		g.number(b)
	case 2:
		b.WriteString([]string{"true", "false", "null"}[g.rng.IntN(3)])
	case 3:
		g.str(b)
	case 4:
		g.object(b, depth+1)
	case 5:
		g.array(b, depth+1)
	}
}

// container writes a top-level object or array, the only values a
// candidate can start with.
func (g jsonGen) container(b *strings.Builder) {
	if g.rng.IntN(2) == 0 {
		g.object(b, 1)
	} else {
		g.array(b, 1)
	}
}

func (g jsonGen) object(b *strings.Builder, depth int) {
	b.WriteByte('{')
	for i := range g.rng.IntN(5) {
		if i > 0 {
			b.WriteByte(',')
		}
		g.space(b)
		g.str(b)
		g.space(b)
		b.WriteByte(':')
		g.space(b)
		g.value(b, depth)
		g.space(b)
	}
	b.WriteByte('}')
}

func (g jsonGen) array(b *strings.Builder, depth int) {
	b.WriteByte('[')
	for i := range g.rng.IntN(5) {
		if i > 0 {
			b.WriteByte(',')
		}
		g.space(b)
		g.value(b, depth)
		g.space(b)
	}
	b.WriteByte(']')
}

func (g jsonGen) str(b *strings.Builder) {
	b.WriteByte('"')
	for range g.rng.IntN(8) {
		b.WriteString(stringPieces[g.rng.IntN(len(stringPieces))])
	}
	b.WriteByte('"')
}

func (g jsonGen) number(b *strings.Builder) {
	switch g.rng.IntN(4) {
	case 0:
		b.WriteString(strconv.Itoa(g.rng.IntN(2000) - 1000))
	case 1:
		b.WriteString(strconv.FormatFloat(g.rng.NormFloat64()*1e3, 'f', -1, 64))
	case 2:
		b.WriteString(strconv.FormatFloat(g.rng.NormFloat64(), 'e', -1, 64))
	default:
		b.WriteString("0")
	}
}

func (g jsonGen) space(b *strings.Builder) {
	b.WriteString([]string{"", "", " ", "\n  ", "\r\n", "\t"}[g.rng.IntN(6)])
}

// prose writes text that cannot start a candidate: anything but '{' and
// '[', including closers, quotes and colons.
func (g jsonGen) prose(b *strings.Builder) {
	words := []string{"the", "handoff", "is", "below", "]", "}", `"quoted"`, "key: value", "\n", "```json\n", "```\n", "INFO]", "naïve", "→"}
	for range g.rng.IntN(12) {
		b.WriteString(words[g.rng.IntN(len(words))])
		b.WriteByte(' ')
	}
}

// TestEmbeddedValuesProperty embeds random values in random prose and
// checks the extractor returns exactly those values, decoded.
func TestEmbeddedValuesProperty(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := jsonGen{rng: rand.New(rand.NewPCG(seed, 42))}
			var in strings.Builder
			var want []any
			for range 1 + g.rng.IntN(5) {
				g.prose(&in)
				var v strings.Builder
				g.container(&v)
				var decoded any
				if err := json.Unmarshal([]byte(v.String()), &decoded); err != nil {
					t.Fatalf("generator wrote invalid JSON %q: %v", v.String(), err)
				}
				want = append(want, decoded)
				in.WriteString(v.String())
			}
			g.prose(&in)

			got := scanAllModes(t, []byte(in.String()), Options{})
			if len(got.Errs) != 0 || got.Tail != nil {
				t.Fatalf("errors %v, tail %q in %q", got.Errs, got.Tail, in.String())
			}
			if len(got.Values) != len(want) {
				t.Fatalf("got %d values, want %d, in %q", len(got.Values), len(want), in.String())
			}
			for i, v := range got.Values {
				var decoded any
				if err := json.Unmarshal(v.Data, &decoded); err != nil {
					t.Fatalf("value %d %q: %v", i, v.Data, err)
				}
				if !reflect.DeepEqual(decoded, want[i]) {
					t.Errorf("value %d = %q, want %v", i, v.Data, want[i])
				}
			}
		})
	}
}
