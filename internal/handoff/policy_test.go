package handoff

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// policySchemas are the schemas of the policy table: none, the bare
// object (which no schema must be held to alike), and one with required
// keys, which gives evidence.
func policySchemas(t *testing.T) map[string]*Schema {
	t.Helper()
	out := map[string]*Schema{"none": nil}
	for name, doc := range map[string]string{
		"object":   `{"type": "object"}`,
		"required": `{"type": "object", "required": ["status", "summary"], "properties": {"status": {"type": "string"}, "summary": {"type": "string"}, "done": {"type": "boolean"}, "note": {"type": ["string", "null"]}}}`,
		"array":    `{"type": "array", "items": {"type": "string"}}`,
	} {
		s, err := CompileSchemaBytes(name+".json", []byte(doc))
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		out[name] = s
	}
	return out
}

// TestProvenancePolicy is the policy of SPEC §18 "Provenance" as a table:
// where a value was found and what it needed decide whether it is the
// handoff. Want is the accepted JSON, or "" for a refusal of class
// wantClass.
func TestProvenancePolicy(t *testing.T) {
	schemas := policySchemas(t)
	tests := []struct {
		name      string
		schema    string
		output    string
		want      string
		prov      Provenance
		wantClass Class
		detail    string // a part of the refusal's details
	}{
		// The V source a coding agent quoted at the end of its session.
		{name: "code span quoting V", schema: "none", output: "Done. The function is `pub fn hello() string { return 'Hello, World!' }` as asked.",
			wantClass: ClassEmpty, detail: "inline code span"},
		{name: "V in prose needs structure", schema: "object", output: "Done. The function is pub fn hello() string { return 'Hello, World!' } as asked.",
			wantClass: ClassInvalidJSON, detail: "which needed these repairs: unquoted_keys, missing_colon"},
		{name: "V in prose against required keys", schema: "required", output: "Done: pub fn hello() string { return 'Hello, World!' }",
			wantClass: ClassInvalidJSON, detail: "as `{\"return\":\"Hello, World!\"}`"},
		{name: "println braces", schema: "object", output: `It prints with println!("{}", x); and that is all.`,
			wantClass: ClassEmpty, detail: "part of a line of code"},
		{name: "empty object in prose", schema: "object", output: "It printed {} and stopped.", wantClass: ClassEmpty, detail: "an empty value"},
		{name: "go composite literal in an indented block", schema: "object", output: "Like this:\n\n    var greetings = map[string]string {\n      \"es\": \"Hola\",\n    }\n",
			wantClass: ClassEmpty, detail: "part of a line of code"},
		{name: "member of a json snippet", schema: "object", output: "```json\n  \"scripts\": {\"build\": \"tsc\"},\n```\n", wantClass: ClassEmpty},
		{name: "config the agent read, then the handoff", schema: "none", output: "Here is the plan:\n{\"success\": true}\n\nThe config I read was {\"retries\": 3}.",
			want: `{"retries":3}`, prov: ProvenanceProse},
		{name: "empty array in prose", schema: "none", output: "The list was [] before.", wantClass: ClassEmpty},
		{name: "struct literal in prose", schema: "object", output: "let p = Point { x: 5.0, y: 6.5 }; prints the point",
			wantClass: ClassInvalidJSON, detail: "unquoted_keys"},
		{name: "object literal in js fence", schema: "object", output: "Example:\n```js\nconst o = {\"name\": \"Alice\", \"age\": 30};\n```\n",
			wantClass: ClassEmpty, detail: "a ```js fence"},
		{name: "go map in go fence", schema: "none", output: "```go\nm := map[string]int{\"a\": 1}\n```", wantClass: ClassEmpty},
		{name: "footnote array in prose", schema: "none", output: "As shown in [1], it works.", wantClass: ClassEmpty, detail: "not an object"},
		{name: "unquoted value merging members", schema: "object", output: `Result: {"key":value "key2":"value2" } done`,
			wantClass: ClassInvalidJSON},

		// What was meant as JSON is repaired as before.
		{name: "python literals whole", schema: "required", output: "{'status': 'ok', 'summary': 'x', 'done': True, 'note': None}",
			want: `{"status":"ok","summary":"x","done":true,"note":null}`, prov: ProvenanceOutput},
		{name: "unquoted keys whole", schema: "object", output: "{status: 'ok', summary: 'x'}", want: `{"status":"ok","summary":"x"}`, prov: ProvenanceOutput},
		{name: "trailing comma and comment in fence", schema: "object", output: "Here:\n```json\n{\"a\": 1, // one\n}\n```\n",
			want: `{"a":1}`, prov: ProvenanceFenceJSON},
		{name: "missing colon in unlabelled fence", schema: "object", output: "```\n{\"a\" 1}\n```", want: `{"a":1}`, prov: ProvenanceFenceJSON},
		{name: "truncated whole output", schema: "required", output: `{"status": "ok", "summary": "half`, wantClass: ClassTruncated},
		{name: "empty object whole", schema: "none", output: "{}", want: `{}`, prov: ProvenanceOutput},
		{name: "array whole", schema: "none", output: "[1, 2]", want: `[1,2]`, prov: ProvenanceOutput},

		// Prose: lexical repairs alone, or the schema's evidence.
		{name: "strict object in prose", schema: "object", output: `All done: {"status": "ok"} bye`, want: `{"status":"ok"}`, prov: ProvenanceProse},
		{name: "python literals in prose", schema: "object", output: "Result: {'a': True, 'b': None,} done", want: `{"a":true,"b":null}`, prov: ProvenanceProse},
		{name: "unquoted keys in prose with evidence", schema: "required", output: "Result: {status: 'ok', summary: 'done',} bye",
			want: `{"status":"ok","summary":"done"}`, prov: ProvenanceProse},
		{name: "unquoted keys in prose without evidence", schema: "object", output: "Result: {status: 'ok', summary: 'done'} bye",
			wantClass: ClassInvalidJSON, detail: "I read `{status: 'ok', summary: 'done'}` from your prose"},
		{name: "missing comma in prose with evidence", schema: "required", output: `Result: {"status": "ok" "summary": "done"} bye`,
			want: `{"status":"ok","summary":"done"}`, prov: ProvenanceProse},
		{name: "evidence needs the declared types", schema: "required", output: `Result: {status: 1, summary: "done"} bye`,
			wantClass: ClassInvalidJSON},
		{name: "array in prose when an array is asked for", schema: "array", output: `The files: ["a.go", "b.go"] changed.`,
			want: `["a.go","b.go"]`, prov: ProvenanceProse},
		{name: "code before the handoff", schema: "required", output: "Fixed `{ x: 1 }` in main.rs.\n{\"status\": \"ok\", \"summary\": \"fixed\"}",
			want: `{"status":"ok","summary":"fixed"}`, prov: ProvenanceProse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				var res Result
				if stream {
					st := NewStream(schemas[tt.schema], Options{Repair: true}, 0)
					_, _ = st.Write([]byte(tt.output))
					res = st.Result()
				} else {
					res = Check([]byte(tt.output), schemas[tt.schema], Options{Repair: true})
				}
				if tt.want != "" {
					if !res.OK {
						t.Fatalf("stream=%v: refused (%s: %s), want %s", stream, res.Diagnosis.Class, res.Diagnosis.Details, tt.want)
					}
					if string(res.JSON) != tt.want || res.Provenance != tt.prov {
						t.Fatalf("stream=%v: got %s from %s, want %s from %s", stream, res.JSON, res.Provenance, tt.want, tt.prov)
					}
					continue
				}
				if res.OK {
					t.Fatalf("stream=%v: accepted %s from %s (repairs %v), want class %s", stream, res.JSON, res.Provenance, res.Repairs, tt.wantClass)
				}
				if res.Diagnosis.Class != tt.wantClass || !strings.Contains(res.Diagnosis.Details, tt.detail) {
					t.Fatalf("stream=%v: %s: %s; want class %s with %q", stream, res.Diagnosis.Class, res.Diagnosis.Details, tt.wantClass, tt.detail)
				}
			}
		})
	}
}

// TestProvenanceFile: a handoff file's whole content is provenance file,
// repaired as freely as the whole output.
func TestProvenanceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "handoff.json")
	if err := os.WriteFile(path, []byte("{status: 'ok', summary: 'x',}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := CheckFile(path, nil, Options{Repair: true})
	if !res.OK || res.Provenance != ProvenanceFile {
		t.Fatalf("CheckFile = ok %v, provenance %q (%v)", res.OK, res.Provenance, res.Diagnosis)
	}
}

// TestStructuralNames: docs/repair-policy.md gives every repair its kind,
// and the kind is the one the policy applies.
func TestStructuralNames(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "repair-policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		kind := strings.TrimSpace(cells[2])
		if kind != "where" && kind != "lexical" && kind != "structural" {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			kinds[strings.Trim(strings.TrimSpace(name), "`")] = kind
		}
	}
	for _, name := range repairNames {
		kind, ok := kinds[name]
		switch {
		case !ok:
			t.Errorf("docs/repair-policy.md gives repair %s no kind", name)
		case (kind == "structural") != IsStructural(name):
			t.Errorf("%s: the policy file says %s, the code says structural=%v", name, kind, IsStructural(name))
		}
	}
	for _, lexical := range []string{"python_literals", "single_quotes", "trailing_comma", "comments", "smart_quotes", "truncated"} {
		if IsStructural(lexical) {
			t.Errorf("%s is lexical: the seeds' shapes keep working in prose", lexical)
		}
	}
	if !slices.Contains(repairNames, "missing_colon") {
		t.Fatal("the list of repair names is out of date")
	}
}

// repairNames are the names of the repair package (repair/names.go).
var repairNames = []string{
	"bom", "code_fence", "prose", "comments", "python_literals", "single_quotes", "smart_quotes",
	"unquoted_keys", "trailing_comma", "missing_comma", "non_finite", "control_chars",
	"number_format", "string_encoded_json", "concatenated", "truncated", "missing_colon",
	"ellipsis", "mismatched_closer", "escaped_quotes", "inner_quotes", "invalid_escapes",
	"unquoted_value", "missing_quote", "concatenation", "missing_value", "leading_comma",
	"redundant_closer", "special_whitespace", "function_wrapper", "backtick_quotes",
}

// TestProvenanceRealExcerpts runs the policy on excerpts of real
// documentation and of a real agent's message (testdata/provenance): code
// that the pipeline used to make a handoff of is refused, and a JSON
// document an agent wrote in a json fence is taken as written.
func TestProvenanceRealExcerpts(t *testing.T) {
	schemas := policySchemas(t)
	tests := []struct {
		file      string
		want      string // the accepted JSON's first bytes; "" for a refusal
		prov      Provenance
		wantClass Class
	}{
		// `map[string]string{"Cow": "Moo", "Sheep": "Baa",}` in a test
		// case in an unlabelled fence: was {"Cow":"Moo","Sheep":"Baa"}.
		{file: "go-map-in-unlabelled-fence.md", wantClass: ClassEmpty},
		// An indented Go map literal: was {"es":"Hola","fr":"Bonjour"}.
		{file: "go-map-in-indented-block.md", wantClass: ClassEmpty},
		// interface{} in a compiler error and a code span: was {}.
		{file: "go-test-output-in-fence.md", wantClass: ClassEmpty},
		// "scripts": {...} cut out of a package.json snippet: the member's
		// value alone would lose its key.
		{file: "ts-member-of-json-snippet.md", wantClass: ClassEmpty},
		// An agent's answer with JSON documents in json fences.
		{file: "agent-settings-in-json-fence.md", want: `{"hooks":`, prov: ProvenanceFenceJSON},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "provenance", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"none", "object"} {
				res := Check(out, schemas[name], Options{Repair: true, Coerce: true})
				if tt.want == "" {
					if res.OK {
						t.Fatalf("%s: accepted %s from %s (%v)", name, res.JSON, res.Provenance, res.Repairs)
					}
					if res.Diagnosis.Class != tt.wantClass {
						t.Fatalf("%s: %s: %s, want class %s", name, res.Diagnosis.Class, res.Diagnosis.Details, tt.wantClass)
					}
					continue
				}
				if !res.OK || !strings.HasPrefix(string(res.JSON), tt.want) || res.Provenance != tt.prov {
					t.Fatalf("%s: ok %v, %.60s from %s; want %s… from %s", name, res.OK, res.JSON, res.Provenance, tt.want, tt.prov)
				}
			}
			if res := Check(out, schemas["required"], Options{Repair: true, Coerce: true}); res.OK {
				t.Fatalf("required: accepted %s", res.JSON)
			}
		})
	}
}

// TestProvenanceLongStream: past its window a Stream judges the values it
// saw stream past by the rules of prose: an object is taken, from prose,
// and an empty one never.
func TestProvenanceLongStream(t *testing.T) {
	log := strings.Repeat("building step 1 of 9 ... ok\n", 20)
	tests := []struct {
		name, output, want string
	}{
		{"object in a long log", log + `result: {"status": "ok"}` + "\n" + log, `{"status":"ok"}`},
		{"empty object in a long log", log + "config {}\n" + log, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewStream(nil, Options{Repair: true}, 128)
			for i := 0; i < len(tt.output); i += 50 {
				_, _ = st.Write([]byte(tt.output[i:min(i+50, len(tt.output))]))
			}
			res := st.Result()
			if tt.want == "" {
				if res.OK {
					t.Fatalf("accepted %s from %s", res.JSON, res.Provenance)
				}
				return
			}
			if !res.OK || string(res.JSON) != tt.want || res.Provenance != ProvenanceProse {
				t.Fatalf("ok %v, %s from %q (%v); want %s from prose", res.OK, res.JSON, res.Provenance, res.Diagnosis, tt.want)
			}
		})
	}
}
