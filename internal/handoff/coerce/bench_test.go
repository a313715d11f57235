package coerce

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkApply measures coercing a handoff of n tasks in which every
// task has a priority written as a string: n coercions in n*60 bytes or so.
// Coercion runs only on a value that already failed its schema, so this is
// the cost added to a failing attempt, against a retry's minutes.
func BenchmarkApply(b *testing.B) {
	s := compile(b, `{"type": "object", "required": ["tasks"], "properties": {"tasks": {"type": "array",
	 "items": {"type": "object", "required": ["id", "priority"], "properties": {"id": {"type": "string"},
	 "priority": {"type": "integer"}, "done": {"type": "boolean"}}}}}}`)
	for _, n := range []int{10, 100, 1000} {
		var sb strings.Builder
		sb.WriteString(`{"tasks": [`)
		for i := range n {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, `{"id": "t%d", "priority": "%d", "done": false}`, i, i%5)
		}
		sb.WriteString(`]}`)
		in := []byte(sb.String())
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				r, ok := Apply(in, s)
				if !ok || len(r.Coercions) != n {
					b.Fatalf("ok %v, %d coercions", ok, len(r.Coercions))
				}
			}
		})
	}
}
