package bench

import (
	"encoding/json"
	"fmt"
	"github.com/cadence-dev/cadence/internal/handoff/repair/benchinput"
	"reflect"
	"testing"

	"github.com/cadence-dev/cadence/internal/handoff/repair"
	"github.com/kaptinlin/jsonrepair"
)

// sizes are the input sizes compared. jsonrepair's time grows with the
// square of the input (measured on this project's 2-core machines: 30 to
// 115 s per 1 MiB input, 7 to 13 s per 256 KiB), so it is
// registered up to 1 MiB only: 10 MiB would take over an hour per input and
// 100 MiB days. Our repairer runs at every size.
var sizes = []struct {
	name       string
	size       int
	jsonrepair bool
}{
	{"256KiB", 256 << 10, true},
	{"1MiB", 1 << 20, true},
	{"10MiB", 10 << 20, false},
	{"100MiB", 100 << 20, false},
}

func BenchmarkCompare(b *testing.B) {
	for _, sz := range sizes {
		for _, shape := range benchinput.Broken {
			in := benchinput.Input(shape, sz.size)
			b.Run(fmt.Sprintf("%s/%s/cadence", shape, sz.name), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := repair.Repair(in, repair.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
			if !sz.jsonrepair {
				continue
			}
			text := string(in)
			b.Run(fmt.Sprintf("%s/%s/jsonrepair", shape, sz.name), func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := jsonrepair.JSONRepair(text); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestSameValue checks that both repairers agree on the value of every
// benchmark shape, so the comparison measures equal work.
func TestSameValue(t *testing.T) {
	for _, shape := range benchinput.Broken {
		in := benchinput.Input(shape, 8<<10)
		ours, err := repair.Repair(in, repair.Options{})
		if err != nil {
			t.Fatalf("%s: repair: %v", shape, err)
		}
		theirs, err := jsonrepair.JSONRepair(string(in))
		if err != nil {
			t.Fatalf("%s: jsonrepair: %v", shape, err)
		}
		var a, b any
		if err := json.Unmarshal(ours.JSON, &a); err != nil {
			t.Fatalf("%s: our output: %v", shape, err)
		}
		if err := json.Unmarshal([]byte(theirs), &b); err != nil {
			t.Fatalf("%s: jsonrepair output: %v", shape, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: outputs differ", shape)
		}
	}
}
