package repair

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzRepair checks that Repair never panics, that whatever it returns is
// valid JSON, and that valid input keeps its value. The seed corpus lives in
// testdata/fuzz/FuzzRepair; the hand-written cases are added as seeds too.
func FuzzRepair(f *testing.F) {
	for _, tc := range repairCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Repair(in, Options{MaxDepth: 32})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !errors.Is(err, ErrNoJSON) {
				t.Fatalf("Repair(%q) error %v is neither *Error nor ErrNoJSON", in, err)
			}
			if e != nil && (e.Offset < 0 || e.Offset > len(in) || e.Line < 1 || e.Column < 1) {
				t.Fatalf("Repair(%q) error position %+v out of range", in, e)
			}
			return
		}
		if !json.Valid(r.JSON) {
			t.Fatalf("Repair(%q) = %q, not valid JSON", in, r.JSON)
		}
		var want any
		if json.Unmarshal(in, &want) != nil {
			return
		}
		if _, isString := want.(string); isString {
			return // a string may hold string-encoded JSON, which is unwrapped
		}
		var got any
		if err := json.Unmarshal(r.JSON, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Repair(%q) = %s changed a valid value", in, r.JSON)
		}
		if len(r.Repairs) != 0 {
			t.Fatalf("Repair(%q) applied %v to valid input", in, r.Repairs)
		}
	})
}
