package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"runtime"
	"strconv"
	"testing"
)

// Input shapes for the benchmarks: the same records written validly and
// broken in one way throughout.
const (
	shapeValid     = "valid"
	shapeTrailing  = "trailing_commas"
	shapeMissing   = "missing_commas"
	shapePython    = "python"
	shapeTruncated = "truncated"
)

var benchShapes = []string{shapeValid, shapeTrailing, shapeMissing, shapePython, shapeTruncated}

// benchInput deterministically generates about size bytes of an array of
// records in the given shape.
func benchInput(shape string, size int) []byte {
	r := rand.New(rand.NewSource(7))
	var b bytes.Buffer
	b.Grow(size + 512)
	b.WriteString("[\n")
	sep, q, yes, none := ", ", `"`, "true", "null"
	switch shape {
	case shapeMissing:
		sep = " "
	case shapePython:
		q, yes, none = "'", "True", "None"
	}
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			if shape == shapeMissing {
				b.WriteString("\n")
			} else {
				b.WriteString(",\n")
			}
		}
		id := strconv.Itoa(i)
		b.WriteString("  {" + q + "id" + q + ": " + id + sep)
		b.WriteString(q + "name" + q + ": " + q + "item " + id + " of the batch" + q + sep)
		b.WriteString(q + "active" + q + ": " + yes + sep)
		b.WriteString(q + "score" + q + ": " + strconv.FormatFloat(r.Float64()*100, 'f', 3, 64) + sep)
		b.WriteString(q + "tags" + q + ": [" + q + "alpha" + q + sep + q + "beta" + q + sep + strconv.Itoa(r.Intn(1000)))
		if shape == shapeTrailing {
			b.WriteString(",")
		}
		b.WriteString("]" + sep + q + "owner" + q + ": " + none + sep)
		b.WriteString(q + "note" + q + ": " + q + "braces {} and [brackets] in text" + q)
		if shape == shapeTrailing {
			b.WriteString(",")
		}
		b.WriteString("}")
	}
	if shape == shapeTruncated {
		return b.Bytes()[:b.Len()-17] // inside the last string, after "[bra"
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}

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
			in := benchInput(shape, sz.size)
			b.Run(fmt.Sprintf("%s/%s/repair", shape, sz.name), func(b *testing.B) {
				benchLoop(b, in, func() error { _, err := Repair(in, Options{}); return err })
			})
			if shape == shapeValid {
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
		shapeValid: "", shapeTrailing: TrailingComma, shapeMissing: MissingComma,
		shapePython: SingleQuotes, shapeTruncated: Truncated,
	}
	for _, shape := range benchShapes {
		in := benchInput(shape, 4<<10)
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
