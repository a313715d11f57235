package extract

import (
	"strings"
	"testing"
)

// TestDeepValues: values nested deeper than the strict machine follows are
// still found when MaxDepth allows them, in linear time; what is malformed,
// too deep or too large among them is reported where it fails.
func TestDeepValues(t *testing.T) {
	deepArray := func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) }
	deepObject := func(d int) string {
		return strings.Repeat(`{"k":`, d-1) + `{"leaf":"a\"]}"}` + strings.Repeat("}", d-1)
	}
	tests := []struct {
		name   string
		input  string
		opts   Options
		values []string
		errs   []ErrorKind
		errOff []int64
		tail   bool
	}{
		{name: "valid array 500 deep", input: "log: " + deepArray(500) + " done",
			values: []string{deepArray(500)}},
		{name: "valid object 300 deep, a bracket inside a string", input: deepObject(300) + "\n{\"next\":1}",
			values: []string{deepObject(300), `{"next":1}`}},
		{name: "exactly MaxDepth", input: deepArray(300), opts: Options{MaxDepth: 300},
			values: []string{deepArray(300)}},
		{name: "one deeper than MaxDepth", input: deepArray(301) + ` {"after":1}`, opts: Options{MaxDepth: 300},
			values: []string{`{"after":1}`}, errs: []ErrorKind{ErrTooDeep}, errOff: []int64{300}},
		{name: "malformed past the strict depth", input: strings.Repeat("[", 200) + "1 2" + strings.Repeat("]", 200) + ` {"after":1}`,
			values: []string{`{"after":1}`}, errs: []ErrorKind{ErrMalformed}, errOff: []int64{202}},
		{name: "larger than MaxBytes", input: strings.Repeat("[", 200) + strings.Repeat(`"abc",`, 100) + "1" + strings.Repeat("]", 200),
			opts: Options{MaxBytes: 400}, errs: []ErrorKind{ErrTooLarge}, errOff: []int64{400}},
		{name: "cut off", input: strings.Repeat("[", 200) + "1,2", tail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAllModes(t, []byte(tt.input), tt.opts)
			if len(got.Values) != len(tt.values) {
				t.Fatalf("%d values, want %d; errors %+v", len(got.Values), len(tt.values), got.Errs)
			}
			for i, v := range got.Values {
				if string(v.Data) != tt.values[i] {
					t.Errorf("value %d = %.80q…, want %.80q…", i, v.Data, tt.values[i])
				}
				if want := int64(strings.Index(tt.input, tt.values[i])); v.Offset != want {
					t.Errorf("value %d at offset %d, want %d", i, v.Offset, want)
				}
			}
			if len(got.Errs) != len(tt.errs) {
				t.Fatalf("errors %+v, want kinds %v", got.Errs, tt.errs)
			}
			for i, e := range got.Errs {
				if e.Kind != tt.errs[i] || e.Offset != tt.errOff[i] {
					t.Errorf("error %d: %v at %d, want %v at %d (%s)", i, e.Kind, e.Offset, tt.errs[i], tt.errOff[i], e.Msg)
				}
			}
			if (got.Tail != nil) != tt.tail {
				t.Errorf("tail %q, want one: %v", got.Tail, tt.tail)
			}
		})
	}
}

// TestDeepRescanStaysBounded: with the default MaxDepth of 10000, hostile
// runs of brackets are still read again at most strictDepth times a byte.
func TestDeepRescanStaysBounded(t *testing.T) {
	for _, run := range []string{"[", `{"k":`, `["[\"`} {
		input := strings.Repeat(strings.Repeat(run, 5000)+"x", 20)
		s := NewScanner(Options{}, nil, nil)
		s.Write([]byte(input))
		s.Close()
		if limit := int64(strictDepth * len(input)); s.rescanned > limit {
			t.Errorf("run %q: read %d bytes again for %d of input, over %d", run, s.rescanned, len(input), limit)
		}
	}
}
