package workflow

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// Input is one value a run is started with (SPEC 16.1), declared as a
// small JSON Schema. An input without a default is required.
type Input struct {
	Name        string
	Type        string // the schema's type when it names one ("string", "integer", …); "" otherwise
	Description string
	// Schema is the declaration as a JSON Schema document, compiled at
	// load time.
	Schema *handoff.Schema
	// Default is the default value as JSON; nil when the input is
	// required.
	Default json.RawMessage

	at at // where it was declared
}

// Required reports whether the run must be given the input.
func (in *Input) Required() bool { return in.Default == nil }

// inputName is the form of an input's name: it is read as .Inputs.NAME in
// templates and inputs.NAME in expressions.
var inputName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// inputKeys are the JSON Schema keywords an input may use: enough to say
// what a value must be, nothing that reaches outside the declaration.
var inputKeys = []string{
	"type", "description", "title", "default", "enum", "const", "pattern", "format",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "items", "minItems", "maxItems", "uniqueItems",
	"properties", "required", "additionalProperties", "examples",
}

// inputs decodes the inputs: section, compiling each declaration.
func (d *decoder) inputs(e entry) []*Input {
	es, _ := d.entries(e.val, e.path)
	var out []*Input
	for _, e := range es {
		if !inputName.MatchString(e.name) {
			d.fail(e.keyAt(), "invalid input name %q (want letters, digits and _, not starting with a digit)", e.name)
			continue
		}
		if in := d.input(e); in != nil {
			out = append(out, in)
		}
	}
	return out
}

// input decodes one declaration.
func (d *decoder) input(e entry) *Input {
	if _, ok := unwrap(e.val).(*ast.MappingNode); !ok {
		if _, ok := unwrap(e.val).(*ast.MappingValueNode); !ok {
			d.fail(e.valAt(), "want a JSON Schema such as {type: string}, got %s", describe(e.val))
			return nil
		}
	}
	in := &Input{Name: e.name, at: e.keyAt()}
	good := true
	var defaultAt at
	d.fields(e.val, e.path, inputKeys, func(k entry) {
		switch k.name {
		case "type":
			if s, ok := unwrap(k.val).(*ast.StringNode); ok {
				in.Type = s.Value
			}
		case "description":
			in.Description = d.str(k).v
		case "default":
			defaultAt = k.valAt()
		}
	})
	if d.hasErrorUnder(e.path) {
		return nil
	}
	var doc map[string]any
	if err := yaml.NodeToValue(e.val, &doc); err != nil {
		d.fail(e.valAt(), "cannot read the declaration: %v", err)
		return nil
	}
	def, hasDefault := doc["default"]
	delete(doc, "default")
	raw, err := json.Marshal(doc)
	if err != nil {
		d.fail(e.valAt(), "cannot read the declaration as JSON: %v", err)
		return nil
	}
	s, err := handoff.CompileSchemaBytes("inputs."+in.Name, raw)
	if err != nil {
		var se *handoff.SchemaError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = strings.TrimSpace(se.Location + " " + se.Reason)
		}
		d.fail(e.valAt(), "not a valid JSON Schema: %s", msg)
		return nil
	}
	in.Schema = s
	if hasDefault {
		b, err := json.Marshal(def)
		if err != nil {
			d.fail(defaultAt, "cannot read the default as JSON: %v", err)
			return nil
		}
		v, err := jsonvalue.Decode(b)
		if err == nil {
			if vs := s.Validate(plain(v)); len(vs) > 0 {
				d.fail(defaultAt, "the default fails the input's schema: %s", violations(vs))
				good = false
			}
		}
		in.Default = b
	}
	if !good {
		return nil
	}
	return in
}

// hasErrorUnder reports whether an error was reported at key or below it.
func (d *decoder) hasErrorUnder(key string) bool {
	for _, e := range d.errs {
		if e.Key == key || strings.HasPrefix(e.Key, key+".") || strings.HasPrefix(e.Key, key+"[") {
			return true
		}
	}
	return false
}

func violations(vs []handoff.Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// InputError is a value a run was given, or not given, that its workflow's
// inputs do not accept. Name is the input ("" when the problem is the
// inputs file itself).
type InputError struct {
	Name string
	Msg  string
}

func (e *InputError) Error() string {
	if e.Name == "" {
		return e.Msg
	}
	return "input " + e.Name + ": " + e.Msg
}

// ResolveInputs checks the values a run is started with against the
// declared inputs and returns them with the defaults applied. flags are
// `--input NAME=VALUE` arguments, VALUE read as JSON unless the input's
// type is string; file is the content of a `--inputs FILE.json` object
// (nil for none); a flag overrides the file. Every problem is returned,
// each an *InputError naming the input: an unknown name, a missing
// required input, a value that is not JSON or fails its schema.
//
// Values are JSON values as jsonvalue decodes them (numbers exact, as
// json.Number), ready to store with the run.
func ResolveInputs(inputs []*Input, flags []string, file []byte) (map[string]any, error) {
	byName := make(map[string]*Input, len(inputs))
	for _, in := range inputs {
		byName[in.Name] = in
	}
	var errs []error
	fail := func(name, format string, args ...any) {
		errs = append(errs, &InputError{Name: name, Msg: fmt.Sprintf(format, args...)})
	}
	unknown := func(name string) {
		names := make([]string, 0, len(inputs))
		for _, in := range inputs {
			names = append(names, in.Name)
		}
		if len(names) == 0 {
			fail(name, "unknown input (the workflow declares no inputs)")
			return
		}
		fail(name, "unknown input (declared: %s)", alternatives(names, "and"))
	}
	values := map[string]any{}
	if file != nil {
		v, err := jsonvalue.Decode(file)
		obj, isObject := v.(jsonvalue.Object)
		switch {
		case err != nil:
			fail("", "the inputs file is not JSON: %v", err)
		case !isObject:
			fail("", "the inputs file holds %s, want a JSON object of input names to values", jsonvalue.Kind(v))
		}
		for _, name := range slices.Sorted(maps.Keys(obj)) {
			if byName[name] == nil {
				unknown(name)
				continue
			}
			values[name] = obj[name]
		}
	}
	seen := map[string]bool{}
	for _, f := range flags {
		name, text, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			fail("", "--input %q: want NAME=VALUE", f)
			continue
		}
		in := byName[name]
		switch {
		case in == nil:
			unknown(name)
			continue
		case seen[name]:
			fail(name, "given twice with --input")
			continue
		}
		seen[name] = true
		if in.Type == "string" {
			values[name] = text
			continue
		}
		v, err := jsonvalue.Decode([]byte(text))
		if err != nil {
			fail(name, "%q is not a JSON value (the input's type is %s; write a string input's value as is)", text, cmp.Or(in.Type, "not string"))
			continue
		}
		values[name] = v
	}
	for _, in := range inputs {
		v, given := values[in.Name]
		if !given {
			if in.Required() {
				what := ""
				if in.Description != "" {
					what = " (" + in.Description + ")"
				}
				fail(in.Name, "missing required input%s: give it with --input %s=VALUE", what, in.Name)
				continue
			}
			d, err := jsonvalue.Decode(in.Default)
			if err != nil {
				fail(in.Name, "default: %v", err)
				continue
			}
			values[in.Name] = d
			continue
		}
		if vs := in.Schema.Validate(plain(v)); len(vs) > 0 {
			fail(in.Name, "value %s fails the input's schema: %s", shortJSON(v), violations(vs))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return values, nil
}

// plain returns v with its objects and arrays as the plain maps and
// slices the schema validator knows.
func plain(v any) any {
	switch x := v.(type) {
	case jsonvalue.Object:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case jsonvalue.Array:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = plain(e)
		}
		return l
	}
	return v
}

// shortJSON shows a value in a message, cut at 80 bytes.
func shortJSON(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
