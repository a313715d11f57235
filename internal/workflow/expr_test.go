package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// TestExprEval evaluates expressions over handoffs as jsonvalue decodes
// them, and checks the result or the error, which names the expression
// and the missing field.
func TestExprEval(t *testing.T) {
	out := func(s string) any {
		v, err := jsonvalue.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	vars := ExprVars{
		Inputs: map[string]any{"issue": "x", "max_rounds": out("3"), "big": out("12345678901234567890")},
		Steps: map[string]StepVars{
			"plan":   {Output: out(`{"tasks": ["a", "b"], "score": 0.75, "n": 2, "nested": {"ok": true}}`), Status: StatusSucceeded},
			"review": {Output: out(`{"approved": false, "comments": "more tests"}`), Status: StatusSucceeded},
			"notify": {Status: StatusSkipped},
			"build":  {Output: out(`{"exit_code": 2, "stdout": "boom"}`), Status: StatusFailed},
		},
		Iteration: 3,
	}
	tests := []struct {
		src   string
		want  bool
		field string // the missing field, for an error
		err   string // the error's message after the expression, "" for none
	}{
		{src: "size(steps.plan.output.tasks) > 0", want: true},
		{src: "steps.review.output.approved", want: false},
		{src: `steps.build.status == "failed" && steps.build.output.exit_code == 2`, want: true},
		{src: `steps["notify"].status == "skipped"`, want: true},
		{src: "steps.plan.output.score > 0.5 && steps.plan.output.n >= 2 && steps.plan.output.n < 2.5", want: true},
		{src: "steps.plan.output.nested.ok && inputs.max_rounds == 3 && inputs.issue == 'x'", want: true},
		{src: "loop.iteration == 3 && loop.iteration > inputs.max_rounds - 1", want: true},
		{src: "steps.plan.output.tasks.exists(t, t == 'b')", want: true},
		{src: "has(steps.plan.output.missing)", want: false},
		{src: "inputs.big > 1", want: true},
		{src: "steps.plan.output.missing == 1", field: "missing", err: `field "missing" is missing`},
		{src: "steps.review.output.approved && steps.plan.output.nested.gone", want: false}, // && short-circuits
		{src: "steps.plan.output.nested.gone || true", want: true},                          // CEL's || absorbs errors
		{src: "steps.plan.output.tasks", err: "evaluates to list, want a boolean"},
		{src: "steps.plan.output.tasks[5] == 'x'", err: "index out of bounds: 5"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			x, problems := compileExpr(tt.src, "steps[1].when")
			if problems != nil {
				t.Fatalf("compile: %v", problems)
			}
			got, err := x.Eval(context.Background(), vars)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Errorf("= %v, %v; want %v", got, err, tt.want)
				}
				return
			}
			var xe *ExprError
			if !errors.As(err, &xe) || !IsExprError(err) {
				t.Fatalf("= %v, %v; want an *ExprError", got, err)
			}
			if want := `steps[1].when "` + tt.src + `": ` + tt.err; err.Error() != want || xe.Field != tt.field {
				t.Errorf("error %q field %q, want %q field %q", err, xe.Field, want, tt.field)
			}
		})
	}
}

// TestExprEvalMissingStep: the caller must give every step the expression
// reads; one it forgot is named.
func TestExprEvalMissingStep(t *testing.T) {
	x, problems := compileExpr(`steps.plan.status == "succeeded"`, "steps[1].when")
	if problems != nil {
		t.Fatal(problems)
	}
	_, err := x.Eval(context.Background(), ExprVars{})
	var xe *ExprError
	if !errors.As(err, &xe) || xe.Field != "steps.plan" || !strings.Contains(err.Error(), "step plan has no outcome to read") {
		t.Errorf("err %v", err)
	}
}

// TestExprBounded: an expression that would take too long ends with an
// error at the cost limit or at the end of its context, never runs on.
func TestExprBounded(t *testing.T) {
	xs := make(jsonvalue.Array, 2000)
	for i := range xs {
		xs[i] = jsonvalue.Object{"n": "1"}
	}
	vars := ExprVars{Steps: map[string]StepVars{"a": {Output: jsonvalue.Object{"xs": xs}, Status: StatusSucceeded}}}
	src := "steps.a.output.xs.all(x, steps.a.output.xs.all(y, steps.a.output.xs.all(z, x.n == y.n && y.n == z.n)))"
	x, problems := compileExpr(src, "steps[1].when")
	if problems != nil {
		t.Fatal(problems)
	}
	start := time.Now()
	_, err := x.Eval(context.Background(), vars)
	t.Logf("stopped at the cost limit after %v", time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("err %v, want the cost limit", err)
	}
	// 8·10⁹ comparisons would take hours: a minute is far from both that
	// and from the tens of milliseconds the limit allows, which -race on a
	// loaded machine stretches to seconds.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Eval(ctx, vars); err == nil || !strings.Contains(err.Error(), "context canceled") || IsExprError(err) {
		t.Errorf("err %v with a cancelled context, want one saying so that is not the expression's fault", err)
	}

	long := "true" + strings.Repeat(" && true", MaxExprBytes/8)
	if _, problems := compileExpr(long, "steps[1].when"); len(problems) != 1 || !strings.Contains(problems[0].msg, "want at most 4096") {
		t.Errorf("%d bytes: %v", len(long), problems)
	}
}

// TestRenameLoop: loop is renamed only where it is the variable.
func TestRenameLoop(t *testing.T) {
	tests := []struct{ in, want string }{
		{"loop.iteration > 1", "_lp_.iteration > 1"},
		{"x.loop == 'loop' && loop . iteration == 1", "x.loop == 'loop' && _lp_ . iteration == 1"},
		{`"a \" loop" + r'loop\' == loop`, `"a \" loop" + r'loop\' == _lp_`},
		{"'''loop ' loop''' // loop\n+ loops + loop", "'''loop ' loop''' // loop\n+ loops + _lp_"},
		{"x.\n  loop", "x.\n  loop"},
	}
	for _, tt := range tests {
		if got := renameLoop(tt.in); got != tt.want {
			t.Errorf("renameLoop(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkExprEval measures one evaluation of a compiled when: over a
// small handoff, the cost a scheduler pays per decision.
func BenchmarkExprEval(b *testing.B) {
	x, problems := compileExpr("size(steps.plan.output.tasks) > 0 && steps.review.status == 'succeeded'", "when")
	if problems != nil {
		b.Fatal(problems)
	}
	out, err := jsonvalue.Decode([]byte(`{"tasks": ["a", "b", "c"], "summary": "three tasks"}`))
	if err != nil {
		b.Fatal(err)
	}
	vars := ExprVars{Steps: map[string]StepVars{"plan": {Output: out, Status: StatusSucceeded}, "review": {Status: StatusSucceeded}}}
	ctx := context.Background()
	for b.Loop() {
		if ok, err := x.Eval(ctx, vars); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkExprCompile measures compiling and checking one expression,
// done once per when: at load time.
func BenchmarkExprCompile(b *testing.B) {
	for b.Loop() {
		if _, problems := compileExpr("size(steps.plan.output.tasks) > 0 && steps.review.status == 'succeeded'", "when"); problems != nil {
			b.Fatal(problems)
		}
	}
}

// TestExprOutputs: the parts of step outputs an expression reads by name
// are known at load, the longest chain written only, however it is
// spelled; a status, an input or a dynamic index adds none.
func TestExprOutputs(t *testing.T) {
	tests := []struct {
		src  string
		want [][]string
	}{
		{`steps.review.output.approved`, [][]string{{"review", "approved"}}},
		{`steps["review"]["output"]["approved"] && steps.plan.status == "succeeded"`, [][]string{{"review", "approved"}}},
		{`size(steps.plan.output.tasks) > 0 || steps.plan.output.tasks[0] == "x"`, [][]string{{"plan", "tasks"}}},
		{`steps.a.output.x.y == 1 && steps.a.output.x.z == 2`, [][]string{{"a", "x", "y"}, {"a", "x", "z"}}},
		{`steps.a.output != null`, [][]string{{"a"}}},
		{`steps.a.status == "failed" && inputs.n > 1`, nil},
		{`loop.iteration > 2 && steps.a.output[inputs.key] == 1`, [][]string{{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			x, problems := compileExpr(tt.src, "steps[1].when")
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if !slices.EqualFunc(x.Outputs, tt.want, slices.Equal[[]string]) {
				t.Errorf("Outputs = %q, want %q", x.Outputs, tt.want)
			}
		})
	}
}

// TestExprRegexBounds: matches() scans a string of at most
// MaxExprScanBytes with a pattern of at most MaxExprPatternSize
// instructions; past either, the evaluation fails at once saying so.
func TestExprRegexBounds(t *testing.T) {
	text := func(n int) ExprVars {
		return ExprVars{Steps: map[string]StepVars{"a": {Output: jsonvalue.Object{"t": strings.Repeat("x", n)}, Status: StatusSucceeded}}}
	}
	tests := []struct {
		src  string
		size int
		want string // part of the error; "" for a result of false
	}{
		{`steps.a.output.t.matches("y")`, MaxExprScanBytes, ""},
		{`matches(steps.a.output.t, "y")`, MaxExprScanBytes, ""},
		{`steps.a.output.t.matches("y")`, MaxExprScanBytes + 1, "matches() scans strings of at most 65536 bytes, and this one is 65537 bytes long"},
		{`matches(steps.a.output.t, "y")`, 7_000_000, "matches() scans strings of at most 65536 bytes, and this one is 7000000 bytes long"},
		{`steps.a.output.t.matches("[a-w]{1,1000}y")`, 10, "matches(): the pattern compiles to 2002 instructions (want at most 1000"},
		{`steps.a.output.t.matches("(")`, 10, "matches(): error parsing regexp: missing closing ): `(`"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.src, tt.size), func(t *testing.T) {
			x, problems := compileExpr(tt.src, "steps[1].when")
			if problems != nil {
				t.Fatal(problems)
			}
			start := time.Now()
			got, err := x.Eval(context.Background(), text(tt.size))
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if tt.want == "" {
				if err != nil || got {
					t.Errorf("= %v, %v; want false", got, err)
				}
				return
			}
			if err == nil || !IsExprError(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want an expression error saying %q", err, tt.want)
			}
		})
	}
}

// TestExprTypedInputs: an input is typed as declared, at load and when
// evaluated, read as inputs.NAME or inputs["NAME"].
func TestExprTypedInputs(t *testing.T) {
	env, err := inputsEnv([]*Input{{Name: "issue", Type: "string"}, {Name: "rounds", Type: "integer"}, {Name: "ratio", Type: "number"}, {Name: "dry", Type: "boolean"}})
	if err != nil {
		t.Fatal(err)
	}
	vars := ExprVars{Inputs: map[string]any{"issue": "fix it", "rounds": json.Number("3"), "ratio": json.Number("0.5"), "dry": false}}
	for _, tt := range []struct {
		src  string
		want bool
	}{
		{`inputs.issue.startsWith("fix") && inputs.rounds > 2`, true},
		{`inputs["rounds"] == 3 && !inputs.dry`, true},
		{`inputs.ratio < 1 && inputs.ratio > 0.25`, true},
		{`inputs.dry`, false},
	} {
		x, problems := compileExprIn(env, tt.src, "when")
		if problems != nil {
			t.Fatalf("%s: %v", tt.src, problems)
		}
		if got, err := x.Eval(context.Background(), vars); err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.src, got, err, tt.want)
		}
		if len(x.Inputs) == 0 {
			t.Errorf("%s: no inputs recorded as read", tt.src)
		}
	}
	for _, src := range []string{`inputs.issue`, `inputs.rounds == "3"`, `inputs.issue > 2`} {
		if _, problems := compileExprIn(env, src, "when"); problems == nil {
			t.Errorf("%s compiled, want a type error", src)
		}
	}
}
