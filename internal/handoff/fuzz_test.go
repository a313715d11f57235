package handoff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheck feeds arbitrary agent output and arbitrary schemas through the
// whole pipeline, coercion included: it must never panic; an accepted
// handoff must be strictly valid JSON that validates against the schema; a
// rejected one must carry a diagnosis of a known class.
func FuzzCheck(f *testing.F) {
	outputs, _ := filepath.Glob("testdata/outputs/*")
	schemas, _ := filepath.Glob("testdata/schemas/*.json")
	for i, o := range outputs {
		out, err := os.ReadFile(o)
		if err != nil {
			f.Fatal(err)
		}
		sch := []byte(`{"type": "object"}`)
		if len(schemas) > 0 {
			if b, err := os.ReadFile(schemas[i%len(schemas)]); err == nil {
				sch = b
			}
		}
		f.Add(out, sch, true, false, true)
	}
	f.Add([]byte(`{'a': True,}`), []byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}}`), true, false, false)
	f.Add([]byte(`[1, 2, 3`), []byte(`{"type":"array","minItems":3}`), true, true, false)
	f.Add([]byte("```json\n{\"x\": \"}\"}\n```"), []byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`), false, false, false)
	f.Add([]byte(`{"r": {"a": "5", "b": "True", "c": "X", "d": null}}`),
		[]byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"enum":["x","y"]},"d":{"type":"array","items":{"type":"string"}}}}`), true, false, true)
	f.Add([]byte(`{"v": "5", "w": {"n": 1}}`),
		[]byte(`{"type":"object","properties":{"v":{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]},"w":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$defs":{"n":{"type":"object","properties":{"n":{"type":"integer"}}}}}`), true, false, true)

	f.Fuzz(func(t *testing.T, output, schema []byte, repair, acceptTruncated, coerce bool) {
		s, err := CompileSchemaBytes("fuzz.json", schema)
		if err != nil {
			return // a schema that does not compile is reported, never used
		}
		opts := Options{Repair: repair, AcceptTruncated: acceptTruncated, Coerce: coerce, MaxBytes: 1 << 20, MaxDepth: 64}
		res := Check(output, s, opts)
		if res.OK {
			if !json.Valid(res.JSON) {
				t.Fatalf("accepted handoff is not valid JSON: %q", res.JSON)
			}
			if v := s.Validate(res.Value); len(v) != 0 {
				t.Fatalf("accepted handoff fails its schema: %v", v)
			}
			if res.Truncated && !acceptTruncated {
				t.Fatalf("a truncated value was accepted without accept_truncated")
			}
			if len(res.Coercions) > 0 && !coerce {
				t.Fatalf("coerced without coercion on: %v", res.Coercions)
			}
			switch res.Provenance {
			case ProvenanceOutput, ProvenanceFenceJSON, ProvenanceProse:
			default:
				t.Fatalf("accepted from %q: not a provenance a handoff may have", res.Provenance)
			}
			if res.Provenance == ProvenanceProse && isEmptyContainer(res.Value) {
				t.Fatalf("an empty value was taken from prose: %s", res.JSON)
			}
			return
		}
		if res.Diagnosis == nil || !res.Diagnosis.Class.Valid() {
			t.Fatalf("rejected without a diagnosis of a known class: %+v", res.Diagnosis)
		}
	})
}
