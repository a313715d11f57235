package workflow

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestTemplateReferences puts a prompt in the middle step of a, b, c and
// checks what it may reference and which steps it is recorded to read.
func TestTemplateReferences(t *testing.T) {
	tests := []struct {
		prompt string
		reads  []string
		err    string // the message, "" when the prompt is fine
	}{
		{`{{ .Run.ID }} {{ .Step.ID }} {{ .Attempt }} {{ .HandoffPath }} {{ .SchemaPath }}`, nil, ""},
		{`{{ .Steps.a.Output.tasks }}`, []string{"a"}, ""},
		{`{{ .Steps.a }}`, []string{"a"}, ""},
		{`{{ if .Help.Advice }}{{ .Help.Advice }}{{ end }}`, nil, ""},
		{`{{ with .Steps.a.Output }}{{ .anything.goes }}{{ else }}{{ .Run.ID }}{{ end }}`, []string{"a"}, ""},
		{`{{ range $i, $t := .Steps.a.Output.tasks }}{{ $i }}{{ $t.name }}{{ $.Steps.a.Output }}{{ end }}`, []string{"a"}, ""},
		{`{{ printf "%v" (index .Steps.a.Output "x") }}`, []string{"a"}, ""},
		{`{{ .Steps.c.Output }}`, nil, `template references step "c", which does not run before step "b": it is not among the steps b needs, directly or through others (add it to needs:)`},
		{`{{ .Steps.b.Output }}`, nil, `template references step "b", its own`},
		{`{{ $.Steps.zz.Output }}`, nil, `template references unknown step "zz"`},
		{`{{ .Steps.a.Result }}`, nil, "template references unknown field .Steps.a.Result (want " + fieldsWant + ")"},
		{`{{ .Run.Name }}`, nil, "template references unknown field .Run.Name (want " + fieldsWant + ")"},
		{`{{ .Attempt.N }}`, nil, "template references unknown field .Attempt.N (want " + fieldsWant + ")"},
		{`{{ with .Run }}{{ .Foo }}{{ else }}{{ .Bar }}{{ end }}`, nil, "template references unknown field .Bar (want " + fieldsWant + ")"},
		{`{{ .Help.Question }}`, nil, "template references unknown field .Help.Question (want " + fieldsWant + ")"},
		{`{{ nosuchfunc }}`, nil, `bad template, line 1: function "nosuchfunc" not defined`},
		{"line one\n{{ end }}", nil, "bad template, line 2: unexpected {{end}}"},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			src := fmt.Sprintf("version: 1\nagents: {x: {preset: claude}}\ndefaults: {agent: x}\nsteps:\n  - {id: a, prompt: a}\n  - id: b\n    prompt: %s\n  - {id: c, prompt: c}\n", strconv.Quote(tt.prompt))
			w, errs := build([]byte(src), "wf.yaml", "")
			if tt.err != "" {
				want := "wf.yaml:7:13: steps[1].prompt: " + tt.err
				if errs.Error() != want {
					t.Errorf("errors:\n%v\nwant:\n%s", errs, want)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := w.Steps[1].Reads; !reflect.DeepEqual(got, tt.reads) {
				t.Errorf("reads %v, want %v", got, tt.reads)
			}
		})
	}
}

// TestTemplateMissingKey: prompts are executed with missingkey=error, so a
// map key the handoff lacks is an error, not "<no value>".
func TestTemplateMissingKey(t *testing.T) {
	tmpl, err := newTemplate("p", "{{ .Steps.a.Output.nope }}")
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]any{"Steps": map[string]any{"a": map[string]any{"Output": map[string]any{}}}}
	var out strings.Builder
	if err := tmpl.Execute(&out, data); err == nil {
		t.Errorf("executed to %q, want a missing key error", out.String())
	}
}

// TestAgentTemplates: command, args and continue_args are parsed too.
func TestAgentTemplates(t *testing.T) {
	src := "version: 1\nagents:\n  x:\n    preset: exec\n    command: [run]\n    continue_args: [\"{{ .SessionID \"]\nsteps: [{id: a, agent: x, prompt: a}]\n"
	_, errs := build([]byte(src), "wf.yaml", "")
	want := "wf.yaml:6:21: agents.x.continue_args[0]: bad template, line 1: unclosed action"
	if errs.Error() != want {
		t.Errorf("errors:\n%v\nwant:\n%s", errs, want)
	}
}

// TestCommandTemplatesRender renders the argv templates of command steps
// whose words repeat across steps, with and without actions: each step's
// words render to what it wrote, whether its template is its own or one
// shared by every step that writes the same text.
func TestCommandTemplatesRender(t *testing.T) {
	src := "version: 1\ninputs: {name: {default: x}}\nsteps:\n" +
		"  - {id: a, run: [/bin/echo, hello, '{{ .Step.ID }}']}\n" +
		"  - {id: b, run: [/bin/echo, hello, '{{ .Step.ID }}', '{{ .Inputs.name }}-{{ .Step.ID }}']}\n" +
		"  - {id: c, run: [/bin/echo, 'hello ', '', '{{/* nothing */}}', hello]}\n" +
		"  - {id: d, run: 'echo hello'}\n" +
		"  - {id: e, run: 'echo {{ .Step.ID }}'}\n"
	want := map[string][]string{
		"a": {"/bin/echo", "hello", "a"},
		"b": {"/bin/echo", "hello", "b", "in-b"},
		"c": {"/bin/echo", "hello ", "", "", "hello"},
		"d": {"echo hello"},
		"e": {"echo e"},
	}
	w, errs := build([]byte(src), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, s := range w.Steps {
		data := map[string]any{"Step": map[string]any{"ID": s.ID}, "Inputs": map[string]any{"name": "in"}}
		var got []string
		for i, tmpl := range s.Run.Templates {
			var out strings.Builder
			if err := tmpl.Execute(&out, data); err != nil {
				t.Fatalf("step %s, word %d: %v", s.ID, i, err)
			}
			got = append(got, out.String())
		}
		if !reflect.DeepEqual(got, want[s.ID]) {
			t.Errorf("step %s renders %q, want %q", s.ID, got, want[s.ID])
		}
	}
	// A text without an action is parsed once per load, not once per step.
	a, b, c := w.Steps[0].Run.Templates, w.Steps[1].Run.Templates, w.Steps[2].Run.Templates
	if a[0] != b[0] || a[1] != b[1] || a[1] != c[4] {
		t.Errorf("the words /bin/echo and hello of steps a, b and c were parsed apart")
	}
	if a[2] == b[2] {
		t.Errorf("{{ .Step.ID }} of steps a and b share one template")
	}
}
