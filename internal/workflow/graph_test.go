package workflow

import (
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// graphProject holds the SPEC's examples of sections 16 and 17 and the
// files they name; graphProject/errors the graph's mistakes.
const graphProject = "testdata/graph"

// TestSpec16Example loads SPEC section 16's example and checks what each
// construct in it became.
func TestSpec16Example(t *testing.T) {
	w, err := Load(graphProject, "spec16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w.MaxParallelSteps != 4 {
		t.Errorf("MaxParallelSteps %d, want 4", w.MaxParallelSteps)
	}
	if len(w.Inputs) != 2 || w.Inputs[0].Name != "issue" || !w.Inputs[0].Required() || w.Inputs[0].Type != "string" ||
		w.Inputs[1].Name != "max_rounds" || w.Inputs[1].Required() || string(w.Inputs[1].Default) != "3" {
		t.Errorf("inputs %+v %+v", w.Inputs[0], w.Inputs[1])
	}
	type want struct {
		kind, parent string
		needs, reads []string
	}
	wants := map[string]want{
		"plan":       {KindAgent, "", nil, nil},
		"build":      {KindCommand, "", []string{"plan"}, nil},
		"implement":  {KindLoop, "", []string{"plan"}, []string{"plan"}},
		"code":       {KindAgent, "implement", nil, nil},
		"review":     {KindAgent, "implement", []string{"code"}, nil},
		"merge-gate": {KindApproval, "", []string{"build", "implement"}, []string{"implement"}},
		"notify":     {KindCommand, "", []string{"implement"}, []string{"implement"}},
	}
	var ids []string
	for _, s := range w.All() {
		ids = append(ids, s.ID)
		wt := wants[s.ID]
		if s.Kind != wt.kind || s.Parent != wt.parent || !reflect.DeepEqual(s.Needs, wt.needs) || !reflect.DeepEqual(s.Reads, wt.reads) {
			t.Errorf("step %s: kind %s parent %q needs %v reads %v, want %+v", s.ID, s.Kind, s.Parent, s.Needs, s.Reads, wt)
		}
	}
	if want := []string{"plan", "build", "implement", "code", "review", "merge-gate", "notify"}; !slices.Equal(ids, want) {
		t.Errorf("All() = %v, want %v", ids, want)
	}

	build := w.Find("build")
	if build.Run == nil || !slices.Equal(build.Run.Argv, []string{"make", "build"}) || build.Run.Shell || build.Run.Handoff ||
		len(build.Run.Templates) != 2 || build.Timeout != 10*time.Minute || build.Agent != "" {
		t.Errorf("build: run %+v timeout %v agent %q", build.Run, build.Timeout, build.Agent)
	}
	notify := w.Find("notify")
	if !notify.AllowFailure || notify.When == nil || notify.Timeout != DefaultCommandTimeout || notify.Retry.MaxAttempts != 3 {
		t.Errorf("notify: allow_failure %v when %v timeout %v retry %+v", notify.AllowFailure, notify.When, notify.Timeout, notify.Retry)
	}
	impl := w.Find("implement")
	if impl.When == nil || impl.When.Source != "size(steps.plan.output.tasks) > 0" || !slices.Equal(impl.When.Steps, []string{"plan"}) {
		t.Errorf("implement.when = %+v", impl.When)
	}
	l := impl.Loop
	if l == nil || l.MaxIterations != 5 || l.Session != SessionContinue || l.OnExhausted != OnFail || l.Until == nil ||
		!slices.Equal(l.Until.Steps, []string{"review"}) || len(l.Steps) != 2 {
		t.Fatalf("implement.loop = %+v", l)
	}
	if code := w.Find("code"); code.Agent != "claude" || len(code.Checks) != 1 || code.Template == nil || code.StartTimeout != DefaultStartTimeout {
		t.Errorf("code: agent %q checks %v template %v start_timeout %v", code.Agent, code.Checks, code.Template, code.StartTimeout)
	}
	if review := w.Find("review"); review.Agent != "reviewer" || review.Handoff.Schema == nil {
		t.Errorf("review: agent %q schema %v", review.Agent, review.Handoff.Schema)
	}
	gate := w.Find("merge-gate").Approval
	if gate == nil || gate.OnReject != OnFail || gate.Timeout != 72*time.Hour || gate.Template == nil {
		t.Errorf("merge-gate.approval = %+v", gate)
	}
	if err := CheckPrograms(w); err != nil && !strings.Contains(err.Error(), "program make") && !strings.Contains(err.Error(), "program claude") && !strings.Contains(err.Error(), "program codex") {
		t.Errorf("CheckPrograms: %v", err)
	}
}

// TestSpec17Example loads SPEC section 17's example.
func TestSpec17Example(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	w, err := Load(graphProject, "spec17.yaml")
	if err != nil {
		t.Fatal(err)
	}
	claude, claude2 := w.Agents["claude"], w.Agents["claude-2"]
	if claude.ConfigDir != filepath.Join(home, ".cadence-accounts/work") || claude.MaxConcurrent != 2 ||
		!slices.Equal(claude.Fallback, []string{"claude-2", "codex"}) {
		t.Errorf("claude: config_dir %q max_concurrent %d fallback %v", claude.ConfigDir, claude.MaxConcurrent, claude.Fallback)
	}
	if claude2.ConfigDir != filepath.Join(home, ".cadence-accounts/personal") || claude2.MaxConcurrent != 0 || claude2.Fallback != nil {
		t.Errorf("claude-2: %+v", claude2)
	}
	s := w.Step("implement")
	if s.FallbackAfter != 10*time.Minute || s.StartTimeout != 2*time.Minute {
		t.Errorf("implement: fallback_after %v start_timeout %v", s.FallbackAfter, s.StartTimeout)
	}
	want := []*NotifyTarget{
		// The SPEC's example lists the six events it had before
		// run_cancelled was added (issue 33).
		{Webhook: "https://hooks.example.com/T000/B000", On: NotifyEvents[:6], NotifyAfter: DefaultNotifyAfter},
		{Command: []string{"./scripts/page-me.sh"}, On: []string{EventRunFailed, EventAuthNeeded}, NotifyAfter: DefaultNotifyAfter},
	}
	if !reflect.DeepEqual(w.Notify, want) {
		t.Errorf("notify:\n got %+v %+v\nwant %+v %+v", w.Notify[0], w.Notify[1], want[0], want[1])
	}
	if !w.Notify[1].Wants(EventAuthNeeded) || w.Notify[1].Wants(EventItemDead) {
		t.Error("Wants disagrees with on:")
	}
}

// TestGraphHelpers checks ancestors, dependents and the order on a graph
// with fan-out, fan-in, a step that needs nothing and a nested loop.
func TestGraphHelpers(t *testing.T) {
	src := `version: 1
agents: {x: {preset: claude}}
defaults: {agent: x}
steps:
  - {id: a, prompt: a}
  - {id: c, prompt: c, needs: [a]}
  - {id: b, prompt: b, needs: [a]}
  - {id: lone, prompt: lone, needs: []}
  - id: join
    needs: [b, c]
    loop:
      max_iterations: 3
      until: steps.inner2.output.done && loop.iteration > 1
      steps:
        - {id: inner1, prompt: "{{ .Steps.b.Output }} {{ .Loop.Iteration }}"}
        - id: nested
          loop:
            max_iterations: 2
            until: steps.deep.status == "succeeded"
            steps:
              - {id: deep, prompt: "{{ .Steps.inner1.Output }} {{ .Steps.a.Output }} {{ .Loop.Previous.deep.Output }}"}
        - {id: inner2, prompt: "{{ .Steps.nested.Output.steps.deep }}"}
  - {id: last, prompt: "{{ .Steps.join.Output.steps.inner2 }}"}
`
	w, errs := build([]byte(src), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ancestors := map[string][]string{
		"a":      nil,
		"c":      {"a"},
		"lone":   nil,
		"join":   {"a", "c", "b"},
		"inner1": {"a", "c", "b"},
		"nested": {"a", "c", "b", "inner1"},
		"deep":   {"a", "c", "b", "inner1"},
		"inner2": {"a", "c", "b", "inner1", "nested"},
		"last":   {"a", "c", "b", "join"},
	}
	for id, want := range ancestors {
		if got := w.Ancestors(id); !slices.Equal(got, want) {
			t.Errorf("Ancestors(%s) = %v, want %v", id, got, want)
		}
	}
	dependents := map[string][]string{"a": {"c", "b"}, "b": {"join"}, "lone": nil, "join": {"last"}, "inner1": {"nested"}, "deep": nil}
	for id, want := range dependents {
		if got := w.Dependents(id); !slices.Equal(got, want) {
			t.Errorf("Dependents(%s) = %v, want %v", id, got, want)
		}
	}
	var order []string
	for _, s := range w.Order() {
		order = append(order, s.ID)
	}
	if want := []string{"a", "c", "b", "lone", "join", "last"}; !slices.Equal(order, want) {
		t.Errorf("Order() = %v, want %v", order, want)
	}
	// Written in reverse, a chain comes out in dependency order.
	rev, errs := build([]byte(`version: 1
agents: {x: {preset: claude}}
defaults: {agent: x}
steps:
  - {id: z, prompt: z, needs: [y]}
  - {id: y, prompt: y, needs: [x]}
  - {id: x, prompt: x, needs: []}
`), "wf.yaml", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	order = order[:0]
	for _, s := range rev.Order() {
		order = append(order, s.ID)
	}
	if want := []string{"x", "y", "z"}; !slices.Equal(order, want) {
		t.Errorf("Order() = %v, want %v", order, want)
	}
	if deep := w.Find("deep"); deep.Parent != "nested" || !slices.Equal(deep.Reads, []string{"inner1", "a"}) {
		t.Errorf("deep: parent %q reads %v", deep.Parent, deep.Reads)
	}
	if got := w.Find("join").Loop.Until.Steps; !slices.Equal(got, []string{"inner2"}) || !w.Find("join").Loop.Until.UsesLoop {
		t.Errorf("join.until reads %v", got)
	}
}

// TestGraphErrors loads one fixture per mistake in a graph, a command
// step, a loop, a gate, an expression or the keys of section 17.
func TestGraphErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	tests := []struct {
		fixture string
		want    []string
	}{
		{"needs", []string{
			`5:32: steps[0].needs[0]: needs form a cycle: a -> c -> b -> a (each step needs the next)`,
			`8:32: steps[3].needs[0]: needs unknown step "nope" (steps beside it: a, b, c, e and f)`,
			`8:38: steps[3].needs[1]: step "d" cannot need itself`,
			`8:44: steps[3].needs[3]: step "a" is listed twice`,
			`9:21: steps[4].prompt: template references step "d", which does not run before step "e": it is not among the steps e needs, directly or through others (add it to needs:)`,
			`10:31: steps[5].needs: want a list of step ids ([] for none), got a string`,
		}},
		{"exprs", []string{
			`8:49: steps[1].when: expression does not compile: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`,
			`9:30: steps[2].when: expression is of type string, want bool`,
			`10:38: steps[3].when: steps.a has no field "result" (want steps.a.output or steps.a.status)`,
			`11:30: steps[4].when: expression reads unknown input "m" (declared: n)`,
			`12:30: steps[5].when: expression reads loop, which is defined only inside a loop and in its until`,
			`13:36: steps[6].when: read a step as steps.ID or steps["ID"], with the id written out`,
			`14:41: steps[7].when: expression reads step "a", which does not run before step "h": it is not among the steps h needs, directly or through others (add it to needs:)`,
			`15:30: steps[8].when: expression reads unknown step "zz"`,
			`20:15: steps[9].when: expression does not compile: undeclared reference to 'nosuch' (in container '')`,
		}},
		{"kinds", []string{
			`5:24: steps[0].run: a step has one of prompt (or prompt_file), run, loop or approval, and this one already has prompt`,
			`6:13: steps[1].agent: a command step runs no agent (remove agent:, or run: to make it an agent step)`,
			`6:36: steps[1].idle_timeout: idle_timeout does not apply to a command step (it has run:; want id, needs, when, allow_failure, run, handoff, retry, timeout, checks, map, sandbox or restore_on_retry)`,
			`7:38: steps[2].retry: retry does not apply to an approval step (it has approval:; want id, needs, when, allow_failure or approval)`,
			`9:10: steps[3].run: a shell string cannot read .Steps: /bin/sh would interpret what an agent wrote; give run: as a list, whose elements are passed as they are, or read $CADENCE_OUTPUTS_DIR/STEP.json`,
			`9:10: steps[3].run: template references unknown input "nope" (no inputs are declared)`,
			`11:44: steps[4].run[2]: template references .Loop, which only a step inside a loop has`,
			`13:10: steps[5].run: a shell string cannot read .Item: /bin/sh would interpret what an agent wrote; give run: as a list, whose elements are passed as they are, or read $CADENCE_OUTPUTS_DIR/STEP.json`,
			`15:18: steps[6].run: must not be empty`,
			`16:38: steps[7].map: map does not apply to an approval step (it has approval:; want id, needs, when, allow_failure or approval)`,
		}},
		{"loops", []string{
			`5:21: steps[0].prompt: template references .Loop, which only a step inside a loop has`,
			`7:5: steps[1].loop: missing max_iterations (want a number of at least 1: a loop must end)`,
			`7:5: steps[1].loop: missing until (an expression over the inner steps that ends the loop when true)`,
			`9:16: steps[1].loop.steps[0].id: duplicate step id "a" (first at line 5; ids are unique in the whole file, inner steps of loops included)`,
			`11:5: steps[2].loop: no steps (want at least one inner step)`,
			`12:23: steps[2].loop.max_iterations: 0 is out of range (want 1 to 1048576)`,
			`13:14: steps[2].loop.until: expression is of type int, want bool`,
			`14:16: steps[2].loop.session: unknown value "again" (want continue or fresh)`,
			`15:21: steps[2].loop.on_exhausted: unknown value "retry" (want fail or continue)`,
			`22:29: steps[3].loop.steps[0].prompt: template references .Loop.Previous.a, which is not a step of loop "l3"`,
			`22:102: steps[3].loop.steps[0].needs[0]: needs step "a", which is not beside it (it is at the top of the workflow): an inner step needs its siblings only; what the loop needs, every inner step can read`,
			`23:29: steps[3].loop.steps[1].prompt: template references step "in2", its own`,
			`23:29: steps[3].loop.steps[1].prompt: template references unknown field .Loop.Next (want .Run.ID, .Step.ID, .Attempt, .HandoffPath, .SchemaPath, .Inputs.<name>, .Steps.<id>.Output, .Help.Context, .Help.Advice, in a map step .Item, or in a loop .Loop.Iteration and .Loop.Previous.<id>.Output)`,
			`24:21: steps[4].prompt: template references step "in1", which is inside loop "l3": read its last iteration's output as .Steps.l3.Output.steps.in1 (steps.l3.output.steps.in1 in an expression)`,
			`24:54: steps[4].when: expression reads step "in2", which is inside loop "l3": read its last iteration's output as .Steps.l3.Output.steps.in2 (steps.l3.output.steps.in2 in an expression)`,
		}},
		{"gates", []string{
			`5:13: steps[0].approval: missing prompt (what the person is asked)`,
			`6:50: steps[1].approval.on_reject: unknown value "retry" (want fail or continue)`,
			`6:66: steps[1].approval.timeout: invalid duration "soon" (want e.g. 2s, 1m30s or 500ms)`,
			`6:72: steps[1].approval.ask: unknown key (want prompt, on_reject or timeout)`,
			`7:32: steps[2].approval.prompt: template references step "d", which does not run before step "c": it is not among the steps c needs, directly or through others (add it to needs:)`,
		}},
		{"unattended", []string{
			`2:27: defaults.start_timeout: duration 0s is too short (want at least 1s)`,
			`2:47: defaults.fallback_after: invalid duration "-1m" (want e.g. 2s, 1m30s or 500ms)`,
			`4:34: agents.a.fallback[0]: agent a cannot be its own fallback`,
			`4:40: agents.a.fallback[2]: unknown agent "nope" (defined: a and b)`,
			`4:46: agents.a.fallback[3]: agent "b" is listed twice`,
			`4:66: agents.a.max_concurrent: 0 is out of range (want 1 to 2147483647)`,
			`4:81: agents.a.config_dir: config_dir "~bob/x": only ~ or ~/ is expanded, not ~user (write the path out)`,
			`5:34: agents.b.config_dir: must not be empty`,
			`7:50: steps[0].fallback_after: invalid duration "later" (want e.g. 2s, 1m30s or 500ms)`,
			`9:15: notify[0].webhook: invalid webhook "ftp://example.com/x" (want an http:// or https:// URL)`,
			`9:55: notify[0].on[1]: unknown event "run_done" (want run_succeeded, run_failed, approval_waiting, long_wait, auth_needed, item_dead or run_cancelled)`,
			`9:65: notify[0].on[2]: event "run_failed" is listed twice`,
			`10:15: notify[1].command: must not be empty`,
			`10:23: notify[1].on: no events (want some of run_succeeded, run_failed, approval_waiting, long_wait, auth_needed, item_dead and run_cancelled)`,
			`11:6: notify[2]: a target has webhook or command, not both`,
			`12:6: notify[3]: missing webhook or command`,
			`12:6: notify[3]: missing on (want a list of events: run_succeeded, run_failed, approval_waiting, long_wait, auth_needed, item_dead and run_cancelled)`,
			`13:5: notify[4]: want {webhook: URL, on: [...]} or {command: [argv], on: [...]}, got a string`,
		}},
		{"inputs", []string{
			`5:3: inputs.9lives: invalid input name "9lives" (want letters, digits and _, not starting with a digit)`,
			`6:7: inputs.a: not a valid JSON Schema: #/type value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
			`7:31: inputs.b.default: the default fails the input's schema: /: expected integer, got string`,
			`8:21: inputs.c.$ref: unknown key (want type, description, title, default, enum, const, pattern, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, items, minItems, maxItems, uniqueItems, properties, required, additionalProperties or examples)`,
			`9:6: inputs.d: want a JSON Schema such as {type: string}, got a string`,
			`12:21: steps[0].prompt: template references unknown input "f" (declared: e)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			file := filepath.Join("errors", tt.fixture+".yaml")
			w, err := Load(graphProject, file)
			if err == nil {
				t.Fatalf("loaded, %d steps; want errors", len(w.Steps))
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, strings.TrimPrefix(line, file+":"))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// BenchmarkLoadGraph loads 1,000 command steps: a chain (each needs the
// one before, the deepest ancestry there is) and a fan-out and fan-in
// (999 steps need the first, the last needs them all).
func BenchmarkLoadGraph(b *testing.B) {
	const n = 1000
	head := "version: 1\nsteps:\n"
	var chain, fan strings.Builder
	chain.WriteString(head)
	fan.WriteString(head + "  - {id: s0, run: [\"true\"]}\n")
	var all []string
	for i := 0; i < n; i++ {
		chain.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: [\"true\"]}\n")
		if i > 0 && i < n-1 {
			fan.WriteString("  - {id: s" + strconv.Itoa(i) + ", run: [\"true\"], needs: [s0]}\n")
			all = append(all, "s"+strconv.Itoa(i))
		}
	}
	fan.WriteString("  - {id: last, run: [\"true\"], needs: [" + strings.Join(all, ", ") + "]}\n")
	for name, src := range map[string]string{"chain": chain.String(), "fan": fan.String()} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				w, errs := build([]byte(src), "wf.yaml", "")
				if len(errs) > 0 || len(w.Steps) != n {
					b.Fatal(errs)
				}
			}
		})
	}
}

// TestTypeErrors: expressions and templates are checked against the
// declared inputs' types and the steps' schemas, each mistake at its line
// with the name meant when one is near.
func TestTypeErrors(t *testing.T) {
	want := []string{
		"10:53: steps[2].when: expression is of type string, want bool",
		"11:53: steps[3].when: expression is of type int, want bool",
		"12:53: steps[4].when: expression is of type string (steps.review.output.title, in schemas/closed.json), want bool",
		"13:53: steps[5].when: expression reads steps.review.output.aproved, a field schemas/closed.json does not allow (only approved, files, meta and title); did you mean approved?",
		"14:53: steps[6].when: expression reads steps.review.output.meta.rund, a field schemas/closed.json does not allow (only round); did you mean round?",
		`15:53: steps[7].when: expression reads unknown input "isue" (declared: issue and rounds); did you mean issue?`,
		"16:44: steps[8].prompt: template reads .Steps.review.Output.titel, a field schemas/closed.json does not allow (only approved, files, meta and title); did you mean title?",
		`17:44: steps[9].prompt: template references unknown input "rouns" (declared: issue and rounds); did you mean rounds?`,
		`17:44: steps[9].prompt: template references unknown step "revew"; did you mean review?`,
		"18:44: steps[10].prompt: template reads .Steps.review.Output.files.name, but .Steps.review.Output.files is an array in schemas/closed.json",
		"26:29: steps[12].loop.steps[0].prompt: template reads .Loop.Previous.fix.Output.tittle, a field schemas/closed.json does not allow (only approved, files, meta and title); did you mean title?",
		"27:33: steps[13].prompt: template reads .Steps.k.Output.step, a field loop k's output does not allow (only iterations and steps); did you mean steps?",
		"27:107: steps[13].when: expression reads steps.k.output.steps.fx, a field loop k's output does not allow (only fix); did you mean fix?",
	}
	file := filepath.Join("errors", "types.yaml")
	_, err := Load(graphProject, file)
	if err == nil {
		t.Fatal("loaded; want errors")
	}
	var got []string
	for _, line := range strings.Split(err.Error(), "\n") {
		got = append(got, strings.TrimPrefix(line, file+":"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDidYouMean: a name one slip away from a known one is offered; a
// name far from every known one is not.
func TestDidYouMean(t *testing.T) {
	names := []string{"approved", "comments", "title", "issue"}
	for _, tt := range []struct{ name, want string }{
		{"aproved", "; did you mean approved?"},
		{"titel", "; did you mean title?"},
		{"Title", "; did you mean title?"},
		{"isue", "; did you mean issue?"},
		{"commments", "; did you mean comments?"},
		{"x", ""},
		{"summary", ""},
		{"tile", "; did you mean title?"},
	} {
		if got := didYouMean(tt.name, names); got != tt.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
