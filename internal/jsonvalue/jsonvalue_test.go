package jsonvalue

import (
	"bytes"
	"strings"
	"testing"
	"text/template"
)

func render(t *testing.T, text string, data any) (string, error) {
	t.Helper()
	tmpl, err := template.New("t").Option("missingkey=error").Funcs(Funcs()).Parse(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, data)
	return b.String(), err
}

func TestTemplates(t *testing.T) {
	const output = `{"tasks": ["a b", "c"], "meta": {"big": 12345678901, "huge": 1234567890123456789, "far": 1e400,
		"exact": 0.10000000000000000000001, "html": "<a & b>"}, "none": null, "zero": 0, "empty": [], "flag": false}`
	v, err := Decode([]byte(output))
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]any{"Output": v}
	for _, tc := range []struct{ name, text, want string }{
		{"an array prints as JSON", `{{ .Output.tasks }}`, `["a b","c"]`},
		{"an object prints as JSON", `{{ .Output.meta }}`,
			`{"big":12345678901,"exact":0.10000000000000000000001,"far":1e400,"html":"<a & b>","huge":1234567890123456789}`},
		{"a big integer as written", `{{ .Output.meta.huge }}`, `1234567890123456789`},
		{"a number past float64 as written", `{{ .Output.meta.far }}`, `1e400`},
		{"a decimal as written", `{{ .Output.meta.exact }}`, `0.10000000000000000000001`},
		{"json of a string is quoted", `{{ json "say \"hi\"" }}`, `"say \"hi\""`},
		{"json of an array", `{{ json .Output.tasks }}`, `["a b","c"]`},
		{"json of a number", `{{ json .Output.meta.huge }}`, `1234567890123456789`},
		{"join keeps strings as they are", `{{ join ", " .Output.tasks }}`, `a b, c`},
		{"join in a pipeline", `{{ .Output.tasks | join "; " }}`, `a b; c`},
		{"default replaces null", `{{ .Output.none | default "n/a" }}`, `n/a`},
		{"default replaces 0", `{{ .Output.zero | default 7 }}`, `7`},
		{"default replaces false", `{{ .Output.flag | default "no" }}`, `no`},
		{"default replaces an empty list", `{{ .Output.empty | default "nothing" }}`, `nothing`},
		{"default keeps a value", `{{ .Output.meta.big | default 1 }}`, `12345678901`},
		{"indent", `{{ indent 2 "a\nb\n\nc" }}`, "  a\n  b\n\n  c"},
		{"indent JSON", `{{ .Output.tasks | json | indent 4 }}`, `    ["a b","c"]`},
		{"range over an array", `{{ range .Output.tasks }}[{{ . }}]{{ end }}`, `[a b][c]`},
		{"len", `{{ len .Output.tasks }}`, `2`},
		{"index", `{{ index .Output.tasks 1 }}`, `c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(t, tc.text, data)
			if err != nil {
				t.Fatalf("%s: %v", tc.text, err)
			}
			if got != tc.want {
				t.Errorf("%s = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	v, err := Decode([]byte(`{"n": 1, "s": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, want string }{
		{`{{ join ", " .Output.s }}`, "join: a string is not a list"},
		{`{{ join ", " .Output.n }}`, "join: a number is not a list"},
		{`{{ .Output.missing }}`, `map has no entry for key "missing"`},
	} {
		_, err := render(t, tc.text, map[string]any{"Output": v})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.text, err, tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // the value marshalled again; "" for an error
		wantErr string
	}{
		{in: `9007199254740993`, want: `9007199254740993`},
		{in: ` [9007199254740993, 9007199254740992] `, want: `[9007199254740993,9007199254740992]`},
		{in: `{"a": {"b": [1e400, -0.0]}}`, want: `{"a":{"b":[1e400,-0.0]}}`},
		{in: `{"a": 1} {"b": 2}`, wantErr: "more than one JSON value"},
		{in: `{"a": }`, wantErr: "invalid character"},
		{in: ``, wantErr: "EOF"},
	} {
		v, err := Decode([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Decode(%q): error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v", tc.in, err)
		}
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("Decode(%q) marshals to %s, want %s", tc.in, b, tc.want)
		}
	}
}
