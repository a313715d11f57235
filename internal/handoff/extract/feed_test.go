package extract

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// result is everything a Scanner reports for one stream.
type result struct {
	Values []Value
	Errs   []*Error
	Tail   []byte
	Stats  Stats
}

// feedChunks writes input to a new Scanner in chunks whose sizes next
// chooses from the number of bytes left, then closes it.
func feedChunks(input []byte, opts Options, next func(rest int) int) result {
	var r result
	s := NewScanner(opts,
		func(v Value) { r.Values = append(r.Values, v) },
		func(e *Error) { r.Errs = append(r.Errs, e) })
	for len(input) > 0 {
		n := min(next(len(input)), len(input))
		if k, err := s.Write(input[:n]); k != n || err != nil {
			panic("Write did not consume its input")
		}
		input = input[n:]
	}
	r.Tail = s.Close()
	r.Stats = s.Stats()
	return r
}

// feedModes are the ways every test feeds its stream: the results must be
// identical whichever is used.
func feedModes(seed uint64) map[string]func(rest int) int {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return map[string]func(int) int{
		"whole":  func(rest int) int { return rest },
		"bytes":  func(int) int { return 1 },
		"random": func(int) int { return rng.IntN(40) }, // includes empty writes
	}
}

// scanAllModes scans input whole, one byte at a time and in random chunks,
// fails the test unless all three agree, and returns the common result.
func scanAllModes(t testing.TB, input []byte, opts Options) result {
	t.Helper()
	values, errs, tail := Scan(input, opts)
	want := feedChunks(input, opts, func(rest int) int { return rest })
	if !reflect.DeepEqual(values, want.Values) || !reflect.DeepEqual(errs, want.Errs) || !reflect.DeepEqual(tail, want.Tail) {
		t.Fatalf("Scan and Scanner disagree on %q", input)
	}
	for name, next := range feedModes(uint64(len(input))) {
		got := feedChunks(input, opts, next)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("feeding %s gives\n%+v\nfeeding whole gives\n%+v", name, got, want)
		}
	}
	return want
}
