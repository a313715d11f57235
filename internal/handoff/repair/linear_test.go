package repair

import (
	"bytes"
	"testing"
	"time"
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
}

// TestLinearTime checks that ten times the input takes about ten times the
// time. The bound is loose (30×, where quadratic work would be 100×) so that
// a busy machine does not fail it.
func TestLinearTime(t *testing.T) {
	small := 256 << 10
	if raceEnabled {
		small = 16 << 10
	}
	for _, a := range adversarial {
		t.Run(a.name, func(t *testing.T) {
			t1 := minRepairTime(build(a.head, a.unit, a.tail, small))
			t10 := minRepairTime(build(a.head, a.unit, a.tail, 10*small))
			if t1 < 2*time.Millisecond {
				t1 = 2 * time.Millisecond // below this, noise dominates
			}
			if ratio := float64(t10) / float64(t1); ratio > 30 {
				t.Errorf("10× input took %.1f× the time (%v vs %v)", ratio, t10, t1)
			}
		})
	}
}

func build(head, unit, tail string, size int) []byte {
	b := append([]byte(head), bytes.Repeat([]byte(unit), size/len(unit)+1)...)
	return append(b, tail...)
}

func minRepairTime(in []byte) time.Duration {
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		_, _ = Repair(in, Options{})
		best = min(best, time.Since(start))
	}
	return best
}
