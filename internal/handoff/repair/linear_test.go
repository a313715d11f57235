package repair

import (
	"bytes"
	"fmt"
	"testing"
)

// adversarial inputs are built by repeating a unit; each would be quadratic
// for a repairer that retries from every brace or rescans after a failure.
var adversarial = []struct {
	name, head, unit, tail string
}{
	{"open braces", "", "{", ""},
	{"prose braces", "", "{x ", ""},
	{"failing members", "", `{"a":[1,2,x`, ""},
	{"failing objects", "", `{"a": 1, "b": x} `, ""},
	{"apostrophes", "", "it's ", ""},
	{"single quote lookahead", "[", "'a'        b", ""},
	{"unclosed string of braces", "", `"{[{[`, `\q`},
	{"deep", "", "[", ""},
	{"values", "", `{"a":1}`, ""},
	{"missing commas", "[", `{"a":1 "b":[1 2]}`, "]"},
	{"cut", "[", `{"a":"b"},`, ""},
	{"inner quotes", "[", `"a "b" c", `, "]"},
	{"inner quote guesses to the end", `{"k": `, `"a "b `, ""},
	{"inner quote guesses in arrays", "", `["a "b `, ""},
	{"missing colons", "{", `"k" 1 `, "}"},
	{"ellipses", "[", `1, ..., `, "2]"},
	{"wrong closers", "", `{"a": [1} `, ""},
	{"wrong closers deep", "", `[[[[{"a": 1] `, ""},
	{"escaped objects", "", `{\"a\": \"b\"} `, ""},
	{"escaped openings", "", `{\"a`, ""},
	{"escaped whitespace", "", `{\n\t `, ""},
	{"invalid escapes", `["`, `\d\q`, `"]`},
	{"missing end quotes", "[", `"abc, "def `, "]"},
	{"missing end quote to a closer", `["`, `ab, `, "]"},
	{"concatenations", "", `"a" + `, `"b"`},
	{"concatenation into comments", `["a" + /*`, `" + /* `, ""},
	{"unquoted values", "[", "foo bar, ", "1]"},
	{"bare brackets", "", "[x [x ", ""},
	{"bare words in brackets", "", "[x] ", ""},
	{"regular expression openings", "", "[/", ""},
	{"call wrappers", "[", `ObjectId("1"), `, "1]"},
	{"premature closers", "", `{"a":1}, "k": `, ""},
	{"stray closers", "[", `{"a":1}}, `, "]"},
	{"missing values", "{", `"a": , `, "}"},
	{"leading zeros", "[", "0789, ", "1]"},
	{"top-level list", "", "1,\n", "2"},
	{"special spaces", "[", "1,\u00a0\u3000", "2]"},
	{"backticks", "[", "`a\u00b4, ", "1]"},
	{"refused escapes", "", `{"a": "\a"} `, ""},
	{"unicode escapes cut by quotes", "", `["\u26"] `, ""},
	{"raw NUL in strings", "", "[\"a\x00\"] ", ""},
	{"closers in a top-level string", `"`, `a"] `, `"`},
	{"bare words in brackets alone", "[", "x ", "]"},
	{"cut key after members", "{", `"k": 1, `, `"ke`},
	{"task boxes", "", "  - [ ] x\n", ""},
}

// BenchmarkAdversarialLinearity repairs each adversarial input at two sizes,
// ten times apart. Linear work shows the same MB/s at both sizes; quadratic
// work would show a tenth. (A timing bound in a unit test would be flaky on
// a loaded machine, so the comparison lives here, and BENCHMARKS.md records
// it.)
func BenchmarkAdversarialLinearity(b *testing.B) {
	for _, a := range adversarial {
		for _, size := range []int{256 << 10, 2560 << 10} {
			in := build(a.head, a.unit, a.tail, size)
			b.Run(fmt.Sprintf("%s/%dKiB", a.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					_, _ = Repair(in, Options{})
				}
			})
		}
	}
}

func build(head, unit, tail string, size int) []byte {
	b := append([]byte(head), bytes.Repeat([]byte(unit), size/len(unit)+1)...)
	return append(b, tail...)
}
