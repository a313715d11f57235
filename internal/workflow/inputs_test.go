package workflow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

const inputsWorkflow = `version: 1
agents: {x: {preset: claude}}
defaults: {agent: x}
inputs:
  issue: {type: string, description: "the issue to fix"}
  max_rounds: {type: integer, default: 3, minimum: 1}
  mode: {type: string, enum: [fast, careful], default: careful}
  ticket: {type: string, pattern: "^[A-Z]+-[0-9]+$", default: "CAD-1"}
  dry_run: {type: boolean, default: false}
  labels: {type: array, items: {type: string}, default: []}
  anything: {default: null}
steps:
  - {id: a, prompt: "{{ .Inputs.issue }}"}
`

// TestResolveInputs gives a run's inputs the ways cadence run can: flags,
// a file, both, and checks the values or the errors, each naming its input.
func TestResolveInputs(t *testing.T) {
	w, errs := build([]byte(inputsWorkflow), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	defaults := map[string]string{"max_rounds": "3", "mode": `"careful"`, "ticket": `"CAD-1"`, "dry_run": "false", "labels": "[]", "anything": "null"}
	tests := []struct {
		name  string
		flags []string
		file  string
		want  map[string]string // input → its value as JSON, on top of defaults
		errs  []string
	}{
		{name: "required only", flags: []string{"issue=fix the parser"}, want: map[string]string{"issue": `"fix the parser"`}},
		{name: "a string is taken as is, even when it looks like JSON", flags: []string{`issue={"a": 1}`}, want: map[string]string{"issue": `"{\"a\": 1}"`}},
		{name: "an empty string", flags: []string{"issue="}, want: map[string]string{"issue": `""`}},
		{name: "other types are JSON", flags: []string{"issue=x", "max_rounds=12345678901234567890", "dry_run=true", `labels=["a","b"]`, `anything={"k":[1]}`},
			want: map[string]string{"issue": `"x"`, "max_rounds": "12345678901234567890", "dry_run": "true", "labels": `["a","b"]`, "anything": `{"k":[1]}`}},
		{name: "from a file", file: `{"issue": "from file", "max_rounds": 5}`, want: map[string]string{"issue": `"from file"`, "max_rounds": "5"}},
		{name: "a flag overrides the file", file: `{"issue": "from file", "mode": "fast"}`, flags: []string{"issue=from flag"},
			want: map[string]string{"issue": `"from flag"`, "mode": `"fast"`}},
		{name: "missing required", flags: []string{"max_rounds=2"},
			errs: []string{"input issue: missing required input (the issue to fix): give it with --input issue=VALUE"}},
		{name: "unknown name", flags: []string{"issue=x", "isue=y"},
			errs: []string{"input isue: unknown input (declared: issue, max_rounds, mode, ticket, dry_run, labels and anything)"}},
		{name: "unknown name in the file", file: `{"issue": "x", "rounds": 1}`,
			errs: []string{"input rounds: unknown input (declared: issue, max_rounds, mode, ticket, dry_run, labels and anything)"}},
		{name: "not JSON", flags: []string{"issue=x", "max_rounds=three"},
			errs: []string{`input max_rounds: "three" is not a JSON value (the input's type is integer; write a string input's value as is)`}},
		{name: "fails its type", flags: []string{"issue=x", "max_rounds=2.5"},
			errs: []string{"input max_rounds: value 2.5 fails the input's schema: /: expected integer, got number"}},
		{name: "fails minimum", flags: []string{"issue=x", "max_rounds=0"},
			errs: []string{"input max_rounds: value 0 fails the input's schema: /: expected >= 1, got 0"}},
		{name: "fails enum and pattern", flags: []string{"issue=x", "mode=slow", "ticket=cad-1"},
			errs: []string{
				`input mode: value "slow" fails the input's schema: /: expected one of "fast", "careful", got "slow"`,
				`input ticket: value "cad-1" fails the input's schema: /: expected a string matching '^[A-Z]+-[0-9]+$', got "cad-1"`,
			}},
		{name: "given twice", flags: []string{"issue=x", "issue=y"}, errs: []string{"input issue: given twice with --input"}},
		{name: "not NAME=VALUE", flags: []string{"issue"}, errs: []string{
			`--input "issue": want NAME=VALUE`,
			"input issue: missing required input (the issue to fix): give it with --input issue=VALUE",
		}},
		{name: "file not an object", file: `["issue"]`, errs: []string{
			"the inputs file holds an array, want a JSON object of input names to values",
			"input issue: missing required input (the issue to fix): give it with --input issue=VALUE",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var file []byte
			if tt.file != "" {
				file = []byte(tt.file)
			}
			got, err := ResolveInputs(w.Inputs, tt.flags, file)
			if tt.errs != nil {
				if err == nil {
					t.Fatalf("got %v, want errors", got)
				}
				if err.Error() != strings.Join(tt.errs, "\n") {
					t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(tt.errs, "\n"))
				}
				var ie *InputError
				if !errors.As(err, &ie) {
					t.Errorf("%T is not an *InputError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{}
			for k, v := range defaults {
				want[k] = decodeJSON(t, v)
			}
			for k, v := range tt.want {
				want[k] = decodeJSON(t, v)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("values\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestResolveInputsDefaultsAreFresh: a run that changes a value it was
// given leaves the next run's default alone.
func TestResolveInputsDefaultsAreFresh(t *testing.T) {
	w, errs := build([]byte(inputsWorkflow), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	first, err := ResolveInputs(w.Inputs, []string{"issue=x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first["labels"] = append(first["labels"].(jsonvalue.Array), "changed")
	second, err := ResolveInputs(w.Inputs, []string{"issue=x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := second["labels"].(jsonvalue.Array); len(got) != 0 {
		t.Errorf("labels default = %v, want []", got)
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}
