package extract

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// FuzzScanner checks, for any input and limits, that the Scanner never
// panics, emits only valid JSON, and gives the same results however the
// input is cut into chunks.
func FuzzScanner(f *testing.F) {
	f.Add([]byte(`[INFO] {"a":1} [see {"b":[2,"]"]}]`), uint64(1), uint16(0), uint8(0))
	f.Add([]byte("```json\n{\"x\": \"\\u00e9\\ud83d\\ude00\"}\n```"), uint64(2), uint16(12), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, maxBytes uint16, maxDepth uint8) {
		opts := Options{MaxBytes: int64(maxBytes), MaxDepth: int(maxDepth)}
		whole := feedChunks(data, opts, func(rest int) int { return rest })
		for _, v := range whole.Values {
			if !json.Valid(v.Data) {
				t.Fatalf("emitted invalid JSON %q", v.Data)
			}
		}
		if limit := opts.withDefaults().MaxBytes; int64(len(whole.Tail)) > limit {
			t.Fatalf("tail of %d bytes exceeds MaxBytes %d", len(whole.Tail), limit)
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		chunked := feedChunks(data, opts, func(int) int { return rng.IntN(9) })
		if !reflect.DeepEqual(chunked, whole) {
			t.Fatalf("chunked feeding gives\n%+v\nwhole feeding gives\n%+v", chunked, whole)
		}
	})
}
