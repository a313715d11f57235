package handoff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// output reads a fixture agent output.
func output(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "outputs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const planJSON = `{"tasks":[{"id":"t1","title":"Write the parser"}],"success":true}`

func TestCheck(t *testing.T) {
	repairOn := Options{Repair: true}
	tests := []struct {
		name   string
		output string // fixture name, or literal text when prefixed with "="
		schema string // fixture schema, "" for none
		opts   Options
		check  func(t *testing.T, r Result)
	}{
		{"fenced value in prose", "fenced_plan.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			wantOK(t, r, `{"tasks":[{"id":"t1","title":"Add the retry policy"},{"id":"t2","title":"Test the backoff schedule"}],"success":true}`)
			if len(r.Repairs) != 0 || r.Truncated {
				t.Errorf("strictly valid value: repairs %q, truncated %v", r.Repairs, r.Truncated)
			}
		}},
		{"schema picks the earlier candidate", "two_candidates.txt", "plan.json", Options{}, func(t *testing.T, r Result) {
			wantOK(t, r, planJSON)
		}},
		{"without a schema the last candidate wins", "two_candidates.txt", "", Options{}, func(t *testing.T, r Result) {
			wantOK(t, r, `{"retries":3,"verbose":false}`)
		}},
		{"schema violations", "wrong_type.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassSchema)
			want := []v4{
				{"/", "additionalProperties", "no other properties", `"notes"`},
				{"/success", "type", "boolean", "string"},
			}
			if got := strip(d.Violations); !reflect.DeepEqual(got, want) {
				t.Errorf("violations %q, want %q", got, want)
			}
			eq(t, "ExpectedKeys", d.ExpectedKeys, []string{"tasks", "success"})
			eq(t, "ActualKeys", d.ActualKeys, []string{"notes", "success", "tasks"})
			if len(d.Missing) != 0 {
				t.Errorf("Missing = %q, want none", d.Missing)
			}
			if got, want := d.Summary(), `schema: /: property "notes" is not allowed (and 1 more violation)`; got != want {
				t.Errorf("Summary() = %q, want %q", got, want)
			}
		}},
		{"repair fixes python literals", "python_literals.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			wantOK(t, r, planJSON)
			for _, name := range []string{"single_quotes", "python_literals", "trailing_comma"} {
				if !slices.Contains(r.Repairs, name) {
					t.Errorf("repairs %q lack %q", r.Repairs, name)
				}
			}
		}},
		{"repair fixes what models write", "model_shapes.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			wantOK(t, r, `{"tasks":[{"id":"t1","title":"Replace the 12\" pipe"},{"id":"t2","title":"Clean D:\\data\\logs"}],"success":true}`)
			eq(t, "Repairs", r.Repairs, []string{"prose", "inner_quotes", "invalid_escapes", "ellipsis", "missing_colon"})
		}},
		{"coercion fixes a schema miss", "=Done: {\"tasks\": {\"id\": \"t1\", \"title\": \"Write the parser\"}, \"success\": \"true\"}", "plan.json", Options{Repair: true, Coerce: true}, func(t *testing.T, r Result) {
			wantOK(t, r, planJSON)
			// Coercions come sorted by pointer.
			eq(t, "Repairs", r.Repairs, []string{"coerce_string_to_boolean@/success", "coerce_wrap_array@/tasks"})
			if len(r.Coercions) != 2 || r.Coercions[0].Name != "coerce_string_to_boolean" || r.Coercions[1].Pointer != "/tasks" {
				t.Errorf("Coercions = %+v", r.Coercions)
			}
		}},
		{"coercion after repair", "={'tasks': [{'id': 't1', 'title': 'Write the parser'}], 'success': 'True',}", "plan.json", Options{Repair: true, Coerce: true}, func(t *testing.T, r Result) {
			wantOK(t, r, planJSON)
			eq(t, "Repairs", r.Repairs, []string{"single_quotes", "trailing_comma", "coerce_string_to_boolean@/success"})
		}},
		{"coercion off: the same miss is a schema failure", "=Done: {\"tasks\": {\"id\": \"t1\", \"title\": \"Write the parser\"}, \"success\": \"true\"}", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassSchema)
			if len(d.Violations) != 2 || len(r.Coercions) != 0 {
				t.Errorf("violations %v, coercions %v", d.Violations, r.Coercions)
			}
		}},
		{"coercion refuses a lossy reading", `={"tasks": [{"id": "t1", "title": "Write the parser"}], "success": "yes"}`, "plan.json", Options{Repair: true, Coerce: true}, func(t *testing.T, r Result) {
			wantClass(t, r, ClassSchema)
		}},
		{"repair off: strict parse error", "python_literals.txt", "plan.json", Options{}, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassInvalidJSON)
			wantPos(t, d, 2, 2)
			if !strings.Contains(d.Excerpt, ">>>'tasks'") {
				t.Errorf("Excerpt %q does not point at 'tasks'", d.Excerpt)
			}
		}},
		{"repair off: broken array", "broken_strict.txt", "", Options{}, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassInvalidJSON)
			wantPos(t, d, 2, 12)
			if !strings.HasPrefix(d.Summary(), "invalid_json: line 2, column 12: ") {
				t.Errorf("Summary() = %q", d.Summary())
			}
		}},
		{"unrepairable", "unrepairable.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassInvalidJSON)
			wantPos(t, d, 2, 34)
			if !strings.Contains(d.Excerpt, ">>>@@") {
				t.Errorf("Excerpt %q does not point at @@", d.Excerpt)
			}
		}},
		{"a later repaired value beats an earlier invalid one", "schema_then_repairable.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			wantOK(t, r, planJSON)
			if !slices.Contains(r.Repairs, "single_quotes") {
				t.Errorf("repairs %q lack single_quotes", r.Repairs)
			}
		}},
		{"repair off: the strict value fails the schema", "schema_then_repairable.txt", "plan.json", Options{}, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassSchema)
			eq(t, "Missing", d.Missing, []string{"tasks"})
			eq(t, "ActualKeys", d.ActualKeys, []string{"success"})
		}},
		{"truncated refused", "truncated.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassTruncated)
			wantPos(t, d, 2, 102)
			if !r.Truncated || !strings.HasSuffix(d.Excerpt, `"Ship it`) {
				t.Errorf("Truncated %v, Excerpt %q", r.Truncated, d.Excerpt)
			}
		}},
		{"truncated accepted", "truncated.txt", "plan.json", Options{Repair: true, AcceptTruncated: true}, func(t *testing.T, r Result) {
			wantOK(t, r, `{"success":true,"tasks":[{"id":"t1","title":"Write the parser"},{"id":"t2","title":"Ship it"}]}`)
			if !r.Truncated || !slices.Contains(r.Repairs, "truncated") {
				t.Errorf("Truncated %v, repairs %q", r.Truncated, r.Repairs)
			}
		}},
		{"truncated with repair off", "truncated.txt", "plan.json", Options{AcceptTruncated: true}, func(t *testing.T, r Result) {
			wantPos(t, wantClass(t, r, ClassTruncated), 2, 102)
		}},
		{"truncated, accepted, but failing the schema", "truncated_incomplete.txt", "plan.json", Options{Repair: true, AcceptTruncated: true}, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassSchema)
			eq(t, "Missing", d.Missing, []string{"success"})
			if !r.Truncated {
				t.Error("Truncated = false")
			}
		}},
		{"truncated and failing the schema, refused", "truncated_incomplete.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			wantPos(t, wantClass(t, r, ClassTruncated), 2, 85)
		}},
		{"prose only", "prose_only.txt", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassEmpty)
			text := "[INFO] reading TASKS.md\nI could not finish the plan {see below}: the file is empty.\n"
			if d.OutputSize != int64(len(text)) || d.OutputSample != text {
				t.Errorf("OutputSize %d, OutputSample %q", d.OutputSize, d.OutputSample)
			}
		}},
		{"prose only, repair off", "prose_only.txt", "plan.json", Options{}, func(t *testing.T, r Result) {
			wantClass(t, r, ClassEmpty)
		}},
		{"empty output", "=", "plan.json", repairOn, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassEmpty)
			if d.OutputSize != 0 || d.OutputSample != "" {
				t.Errorf("OutputSize %d, OutputSample %q", d.OutputSize, d.OutputSample)
			}
		}},
		{"too large", "fenced_plan.txt", "plan.json", Options{Repair: true, MaxBytes: 64}, func(t *testing.T, r Result) {
			d := wantClass(t, r, ClassTooLarge)
			if d.OutputSize != int64(len(output(t, "fenced_plan.txt"))) {
				t.Errorf("OutputSize = %d", d.OutputSize)
			}
		}},
		{"too deep, repair off", `=[[[[[[[[1]]]]]]]]`, "", Options{MaxDepth: 4}, func(t *testing.T, r Result) {
			wantClass(t, r, ClassInvalidJSON)
		}},
		{"numbers keep their text", `={"n": 12345678901234567890, "f": 0.10}`, "", Options{}, func(t *testing.T, r Result) {
			wantOK(t, r, `{"n":12345678901234567890,"f":0.10}`)
			m := r.Value.(map[string]any)
			if m["n"] != json.Number("12345678901234567890") || m["f"] != json.Number("0.10") {
				t.Errorf("Value = %#v", r.Value)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []byte
			if text, ok := strings.CutPrefix(tt.output, "="); ok {
				out = []byte(text)
			} else {
				out = output(t, tt.output)
			}
			var s *Schema
			if tt.schema != "" {
				s = mustSchema(t, tt.schema)
			}
			tt.check(t, Check(out, s, tt.opts))
		})
	}
}

func TestCheckOutputSampleIsValidUTF8(t *testing.T) {
	out := strings.Repeat("a", 499) + "é and then more prose without any value"
	r := Check([]byte(out), nil, Options{Repair: true})
	d := wantClass(t, r, ClassEmpty)
	if d.OutputSample != strings.Repeat("a", 499) {
		t.Errorf("OutputSample = %q (%d bytes)", d.OutputSample, len(d.OutputSample))
	}
}

func wantOK(t *testing.T, r Result, wantJSON string) {
	t.Helper()
	if !r.OK {
		t.Fatalf("not accepted: %s (%s)", r.Diagnosis.Summary(), r.Diagnosis.Details)
	}
	if string(r.JSON) != wantJSON {
		t.Errorf("JSON = %s, want %s", r.JSON, wantJSON)
	}
	if r.Value == nil || r.Diagnosis != nil {
		t.Errorf("Value %v, Diagnosis %v", r.Value, r.Diagnosis)
	}
}

func wantClass(t *testing.T, r Result, c Class) *Diagnosis {
	t.Helper()
	if r.OK || r.Diagnosis == nil {
		t.Fatalf("accepted %s, want class %s", r.JSON, c)
	}
	if r.Diagnosis.Class != c {
		t.Fatalf("class %s (%s), want %s", r.Diagnosis.Class, r.Diagnosis.Details, c)
	}
	if r.Diagnosis.Details == "" {
		t.Error("no Details")
	}
	if !strings.HasPrefix(r.Diagnosis.Summary(), string(c)+": ") || strings.Contains(r.Diagnosis.Summary(), "\n") {
		t.Errorf("Summary() = %q", r.Diagnosis.Summary())
	}
	return r.Diagnosis
}

func wantPos(t *testing.T, d *Diagnosis, line, col int) {
	t.Helper()
	if d.Line != line || d.Column != col {
		t.Errorf("position %d:%d, want %d:%d (%s)", d.Line, d.Column, line, col, d.Details)
	}
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
