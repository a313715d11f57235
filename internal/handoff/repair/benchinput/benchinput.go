// Package benchinput generates the inputs of the repairer's benchmarks:
// the same records written validly or broken in one way throughout. The
// package benchmark and the comparison module in bench/ share it, so both
// measure the very same bytes.
package benchinput

import (
	"bytes"
	"math/rand"
	"strconv"
)

// Input shapes.
const (
	ShapeValid     = "valid"
	ShapeTrailing  = "trailing_commas"
	ShapeMissing   = "missing_commas"
	ShapePython    = "python"
	ShapeTruncated = "truncated"
)

// Broken lists the broken shapes in reporting order.
var Broken = []string{ShapeTrailing, ShapeMissing, ShapePython, ShapeTruncated}

// Input deterministically generates about size bytes of an array of records
// in the given shape.
func Input(shape string, size int) []byte {
	r := rand.New(rand.NewSource(7))
	var b bytes.Buffer
	b.Grow(size + 512)
	b.WriteString("[\n")
	sep, q, yes, none := ", ", `"`, "true", "null"
	switch shape {
	case ShapeMissing:
		sep = " "
	case ShapePython:
		q, yes, none = "'", "True", "None"
	}
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			if shape == ShapeMissing {
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
		if shape == ShapeTrailing {
			b.WriteString(",")
		}
		b.WriteString("]" + sep + q + "owner" + q + ": " + none + sep)
		b.WriteString(q + "note" + q + ": " + q + "braces {} and [brackets] in text" + q)
		if shape == ShapeTrailing {
			b.WriteString(",")
		}
		b.WriteString("}")
	}
	if shape == ShapeTruncated {
		return b.Bytes()[:b.Len()-17] // inside the last string, after "[bra"
	}
	b.WriteString("\n]\n")
	return b.Bytes()
}
