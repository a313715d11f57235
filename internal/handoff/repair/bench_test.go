package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/cadence-dev/cadence/internal/handoff/repair/benchinput"
	"runtime"
	"testing"
)

// The benchmark inputs: valid first, then each broken shape.
var benchShapes = append([]string{benchinput.ShapeValid}, benchinput.Broken...)

var benchSizes = []struct {
	name string
	size int
}{{"1MiB", 1 << 20}, {"10MiB", 10 << 20}, {"100MiB", 100 << 20}}

// BenchmarkRepair reports throughput (MB/s), allocations, and allocB/inB:
// bytes allocated per byte of input, an upper bound on the peak memory a
// repair needs beyond the input itself.
func BenchmarkRepair(b *testing.B) {
	for _, sz := range benchSizes {
		for _, shape := range benchShapes {
			in := benchinput.Input(shape, sz.size)
			b.Run(fmt.Sprintf("%s/%s/repair", shape, sz.name), func(b *testing.B) {
				benchLoop(b, in, func() error { _, err := Repair(in, Options{}); return err })
			})
			if shape == benchinput.ShapeValid {
				b.Run(fmt.Sprintf("%s/%s/encoding_json", shape, sz.name), func(b *testing.B) {
					benchLoop(b, in, func() error { var v any; return json.Unmarshal(in, &v) })
				})
			}
		}
	}
}

func benchLoop(b *testing.B, in []byte, op func() error) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/float64(len(in)), "allocB/inB")
}

// TestBenchInputs checks that every benchmark shape is what it claims: the
// valid one strictly valid, the others repaired with their repair.
func TestBenchInputs(t *testing.T) {
	want := map[string]string{
		benchinput.ShapeValid: "", benchinput.ShapeTrailing: TrailingComma, benchinput.ShapeMissing: MissingComma,
		benchinput.ShapePython: SingleQuotes, benchinput.ShapeTruncated: Truncated,
	}
	for _, shape := range benchShapes {
		in := benchinput.Input(shape, 4<<10)
		r, err := Repair(in, Options{})
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		if want[shape] == "" {
			if len(r.Repairs) != 0 {
				t.Errorf("%s: repairs %v on valid input", shape, r.Repairs)
			}
			continue
		}
		if !bytes.Contains([]byte(fmt.Sprint(r.Repairs)), []byte(want[shape])) {
			t.Errorf("%s: repairs %v lack %s", shape, r.Repairs, want[shape])
		}
		var v []any
		if err := json.Unmarshal(r.JSON, &v); err != nil || len(v) < 10 {
			t.Errorf("%s: %d records, %v", shape, len(v), err)
		}
	}
}
