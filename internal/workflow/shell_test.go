package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestShellStringReach gives step b, after a, a shell string run: and
// checks what it may reach: no agent output by any spelling, and an input
// only quoted by shq.
func TestShellStringReach(t *testing.T) {
	const (
		only    = "a shell string may hold only {{ .Field }} actions, {{ .Inputs.NAME | shq }} and {{ if }}; give run: as a list, whose elements are passed to the program as they are, for anything more"
		whole   = "not pass all of it on as "
		unquote = "a shell string prints an input unquoted in "
		steps   = "a shell string cannot read .Steps: "
	)
	tests := []struct {
		run  string
		want string // part of the one error; "" when the string is fine
	}{
		{`echo {{ .Run.ID }} {{ .Step.ID }} {{ .HandoffPath }}`, ""},
		{`echo {{ .Inputs.title | shq }}`, ""},
		{`echo {{ shq .Inputs.title }}`, ""},
		{`echo {{ printf "%s-x" .Inputs.title | shq }}`, ""},
		{`make {{ if eq .Inputs.title "fast" }}quick{{ else }}all{{ end }}`, ""},
		{`echo "a b" 'c' \' {{ .Inputs.title | shq }} "{{ .Run.ID }}"`, ""},
		{`echo '{{ .Inputs.title | shq }}'`, "a shell string prints an input quoted by shq inside ' quotes in {{.Inputs.title | shq}}: the quotes would undo shq's"},
		{`echo "x {{ shq .Inputs.title }}"`, "a shell string prints an input quoted by shq inside \" quotes"},
		{`echo 'it''s' "a \" {{ .Inputs.title | shq }}"`, "inside \" quotes"},
		{`{{ if .Inputs.title }}echo '{{ else }}echo {{ end }}{{ .Inputs.title | shq }}`, "inside ' quotes"},
		{`echo {{ .Inputs.title }}`, unquote + `{{.Inputs.title}}: /bin/sh would run what it holds; quote it with shq, as {{.Inputs.title | shq }}`},
		{`echo {{ $.Inputs.title }}`, unquote},
		{`echo {{ shq .Inputs.title | printf "%s; rm -rf x" }}`, unquote},
		{`echo {{ index .Inputs "title" }}`, unquote},
		{`echo {{ .Steps.a.Output.cmd }}`, steps},
		{`echo {{ $.Steps.a.Output.cmd }}`, steps},
		{`echo {{ index . "Steps" "a" "Output" "cmd" }}`, whole + "."},
		{`echo {{ index $ "Steps" "a" "Output" "cmd" }}`, whole + "$"},
		{`echo {{ with $ }}{{ .Steps.a.Output.cmd }}{{ end }}`, "a shell string cannot use with: " + only},
		{`echo {{ with .Run }}{{ .ID }}{{ end }}`, "a shell string cannot use with: "},
		{`{{ $d := . }}echo {{ $d.Steps.a.Output.cmd }}`, "a shell string cannot declare variables: "},
		{`echo {{ range $k, $v := .Inputs }}{{ $v }}{{ end }}`, "a shell string cannot use range: "},
		{`{{ define "x" }}{{ .Steps.a.Output.cmd }}{{ end }}echo {{ template "x" . }}`, "a shell string cannot define templates (define, block): "},
		{`echo {{ block "x" . }}{{ .Steps.a.Output.cmd }}{{ end }}`, "a shell string cannot define templates (define, block): "},
		{`echo {{ template "x" }}`, "a shell string cannot call a template: "},
		{`echo {{ (.).Steps.a.Output.cmd }}`, whole + "."},
		{`echo {{ if .Steps.a.Output.ok }}yes{{ end }}`, steps},
	}
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			src := fmt.Sprintf("version: 1\ninputs: {title: {type: string}}\nagents: {x: {preset: claude}}\nsteps:\n  - {id: a, agent: x, prompt: a}\n  - id: b\n    run: %s\n", strconv.Quote(tt.run))
			_, errs := build([]byte(src), "wf.yaml", "")
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("loaded, want an error saying %q", tt.want)
			}
			prefix := "wf.yaml:7:10: steps[1].run: "
			if !strings.HasPrefix(errs[0].Error(), prefix) || !strings.Contains(errs.Error(), tt.want) {
				t.Errorf("errors:\n%v\nwant one at %q saying %q", errs, prefix, tt.want)
			}
		})
	}
}

// TestPromptReach: a prompt may read the steps that run before it by any
// spelling that names them, and no other way.
func TestPromptReach(t *testing.T) {
	const whole = "a template may read its data only by field"
	tests := []struct {
		prompt string
		want   string // part of the error; "" when the prompt is fine
	}{
		{`{{ index .Steps.a.Output "x" }}`, ""},
		{`{{ $o := .Steps.a.Output }}{{ $o.x }}`, ""},
		{`{{ with .Steps.a.Output }}{{ . }}{{ end }}`, ""},
		{`{{ define "t" }}{{ .x }}{{ end }}{{ template "t" .Steps.a.Output }}`, ""},
		{`{{ index . "Steps" "c" "Output" }}`, whole},
		{`{{ with $ }}{{ .Steps.c.Output }}{{ end }}`, whole},
		{`{{ $d := . }}{{ $d.Steps.c.Output }}`, whole},
		{`{{ define "t" }}{{ .Steps.c.Output }}{{ end }}{{ template "t" . }}`, whole},
		{`{{ block "t" $ }}{{ .Steps.c.Output }}{{ end }}`, whole},
		{`{{ index .Steps "c" }}`, "template reads .Steps whole"},
		{`{{ with .Steps }}{{ .c.Output }}{{ end }}`, "template reads .Steps whole"},
		{`{{ range $id, $s := .Steps }}{{ $s.Output }}{{ end }}`, "template reads .Steps whole"},
		{`{{ $.Steps.c.Output }}`, `template references step "c", which does not run before step "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			src := fmt.Sprintf("version: 1\nagents: {x: {preset: claude}}\ndefaults: {agent: x}\nsteps:\n  - {id: a, prompt: a}\n  - id: b\n    prompt: %s\n  - {id: c, prompt: c}\n", strconv.Quote(tt.prompt))
			_, errs := build([]byte(src), "wf.yaml", "")
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			prefix := "wf.yaml:7:13: steps[1].prompt: "
			if len(errs) == 0 || !strings.HasPrefix(errs[0].Error(), prefix) || !strings.Contains(errs.Error(), tt.want) {
				t.Errorf("errors:\n%v\nwant one at %q saying %q", errs, prefix, tt.want)
			}
		})
	}
}

// TestProgramFromAgentOutput: in the list form, the program (argv[0]) may
// not be written from agent output; its arguments may.
func TestProgramFromAgentOutput(t *testing.T) {
	tests := []struct {
		run  string
		want string
	}{
		{`[go, test, "{{ .Steps.a.Output.pkg }}"]`, ""},
		{`["{{ .Inputs.tool }}", run]`, ""},
		{`["{{ .Steps.a.Output.cmd }}", x]`, "wf.yaml:7:11: steps[1].run[0]: the program to run is chosen by what an agent wrote"},
		{`["./bin/{{ .Steps.a.Output.name }}"]`, "wf.yaml:7:11: steps[1].run[0]: the program to run is chosen by what an agent wrote"},
		{`["{{ with .Steps.a.Output }}{{ .cmd }}{{ end }}"]`, "wf.yaml:7:11: steps[1].run[0]: the program to run is chosen by what an agent wrote"},
	}
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			src := fmt.Sprintf("version: 1\ninputs: {tool: {type: string}}\nagents: {x: {preset: claude}}\nsteps:\n  - {id: a, agent: x, prompt: a}\n  - id: b\n    run: %s\n", tt.run)
			_, errs := build([]byte(src), "wf.yaml", "")
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				return
			}
			if len(errs) == 0 || !strings.HasPrefix(errs.Error(), tt.want) {
				t.Errorf("errors:\n%v\nwant %q", errs, tt.want)
			}
		})
	}
}
