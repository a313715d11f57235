package handoff

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// schemaPath names a fixture schema.
func schemaPath(name string) string { return filepath.Join("testdata", "schemas", name) }

// mustSchema compiles a fixture schema or fails the test.
func mustSchema(t *testing.T, name string) *Schema {
	t.Helper()
	s, err := CompileSchema(schemaPath(name))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", name, err)
	}
	return s
}

// mustDecode decodes a JSON text with UseNumber or fails the test.
func mustDecode(t *testing.T, text string) any {
	t.Helper()
	v, err := decodeValue([]byte(text))
	if err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}

// v4 is a violation without its message, for comparisons.
type v4 struct{ Pointer, Keyword, Expected, Actual string }

func strip(vs []Violation) []v4 {
	out := make([]v4, 0, len(vs))
	for _, v := range vs {
		out = append(out, v4{v.Pointer, v.Keyword, v.Expected, v.Actual})
	}
	return out
}

func TestValidateViolations(t *testing.T) {
	const okTasks = `"tasks": [{"id": "a", "title": "Write tests"}]`
	tests := []struct {
		name, schema, instance string
		want                   []v4
	}{
		{"valid", "plan.json", `{` + okTasks + `, "success": true}`, []v4{}},
		{"type", "plan.json", `{` + okTasks + `, "success": "yes"}`,
			[]v4{{"/success", "type", "boolean", "string"}}},
		{"two required fields missing", "plan.json", `{}`,
			[]v4{{"/", "required", "success", "missing"}, {"/", "required", "tasks", "missing"}}},
		{"root of wrong type", "plan.json", `[1, 2]`,
			[]v4{{"/", "type", "object", "array"}}},
		{"nested pointer", "plan.json", `{"tasks": [{"id": "a", "title": 5}], "success": true}`,
			[]v4{{"/tasks/0/title", "type", "string", "number"}}},
		{"required in array item", "plan.json", `{"tasks": [{"id": "a", "title": "t"}, {"id": "b"}], "success": true}`,
			[]v4{{"/tasks/1", "required", "title", "missing"}}},
		{"minItems", "plan.json", `{"tasks": [], "success": true}`,
			[]v4{{"/tasks", "minItems", "at least 1 item", "0 items"}}},
		{"additionalProperties", "plan.json", `{` + okTasks + `, "success": true, "extra": 1, "more": 2}`,
			[]v4{{"/", "additionalProperties", "no other properties", `"extra", "more"`}}},
		{"enum", "agent_result.json", `{"success": true, "status": "finished", "summary": "s"}`,
			[]v4{{"/status", "enum", `one of "done", "blocked"`, `"finished"`}}},
		{"minimum", "agent_result.json", `{"success": true, "status": "done", "summary": "s", "score": -1}`,
			[]v4{{"/score", "minimum", ">= 0", "-1"}}},
		{"array item", "agent_result.json", `{"success": true, "status": "done", "summary": "s", "files": ["a.go", 3, "b.go", false]}`,
			[]v4{{"/files/1", "type", "string", "number"}, {"/files/3", "type", "string", "boolean"}}},
		{"type list", "agent_result.json", `{"success": true, "status": "done", "summary": "s", "notes": 5}`,
			[]v4{{"/notes", "type", "string or null", "number"}}},
		{"draft-07 definitions ref", "review07.json", `{"approved": true, "findings": [{"file": "a.go", "line": 0}, {"file": "b.go", "line": 2.5}]}`,
			[]v4{{"/findings/0/line", "minimum", ">= 1", "0"}, {"/findings/1/line", "type", "integer", "number"}}},
		{"2020-12 $defs root ref", "defs2020.json", `{"ok": "y"}`,
			[]v4{{"/", "required", "count", "missing"}, {"/ok", "type", "boolean", "string"}}},
		{"sibling file ref", "with_sibling.json", `{"status": "pending", "owner": "x"}`,
			[]v4{{"/owner", "minLength", "length >= 2", "length 1"}, {"/status", "enum", `one of "open", "closed"`, `"pending"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			got := s.Validate(mustDecode(t, tt.instance))
			if !reflect.DeepEqual(strip(got), tt.want) {
				t.Errorf("violations:\n got %q\nwant %q", strip(got), tt.want)
			}
			for _, v := range got {
				if v.Message == "" {
					t.Errorf("violation %+v has no message", v)
				}
			}
		})
	}
}

func TestValidateIsDeterministic(t *testing.T) {
	s := mustSchema(t, "agent_result.json")
	v := mustDecode(t, `{"success": 1, "status": 2, "summary": 3, "score": "x", "files": [1, 2, 3], "notes": 4}`)
	first := s.Validate(v)
	if len(first) != 8 {
		t.Fatalf("got %d violations, want 8: %q", len(first), strip(first))
	}
	for i := 0; i < 20; i++ {
		if again := s.Validate(v); !reflect.DeepEqual(again, first) {
			t.Fatalf("run %d: order changed:\n%q\n%q", i, strip(again), strip(first))
		}
	}
}

func TestNilSchemaAcceptsAnything(t *testing.T) {
	var s *Schema
	if got := s.Validate(mustDecode(t, `[1]`)); got != nil {
		t.Errorf("nil schema: got %v", got)
	}
}

func TestSchemaFields(t *testing.T) {
	tests := []struct {
		schema          string
		props, required []string
	}{
		{"plan.json", []string{"tasks", "success"}, []string{"tasks", "success"}},
		{"agent_result.json", []string{"success", "status", "score", "files", "summary", "notes"}, []string{"success", "status", "summary"}},
		{"defs2020.json", []string{"ok", "count"}, []string{"ok", "count"}},
		{"review07.json", []string{"approved", "findings"}, []string{"approved", "findings"}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			if got := s.Properties(); !reflect.DeepEqual(got, tt.props) {
				t.Errorf("Properties() = %q, want %q", got, tt.props)
			}
			if got := s.Required(); !reflect.DeepEqual(got, tt.required) {
				t.Errorf("Required() = %q, want %q", got, tt.required)
			}
		})
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := []struct {
		name, file   string
		wantPath     string // suffix of SchemaError.Path
		wantLocation string
		wantReason   string // substring of SchemaError.Reason
	}{
		{"invalid keyword value", "bad_keyword.json", "bad_keyword.json", "#/properties/x/type", "string"},
		{"invalid JSON", "bad_syntax.json", "bad_syntax.json", "line 4, column 29", "invalid JSON"},
		{"invalid JSON in a referenced file", "ref_to_broken.json", "broken_sibling.json", "line 3, column 3", "invalid JSON"},
		{"remote reference", "ref_remote.json", "https://example.com/schemas/x.json", "", "only local schema files"},
		{"no such file", "nope.json", "nope.json", "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := CompileSchema(schemaPath(tt.file))
			if err == nil {
				t.Fatalf("CompileSchema(%s) = %v, want an error", tt.file, s)
			}
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SchemaError", err, err)
			}
			if !strings.HasSuffix(se.Path, tt.wantPath) {
				t.Errorf("Path = %q, want suffix %q", se.Path, tt.wantPath)
			}
			if se.Location != tt.wantLocation {
				t.Errorf("Location = %q, want %q", se.Location, tt.wantLocation)
			}
			if !strings.Contains(se.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to contain %q", se.Reason, tt.wantReason)
			}
			if !strings.Contains(err.Error(), tt.wantPath) {
				t.Errorf("Error() = %q does not name %q", err.Error(), tt.wantPath)
			}
		})
	}
}

func TestCompileSchemaMissingFileIsNotExist(t *testing.T) {
	_, err := CompileSchema(schemaPath("nope.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
}

func TestCompileSchemaBytesResolvesRefsAgainstName(t *testing.T) {
	data := []byte(`{"type": "object", "properties": {"s": {"$ref": "common.json#/$defs/status"}}}`)
	s, err := CompileSchemaBytes(schemaPath("inline.json"), data)
	if err != nil {
		t.Fatalf("CompileSchemaBytes: %v", err)
	}
	got := strip(s.Validate(mustDecode(t, `{"s": "maybe"}`)))
	want := []v4{{"/s", "enum", `one of "open", "closed"`, `"maybe"`}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if s.Path != schemaPath("inline.json") || string(s.Raw) != string(data) {
		t.Errorf("Path/Raw not kept: %q %q", s.Path, s.Raw)
	}
}
