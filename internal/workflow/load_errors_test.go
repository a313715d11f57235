package workflow

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// project is the fixture project every error fixture is loaded against: it
// has prompt files, schemas and a scenario at the paths the fixtures name.
const project = "testdata/project"

const (
	stepKeys   = "id, needs, when, allow_failure, agent, prompt, prompt_file, handoff, retry, timeout, idle_timeout, exit_grace, max_cost_usd, on_help, checks, map, fail_on_exit_code, start_timeout, fallback_after, run, loop, approval, sandbox or restore_on_retry"
	retryKeys  = "max_attempts, backoff, initial, multiplier, max, jitter, on or never"
	fieldsWant = ".Run.ID, .Step.ID, .Attempt, .HandoffPath, .SchemaPath, .Inputs.<name>, .Steps.<id>.Output, .Help.Context, .Help.Advice, in a map step .Item, or in a loop .Loop.Iteration and .Loop.Previous.<id>.Output"
)

// TestLoadErrors loads one fixture per kind of mistake. The expected
// positions were read off the fixtures: line of the offending key, column of
// its value (or of the key, for an unknown key or a missing one).
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		fixture string
		want    []string // "line:col: key: msg", after the file name
	}{
		{"unknown_top_key", []string{"10:1: colour: unknown key (want version, name, inputs, max_parallel_steps, defaults, agents, steps or notify)"}},
		{"unknown_step_key", []string{"10:5: steps[0].retries: unknown key (want " + stepKeys + ")"}},
		{"unknown_retry_key", []string{"12:7: steps[0].retry.max_atempts: unknown key (want " + retryKeys + ")"}},
		{"wrong_type", []string{"10:27: steps[0].retry.max_attempts: want an integer, got a string"}},
		{"coerce_not_boolean", []string{"10:23: steps[0].handoff.coerce: want true or false, got a string"}},
		{"exit_grace_bad", []string{
			"2:36: defaults.exit_grace: exit_grace 11m0s is too long (want at most 10m0s)",
			`10:17: steps[0].exit_grace: invalid duration "-1s" (want e.g. 2s, 1m30s or 500ms)`,
			"13:17: steps[1].exit_grace: want a duration such as 2s or 1m30s, got a list",
			`16:17: steps[2].exit_grace: invalid duration "soon" (want e.g. 2s, 1m30s or 500ms)`,
		}},
		{"bad_duration", []string{`10:14: steps[0].timeout: invalid duration "30 minutes" (want e.g. 2s, 1m30s or 500ms)`}},
		{"bad_size", []string{`11:18: steps[0].handoff.max_bytes: invalid size "8 MB" (want e.g. 8MiB, 512KiB, 1MB or a number of bytes)`}},
		{"bad_enum", []string{`11:16: steps[0].retry.backoff: unknown value "expo" (want fixed, linear or exponential)`}},
		{"version_2", []string{"1:10: version: unsupported version 2 (want 1)"}},
		{"missing_version", []string{"1:1: version: missing (want version: 1)"}},
		{"duplicate_step_id", []string{`10:9: steps[1].id: duplicate step id "plan" (first at line 8; ids are unique in the whole file, inner steps of loops included)`}},
		{"missing_prompt", []string{"8:5: steps[0]: missing prompt or prompt_file"}},
		{"prompt_and_file", []string{"10:18: steps[0].prompt_file: both prompt and prompt_file are set (want exactly one)"}},
		{"unknown_agent", []string{`10:12: steps[0].agent: unknown agent "claude" (defined: sim)`}},
		{"missing_schema", []string{"11:15: steps[0].handoff.schema: file schemas/nope.json not found"}},
		{"template_syntax", []string{"9:13: steps[0].prompt: bad template, line 1: unclosed action"}},
		{"template_later_step", []string{`9:13: steps[0].prompt: template references step "review", which does not run before step "plan": it is not among the steps plan needs, directly or through others (add it to needs:)`}},
		{"template_unknown_step", []string{`9:13: steps[0].prompt: template references unknown step "nope"`}},
		{"template_unknown_field", []string{"9:13: steps[0].prompt: template references unknown field .Foo (want " + fieldsWant + ")"}},
		{"path_escape", []string{`9:18: steps[0].prompt_file: path "../outside.md" is outside the project directory`}},
		{"path_escape_abs", []string{`9:18: steps[0].prompt_file: path "/etc/hostname" is outside the project directory`}},
		{"file_handoff_no_path", []string{"11:13: steps[0].handoff: from: file needs a path"}},
		{"exec_no_command", []string{"3:3: agents.lint: preset exec needs command"}},
		{"empty", []string{"1:1: the workflow file is empty (run cadence init for a commented example)"}},
		{"two_documents", []string{"3:1: want a single YAML document, found 2"}},
		{"not_a_mapping", []string{"1:1: want a mapping with version, agents and steps, got a list"}},
		{"checks_bad", []string{
			`11:15: steps[0].checks[0].name: invalid check name "Tests" (want lowercase letters, digits, _ and -)`,
			"13:9: steps[0].checks[1]: missing run (a command line for /bin/sh, or a list that is the argv)",
			"15:15: steps[0].checks[2].run: want a string, got a mapping", // a mapping is placed at its first key
			"17:14: steps[0].checks[3].run: must not be empty",
			`18:18: steps[0].checks[3].timeout: invalid duration "soon" (want e.g. 2s, 1m30s or 500ms)`,
			`19:15: steps[0].checks[4].name: duplicate check name "fmt" (first at line 16)`,
			"21:25: steps[0].checks[4].feedback_lines: 0 is out of range (want 1 to 10000)",
			"22:9: steps[0].checks[5]: want a mapping with name and run, got a string",
			"24:14: steps[0].checks[6].run: must not be empty",
			"25:9: steps[0].checks[6].retries: unknown key (want name, run, timeout or feedback_lines)",
		}},
		{"map_bad", []string{
			"9:13: steps[0].prompt: template references .Item, which only a map step has (add map: to the step)",
			`13:21: steps[1].map.items.step: items come from step "review", which does not run before step "fix": it is not among the steps fix needs, directly or through others (add it to needs:)`,
			`13:38: steps[1].map.items.pointer: invalid JSON pointer "tasks" (want "" or a path starting with /, such as /tasks)`,
			`14:12: steps[1].map.key: invalid JSON pointer "id" (want "" or a path starting with /, such as /tasks)`,
			"15:21: steps[1].map.max_parallel: 0 is out of range (want 1 to 256)",
			`16:18: steps[1].map.workspace: unknown value "copy" (want shared or worktree)`,
			"20:21: steps[2].map.items.file: items has both step and file (want one source)",
			"21:14: steps[2].map.merge: merge needs workspace: worktree",
			"24:5: steps[3].map: missing items (want {step: ID, pointer: /path} or {file: PATH})",
			"25:21: steps[3].map.max_failures: -1 is out of range (want 0 to 1073741824)",
			"26:7: steps[3].map.maps: unknown key (want items, key, max_parallel, max_failures, workspace or merge)",
		}},
		{"checks_not_a_list", []string{"10:13: steps[0].checks: want a list of checks, got a string"}},
		{"many", []string{
			`4:13: agents.sim.preset: unknown value "simulated" (want claude, codex, gemini, qwen, opencode, pi, copilot, openai, exec or sim)`,
			"6:5: steps[0]: no agent (set agent: here or in defaults)",
			`6:9: steps[0].id: invalid step id "Plan" (want lowercase letters, digits, _ and -, starting with a letter or digit)`,
			`8:14: steps[0].timeout: invalid duration "5" (want e.g. 2s, 1m30s or 500ms)`,
			"9:5: steps[1]: missing prompt or prompt_file",
			`10:12: steps[1].agent: unknown agent "ghost" (defined: sim)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			file := filepath.Join("errors", tt.fixture+".yaml")
			errs := loadErrors(t, file)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, file+":"+w)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestLoadErrorsFromOtherPackages covers mistakes whose wording comes from
// elsewhere (the YAML parser, the schema compiler): the position and key
// are ours and checked exactly, the reason only for its gist.
func TestLoadErrorsFromOtherPackages(t *testing.T) {
	tests := []struct {
		fixture    string
		line, col  int
		key, start string
		mentions   string
	}{
		{"bad_schema", 11, 15, "steps[0].handoff.schema", "schema does not compile: ", "line"},
		{"yaml_syntax", 9, 13, "", "invalid YAML: ", "quote"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			errs := loadErrors(t, filepath.Join("errors", tt.fixture+".yaml"))
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(errs), errs)
			}
			e := errs[0]
			if e.Line != tt.line || e.Column != tt.col || e.Key != tt.key {
				t.Errorf("at %d:%d %q, want %d:%d %q", e.Line, e.Column, e.Key, tt.line, tt.col, tt.key)
			}
			if !strings.HasPrefix(e.Msg, tt.start) || !strings.Contains(strings.ToLower(e.Msg), tt.mentions) {
				t.Errorf("message %q, want it to start with %q and mention %q", e.Msg, tt.start, tt.mentions)
			}
		})
	}
}

// loadErrors loads a workflow that must fail, and returns its errors.
func loadErrors(t *testing.T, file string) Errors {
	t.Helper()
	w, err := Load(project, file)
	if err == nil {
		t.Fatalf("Load(%s) succeeded, want errors; steps: %d", file, len(w.Steps))
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load(%s) = %T %v, want Errors", file, err, err)
	}
	return errs
}

// TestYAMLSlips: the parser's message for the slips people make most is
// followed by what to do about it, at the parser's position.
func TestYAMLSlips(t *testing.T) {
	const tabs = " (indent with spaces: YAML does not allow tabs in indentation)"
	quote := func(v string) string {
		return ` (the value of prompt holds {, [ or ": ", which YAML reads as structure: quote it, as prompt: '` + v +
			`', or write it as a block scalar, prompt: | with the text on the lines below, indented)`
	}
	tests := []struct {
		fixture   string
		line, col int
		end       string
	}{
		{"yaml_flow_in_plain", 9, 13, quote(`Reply with {"ok": true}`)},
		{"yaml_colon_in_plain", 9, 13, quote(`Review: then reply`)},
		{"yaml_tab", 6, 1, tabs},
		{"yaml_tab_block", 10, 1, tabs},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			errs := loadErrors(t, filepath.Join("errors", tt.fixture+".yaml"))
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(errs), errs)
			}
			e := errs[0]
			if e.Line != tt.line || e.Column != tt.col || !strings.HasPrefix(e.Msg, "invalid YAML: ") || !strings.HasSuffix(e.Msg, tt.end) {
				t.Errorf("%d:%d %s\nwant %d:%d invalid YAML: … ending %s", e.Line, e.Column, e.Msg, tt.line, tt.col, tt.end)
			}
			if strings.Contains(e.Msg, "\t") {
				t.Errorf("message %q holds a raw tab", e.Msg)
			}
		})
	}
}
