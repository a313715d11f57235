package coerce

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// compile compiles a schema document for a test.
func compile(t testing.TB, doc string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("test.json", strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("test.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decodeTest decodes JSON as the handoff pipeline does.
func decodeTest(t testing.TB, s string) any {
	t.Helper()
	v, err := decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const taskSchema = `{"type": "object", "required": ["n", "ok"],
 "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"},
  "tags": {"type": "array", "items": {"type": "string"}},
  "note": {"type": "string"}, "m": {"type": "object", "properties": {"b": {"type": "integer"}, "y": {"type": "string"}}}}}`

func TestApply(t *testing.T) {
	s := compile(t, taskSchema)
	tests := []struct {
		name, in, want string
		coercions      []string
	}{
		{"valid stays as it is", `{"n": 1, "ok": true}`, `{"n":1,"ok":true}`, nil},
		{"keys keep their order", `{"ok": "true", "z": 0, "n": "2", "m": {"y": null, "b": "3"}}`,
			`{"ok":true,"z":0,"n":2,"m":{"b":3}}`,
			[]string{"coerce_string_to_number@/m/b", "coerce_drop_null@/m/y", "coerce_string_to_number@/n", "coerce_string_to_boolean@/ok"}},
		{"html is not escaped", `{"n": "1", "ok": true, "note": "<a href=\"x\">&</a>"}`,
			`{"n":1,"ok":true,"note":"<a href=\"x\">&</a>"}`, []string{"coerce_string_to_number@/n"}},
		{"numbers keep their text", `{"n": "10000000000000000000001", "ok": true}`,
			`{"n":10000000000000000000001,"ok":true}`, []string{"coerce_string_to_number@/n"}},
		{"pointer escapes", `{"a~b/c": {"n": 1, "ok": "false"}}`, `{"n":1,"ok":false}`,
			[]string{"coerce_unwrap_object@/a~0b~1c", "coerce_string_to_boolean@/a~0b~1c/ok"}},
		{"root wrap pointer", `{"n": 1, "ok": true, "tags": "x"}`, `{"n":1,"ok":true,"tags":["x"]}`,
			[]string{"coerce_wrap_array@/tags"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := Apply([]byte(tc.in), s)
			if !ok {
				t.Fatalf("Apply(%s) found no coercion", tc.in)
			}
			if string(r.JSON) != tc.want {
				t.Errorf("JSON = %s, want %s", r.JSON, tc.want)
			}
			var got []string
			for _, c := range r.Coercions {
				got = append(got, c.String())
			}
			if !reflect.DeepEqual(got, tc.coercions) {
				t.Errorf("coercions = %q, want %q", got, tc.coercions)
			}
		})
	}
}

func TestApplyRefuses(t *testing.T) {
	s := compile(t, taskSchema)
	for _, in := range []string{
		`{"n": 1, "ok": true} {}`, // not one value
		`{"n": 1,`,                // not JSON
		`{"n": "1.5", "ok": true}`,
		`{"n": 1, "ok": "yes"}`,
	} {
		if r, ok := Apply([]byte(in), s); ok {
			t.Errorf("Apply(%s) = %s %v, want no coercion", in, r.JSON, r.Coercions)
		}
	}
}

func TestCoerceLeavesItsInputAlone(t *testing.T) {
	s := compile(t, taskSchema)
	v := decodeTest(t, `{"n": "1", "ok": "true", "tags": "a", "note": null, "m": {"b": "2"}}`)
	before, _ := json.Marshal(v)
	out, cs, ok := Coerce(v, s)
	if !ok || len(cs) != 5 {
		t.Fatalf("Coerce = %v %v %v", out, cs, ok)
	}
	after, _ := json.Marshal(v)
	if !bytes.Equal(before, after) {
		t.Errorf("the input changed from %s to %s", before, after)
	}
}

func TestCoerceWithoutSchema(t *testing.T) {
	v := decodeTest(t, `{"n": "1"}`)
	out, cs, ok := Coerce(v, nil)
	if !ok || cs != nil || !reflect.DeepEqual(out, v) {
		t.Errorf("Coerce(v, nil) = %v %v %v, want v unchanged", out, cs, ok)
	}
}

// nested returns a schema and a value nested depth objects deep, with a
// number in a string at the bottom.
func nested(depth int) (schema, value string) {
	var s, v strings.Builder
	for range depth {
		s.WriteString(`{"type": "object", "properties": {"a": `)
		v.WriteString(`{"a": `)
	}
	s.WriteString(`{"type": "integer"}`)
	v.WriteString(`"5"`)
	for range depth {
		s.WriteString(`}}`)
		v.WriteString(`}`)
	}
	return s.String(), v.String()
}

func TestCoerceDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{10, true}, {maxDepth, true}, {maxDepth + 1, false}} {
		doc, val := nested(tc.depth)
		_, cs, ok := Coerce(decodeTest(t, val), compile(t, doc))
		if ok != tc.ok {
			t.Errorf("depth %d: ok = %v (%v), want %v", tc.depth, ok, cs, tc.ok)
		}
	}
}

func TestIsNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "5": true, "12.50": true, "1e3": true, "-2.5E-3": true, "1E+2": true,
		"": false, "-": false, "05": false, "+5": false, "5.": false, ".5": false, "1e": false,
		" 5": false, "5 ": false, "0x10": false, "NaN": false, "Infinity": false, "1,000": false, "1_000": false,
	} {
		if got := isNumber(s); got != want {
			t.Errorf("isNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCoercionNamesAreDistinct(t *testing.T) {
	names := []string{StringToNumber, StringToBoolean, WrapArray, EnumCase, UnwrapObject, DropNull}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || !strings.HasPrefix(n, "coerce_") {
			t.Errorf("name %q is repeated or lacks the coerce_ prefix", n)
		}
		seen[n] = true
	}
}
