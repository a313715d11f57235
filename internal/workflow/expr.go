package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// Bounds of an expression (SPEC 16.4): no expression a workflow holds can
// make cadence parse, check or evaluate without end.
const (
	// MaxExprBytes bounds an expression's source.
	MaxExprBytes = 4096
	// ExprCostLimit bounds one evaluation, in CEL's cost units (about one
	// per operation, a few per element a macro visits): room for a
	// condition over a handoff of thousands of items, and about 30 ms of
	// work at most on one core (a 2000³ comprehension stops there).
	ExprCostLimit = 100_000
	// MaxExprScanBytes bounds the string a regular expression scans
	// (matches()): a pattern's work grows with the string, and one call
	// runs to its end before the cost limit is counted, so a longer
	// string is an evaluation error, never minutes of work.
	MaxExprScanBytes = 64 << 10
	// MaxExprPatternSize bounds a matches() pattern, in the instructions
	// it compiles to (about one per character, one per copy of a repeat:
	// [a-z]{1,100} is 200): the work of a match is the string's length
	// times this, a few seconds at most (4.7 s for [a-j]{1,495}z over
	// 64 KiB on a 2-core machine running twenty processes).
	MaxExprPatternSize = 1000
)

// Step statuses an expression sees as steps.ID.status.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusSkipped   = "skipped"
)

// Expr is a compiled, type-checked CEL expression of a when: or an until:
// (SPEC 16.4). It is side-effect free and its evaluation is bounded by
// ExprCostLimit and by the context it is given.
type Expr struct {
	Source string // as written
	// Key is where it was written, e.g. steps[2].when, for messages.
	Key string
	// Steps are the steps it reads (steps.ID), Inputs the inputs
	// (inputs.NAME), each sorted; UsesLoop is set when it reads
	// loop.iteration.
	Steps    []string
	Inputs   []string
	UsesLoop bool
	// Outputs are the parts of steps' outputs it reads by name, each as
	// the path STEP and its fields ({"review", "approved"} for
	// steps.review.output.approved), the longest path written only.
	Outputs [][]string

	prg cel.Program
	// root is the output path the whole expression is (steps.review.
	// output.approved), whose type a schema may give; nil otherwise.
	root []string
}

// ExprVars are the values an expression is evaluated over.
type ExprVars struct {
	Inputs map[string]any // the run's inputs, as ResolveInputs returns them
	// Steps holds, for each step the expression reads (Expr.Steps), its
	// output and status.
	Steps map[string]StepVars
	// Iteration is loop.iteration (1-based) for an expression inside a
	// loop or a loop's until; 0 elsewhere.
	Iteration int
}

// StepVars is what an expression sees of one step.
type StepVars struct {
	Output any    // the accepted handoff, as jsonvalue decodes it; nil for none
	Status string // StatusSucceeded, StatusFailed or StatusSkipped
}

// ExprError is an expression that could not be evaluated: a field the
// output lacks, a value of the wrong type, the cost limit. Field names the
// missing field when that is the cause.
type ExprError struct {
	Key    string // where the expression was written
	Source string
	Field  string
	Msg    string
	err    error
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Key, e.Source, e.Msg)
}

func (e *ExprError) Unwrap() error { return e.err }

// exprEnv declares what expressions may read: inputs (a map), steps (a
// map of {output, status}) and loop ({iteration}). It is built once: it is
// immutable and safe for concurrent use.
var exprEnv = sync.OnceValues(func() (*cel.Env, error) {
	// CEL's standard library, but matches() of its own: the standard one
	// scans a string of any size.
	std := &celenv.LibrarySubset{ExcludeFunctions: []*celenv.Function{{Name: overloads.Matches}}}
	return cel.NewCustomEnv(
		cel.StdLib(cel.StdLibSubset(std)),
		cel.Function(overloads.Matches,
			cel.Overload(globalMatches, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(boundedMatches)),
			cel.MemberOverload(overloads.MatchesString, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(boundedMatches))),
		cel.Variable("inputs", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable(loopVar, cel.MapType(cel.StringType, cel.IntType)),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxExprBytes),
	)
})

// globalMatches is the overload id of matches(s, re): the standard id is
// the function's name, which a function of our own cannot reuse.
const globalMatches = "matches_global"

// boundedMatches is matches(): whether the regular expression (RE2
// syntax) matches part of the string, for a string of at most
// MaxExprScanBytes and a pattern of at most MaxExprPatternSize; past
// either it is an error, before any scan. matchesCost counts its cost.
func boundedMatches(str, pattern ref.Val) ref.Val {
	s, ok := str.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(str)
	}
	p, ok := pattern.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(pattern)
	}
	if len(s) > MaxExprScanBytes {
		return types.NewErr("matches() scans strings of at most %d bytes, and this one is %d bytes long", MaxExprScanBytes, len(s))
	}
	re, err := regexp.Compile(string(p))
	if err != nil {
		return types.NewErr("matches(): %v", err)
	}
	if n := patternSize(string(p)); n > MaxExprPatternSize {
		return types.NewErr("matches(): the pattern compiles to %d instructions (want at most %d: a repeat such as {1,100} counts each copy)", n, MaxExprPatternSize)
	}
	return types.Bool(re.MatchString(string(s)))
}

// patternSize is the number of instructions the pattern p, which
// compiles, compiles to, as package regexp compiles it.
func patternSize(p string) int {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

// matchesCost is the cost of a matches() call, as CEL counts the
// standard one (the string's length times the pattern's, scaled), or
// nothing for a call refused by its size, whose error says more than the
// cost limit would.
func matchesCost(args []ref.Val, result ref.Val) *uint64 {
	var c uint64 = 1
	if types.IsError(result) || len(args) != 2 {
		return &c
	}
	s, _ := args[0].(types.String)
	p, _ := args[1].(types.String)
	str := uint64(math.Ceil((1 + float64(utf8.RuneCountInString(string(s)))) * common.StringTraversalCostFactor))
	re := uint64(math.Ceil(float64(utf8.RuneCountInString(string(p))) * common.RegexStringLengthCostFactor))
	c += str * re
	return &c
}

// loopVar is the name the loop variable is declared under: loop is a
// reserved word of CEL, so renameLoop writes loop.iteration as
// _lp_.iteration before CEL reads it, a name of the same length, so that
// every position CEL reports is still right.
const loopVar = "_lp_"

// renameLoop replaces the identifier loop, outside string literals and
// comments and not after a dot (a field may be called loop), by loopVar.
func renameLoop(src string) string {
	b := []byte(src)
	ident := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			raw := i > 0 && (b[i-1] == 'r' || b[i-1] == 'R')
			quote := []byte{c}
			if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
				quote = []byte{c, c, c}
			}
			i += len(quote)
			for i < len(b) {
				if b[i] == '\\' && !raw {
					i += 2
					continue
				}
				if strings.HasPrefix(string(b[i:]), string(quote)) {
					i += len(quote)
					break
				}
				i++
			}
		case ident(c):
			j := i
			for j < len(b) && ident(b[j]) {
				j++
			}
			k := i - 1
			for k >= 0 && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
				k--
			}
			if string(b[i:j]) == "loop" && (k < 0 || b[k] != '.') {
				copy(b[i:j], loopVar)
			}
			i = j
		default:
			i++
		}
	}
	return string(b)
}

// exprProblem is a mistake in an expression, at a 1-based line and
// 0-based column of its source (line 0 when it has no position).
type exprProblem struct {
	line, col int
	msg       string
}

// inputsEnv returns the expression environment of a workflow with inputs:
// each declared input is also a variable of its own, inputs.NAME, of the
// type its declaration names, so that CEL checks what is done with it
// (when: inputs.issue, a string, is not a condition). An input of a
// type CEL cannot hold exactly (number, which may arrive as an int or a
// double) stays dyn.
func inputsEnv(inputs []*Input) (*cel.Env, error) {
	env, err := exprEnv()
	if err != nil || len(inputs) == 0 {
		return env, err
	}
	var vars []cel.EnvOption
	for _, in := range inputs {
		t := cel.DynType
		switch in.Type {
		case "string":
			t = cel.StringType
		case "integer":
			t = cel.IntType
		case "boolean":
			t = cel.BoolType
		case "array":
			t = cel.ListType(cel.DynType)
		case "object":
			t = cel.MapType(cel.StringType, cel.DynType)
		}
		vars = append(vars, cel.Variable("inputs."+in.Name, t))
	}
	return env.Extend(vars...)
}

// compileExpr parses, type-checks and plans src in the environment of a
// workflow without inputs.
func compileExpr(src, key string) (*Expr, []exprProblem) {
	env, err := exprEnv()
	if err != nil {
		return nil, []exprProblem{{msg: fmt.Sprintf("expression environment: %v", err)}}
	}
	return compileExprIn(env, src, key)
}

// compileExprIn parses, type-checks and plans src in env (exprEnv or an
// inputsEnv). It returns the problems instead when there are any.
func compileExprIn(env *cel.Env, src, key string) (*Expr, []exprProblem) {
	if len(src) > MaxExprBytes {
		return nil, []exprProblem{{msg: fmt.Sprintf("expression is %d bytes long (want at most %d)", len(src), MaxExprBytes)}}
	}
	if strings.TrimSpace(src) == "" {
		return nil, []exprProblem{{msg: "expression is empty"}}
	}
	a, iss := env.Compile(renameLoop(src))
	if iss != nil && iss.Err() != nil {
		var out []exprProblem
		for _, e := range iss.Errors() {
			msg := strings.ReplaceAll(e.Message, loopVar, "loop")
			out = append(out, exprProblem{line: e.Location.Line(), col: e.Location.Column(), msg: "expression does not compile: " + msg})
		}
		return nil, out
	}
	if t := a.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, []exprProblem{{msg: fmt.Sprintf("expression is of type %s, want bool", strings.ReplaceAll(t.String(), loopVar, "loop"))}}
	}
	x := &Expr{Source: src, Key: key}
	w := refWalker{x: x, a: a}
	w.walk(a.NativeRep().Expr())
	if len(w.problems) > 0 {
		return nil, w.problems
	}
	slices.Sort(x.Steps)
	x.Steps = slices.Compact(x.Steps)
	slices.Sort(x.Inputs)
	x.Inputs = slices.Compact(x.Inputs)
	x.Outputs = longestPaths(w.outputs)
	if p, ok := outputPath(a.NativeRep().Expr()); ok && len(p) > 1 {
		x.root = p
	}
	prg, err := env.Program(a, cel.CostLimit(ExprCostLimit), cel.InterruptCheckFrequency(100),
		cel.CostTrackerOptions(
			interpreter.OverloadCostTracker(overloads.MatchesString, matchesCost),
			interpreter.OverloadCostTracker(globalMatches, matchesCost)))
	if err != nil {
		return nil, []exprProblem{{msg: fmt.Sprintf("expression cannot be planned: %v", err)}}
	}
	x.prg = prg
	return x, nil
}

// refWalker records what an expression reads. It refuses a step read any
// way but steps.ID or steps["ID"] followed by .output or .status, so that
// every step an expression may read is known at load time.
type refWalker struct {
	x        *Expr
	a        *cel.Ast
	problems []exprProblem
	outputs  [][]string // every steps.ID.output[.field…] chain met
}

// outputPath returns the chain e reads of a step's output, as the step's
// id and its fields: steps.ID.output, then .field or ["field"] any number
// of times.
func outputPath(e ast.Expr) ([]string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		if id, ok := stepNamed(s.Operand()); ok {
			return []string{id}, id != "" && s.FieldName() == "output"
		}
		base, ok := outputPath(s.Operand())
		return append(slices.Clone(base), s.FieldName()), ok
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || len(c.Args()) != 2 {
			return nil, false
		}
		if id, ok := stepNamed(c.Args()[0]); ok {
			f, lit := stringLiteral(c.Args()[1])
			return []string{id}, id != "" && lit && f == "output"
		}
		f, lit := stringLiteral(c.Args()[1])
		base, ok := outputPath(c.Args()[0])
		return append(slices.Clone(base), f), ok && lit
	}
	return nil, false
}

// longestPaths sorts paths and drops each one another path extends.
func longestPaths(paths [][]string) [][]string {
	slices.SortFunc(paths, func(a, b []string) int { return slices.Compare(a, b) })
	paths = slices.CompactFunc(paths, slices.Equal[[]string])
	var out [][]string
	for i, p := range paths {
		if i+1 < len(paths) && len(paths[i+1]) > len(p) && slices.Equal(paths[i+1][:len(p)], p) {
			continue // extended by the next one, in sorted order
		}
		out = append(out, p)
	}
	return out
}

func (w *refWalker) fail(e ast.Expr, format string, args ...any) {
	p := exprProblem{msg: fmt.Sprintf(format, args...)}
	if r, ok := w.a.NativeRep().SourceInfo().GetOffsetRange(e.ID()); ok {
		if loc, ok := w.a.Source().OffsetLocation(r.Start); ok {
			p.line, p.col = loc.Line(), loc.Column()
		}
	}
	w.problems = append(w.problems, p)
}

// stepRef reports whether e is steps.ID or steps["ID"], and which ID; a
// step named by anything but a literal is a problem ("", true).
func (w *refWalker) stepRef(e ast.Expr) (string, bool) {
	id, ok := stepNamed(e)
	if ok && id == "" {
		w.fail(e, "read a step as steps.ID or steps[\"ID\"], with the id written out")
	}
	return id, ok
}

// stepNamed is stepRef without the problem: ("", true) for steps[x].
func stepNamed(e ast.Expr) (string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		if isIdent(s.Operand(), "steps") {
			return s.FieldName(), true
		}
	case ast.CallKind:
		c := e.AsCall()
		if (c.FunctionName() == operators.Index || c.FunctionName() == operators.OptIndex) && len(c.Args()) == 2 && isIdent(c.Args()[0], "steps") {
			id, _ := stringLiteral(c.Args()[1])
			return id, true
		}
	}
	return "", false
}

func isIdent(e ast.Expr, name string) bool {
	return e.Kind() == ast.IdentKind && e.AsIdent() == name
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

// stepField checks the field read from a step: output or status.
func (w *refWalker) stepField(e ast.Expr, id, field string) {
	if field != "output" && field != "status" {
		w.fail(e, "steps.%s has no field %q (want steps.%s.output or steps.%s.status)", id, field, id, id)
	}
}

func (w *refWalker) walk(e ast.Expr) {
	if e == nil {
		return
	}
	if p, ok := outputPath(e); ok {
		w.outputs = append(w.outputs, p)
	}
	if id, ok := w.stepRef(e); ok {
		if id != "" {
			w.x.Steps = append(w.x.Steps, id)
		}
		return
	}
	switch e.Kind() {
	case ast.IdentKind:
		switch name := e.AsIdent(); {
		case name == "steps":
			w.fail(e, "read a step as steps.ID.output or steps.ID.status")
		case name == loopVar:
			w.x.UsesLoop = true
		case strings.HasPrefix(name, "inputs."):
			// inputs.NAME, resolved by the checker as the variable
			// inputsEnv declares.
			w.x.Inputs = append(w.x.Inputs, strings.TrimPrefix(name, "inputs."))
		}
	case ast.SelectKind:
		s := e.AsSelect()
		op := s.Operand()
		if id, ok := w.stepRef(op); ok {
			if id != "" {
				w.x.Steps = append(w.x.Steps, id)
				w.stepField(e, id, s.FieldName())
			}
			return
		}
		switch {
		case isIdent(op, "inputs"):
			w.x.Inputs = append(w.x.Inputs, s.FieldName())
			return
		case isIdent(op, loopVar):
			w.x.UsesLoop = true
			if s.FieldName() != "iteration" {
				w.fail(e, "loop has no field %q (want loop.iteration)", s.FieldName())
			}
			return
		}
		w.walk(op)
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() == operators.Index && len(c.Args()) == 2 {
			if id, ok := w.stepRef(c.Args()[0]); ok {
				if id != "" {
					w.x.Steps = append(w.x.Steps, id)
					if f, ok := stringLiteral(c.Args()[1]); ok {
						w.stepField(e, id, f)
					} else {
						w.fail(e, "read steps.%s.output or steps.%s.status, with the field written out", id, id)
					}
				}
				return
			}
			if isIdent(c.Args()[0], "inputs") {
				if f, ok := stringLiteral(c.Args()[1]); ok {
					w.x.Inputs = append(w.x.Inputs, f)
					return
				}
			}
		}
		if c.IsMemberFunction() {
			w.walk(c.Target())
		}
		for _, a := range c.Args() {
			w.walk(a)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		w.walk(c.IterRange())
		w.walk(c.AccuInit())
		w.walk(c.LoopCondition())
		w.walk(c.LoopStep())
		w.walk(c.Result())
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			m := en.AsMapEntry()
			w.walk(m.Key())
			w.walk(m.Value())
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value())
		}
	}
}

// Eval evaluates the expression over vars. A field the data lacks, a value
// of the wrong type, a result that is not a boolean, the cost limit or a
// bound of matches() is an *ExprError naming the expression (and the
// field, when one is missing). The end of ctx ends Eval at once, even
// within one long call, with an error wrapping ctx's cause that is not an
// *ExprError: the expression is not at fault.
func (x *Expr) Eval(ctx context.Context, vars ExprVars) (bool, error) {
	fail := func(field, msg string, err error) (bool, error) {
		return false, &ExprError{Key: x.Key, Source: x.Source, Field: field, Msg: msg, err: err}
	}
	steps := make(map[string]any, len(x.Steps))
	for _, id := range x.Steps {
		v, ok := vars.Steps[id]
		if !ok {
			return fail("steps."+id, fmt.Sprintf("step %s has no outcome to read", id), nil)
		}
		steps[id] = map[string]any{"output": celValue(v.Output), "status": v.Status}
	}
	inputs := make(map[string]any, len(vars.Inputs))
	act := map[string]any{
		"inputs": inputs,
		"steps":  steps,
		loopVar:  map[string]any{"iteration": int64(vars.Iteration)},
	}
	for k, v := range vars.Inputs {
		inputs[k] = celValue(v)
		act["inputs."+k] = inputs[k] // as inputsEnv declares it
	}
	// CEL checks ctx between the steps of a comprehension only, not
	// within one call: the evaluation runs aside, and its end or ctx's,
	// whichever comes first, ends Eval. An evaluation left running when
	// ctx ends is bounded (ExprCostLimit, MaxExprScanBytes) and its result
	// dropped.
	type result struct {
		out ref.Val
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := x.prg.ContextEval(ctx, act)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		// Not an ExprError: the expression is not at fault, and a resume
		// evaluates it again.
		return false, fmt.Errorf("%s %q: evaluation stopped: %w", x.Key, x.Source, context.Cause(ctx))
	}
	out, err := r.out, r.err
	if err != nil {
		msg := err.Error()
		if key, ok := strings.CutPrefix(msg, "no such key: "); ok {
			return fail(key, fmt.Sprintf("field %q is missing", key), err)
		}
		return fail("", msg, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return fail("", fmt.Sprintf("evaluates to %s, want a boolean", out.Type().TypeName()), nil)
	}
	return b, nil
}

// IsExprError reports whether err is an expression that could not be
// evaluated (class expression).
func IsExprError(err error) bool {
	var xe *ExprError
	return errors.As(err, &xe)
}

// celValue turns a JSON value as jsonvalue decodes it into values CEL
// knows: a number becomes an int when it is a whole number that fits,
// else a double.
func celValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && !math.IsInf(f, 0) {
			return f
		}
		return string(x)
	case jsonvalue.Object:
		return celMap(x)
	case map[string]any:
		return celMap(x)
	case jsonvalue.Array:
		return celList(x)
	case []any:
		return celList(x)
	}
	return v
}

func celMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = celValue(e)
	}
	return out
}

func celList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = celValue(e)
	}
	return out
}
