package workflow

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// MaxIterationsLimit bounds a loop's max_iterations.
const MaxIterationsLimit = 1 << 20

// MaxParallelStepsLimit bounds max_parallel_steps: each step may be an
// agent process of hundreds of MB.
const MaxParallelStepsLimit = 256

// rawNeeds is a needs: list as written: set tells an absent key (the step
// before) from needs: [] (nothing).
type rawNeeds struct {
	ids []field[string]
	set bool
	at  at
}

// needs decodes a needs: list of step ids.
func (d *decoder) needs(e entry) rawNeeds {
	seq, ok := unwrap(e.val).(*ast.SequenceNode)
	if !ok {
		if isNull(e.val) {
			d.fail(e.keyAt(), "want a list of step ids ([] for none)")
		} else {
			d.fail(e.valAt(), "want a list of step ids ([] for none), got %s", describe(e.val))
		}
		return rawNeeds{}
	}
	r := rawNeeds{set: true, at: e.keyAt()}
	for i, item := range seq.Values {
		id := d.str(entry{val: item, path: fmt.Sprintf("%s[%d]", e.path, i)})
		if id.set {
			r.ids = append(r.ids, id)
		}
	}
	return r
}

// rawExpr is an expression as written, with what it takes to place a
// position inside it in the file.
type rawExpr struct {
	src field[string]
	// origin is where the expression's first character is in the file;
	// for a block scalar each line of it starts at origin's column.
	origin at
	block  bool
}

// expr decodes a CEL expression: a string.
func (d *decoder) expr(e entry) *rawExpr {
	src := d.str(e)
	if !src.set {
		return nil
	}
	r := &rawExpr{src: src, origin: src.at}
	switch v := unwrap(e.val).(type) {
	case *ast.StringNode:
		if t := v.GetToken(); t != nil && (t.Type == token.SingleQuoteType || t.Type == token.DoubleQuoteType) {
			r.origin.col++
		}
	case *ast.LiteralNode:
		// The text starts on the line after the | or > indicator.
		r.block = true
		if t := v.GetToken(); t != nil && t.Position != nil {
			r.origin.line = t.Position.Line + 1
		}
	}
	return r
}

// problemAt places a problem of the expression in the file (raw): at its
// line and column when it has them and the expression is on one line or a
// block, else at the expression.
func (r *rawExpr) problemAt(p exprProblem, raw []byte) at {
	a := r.src.at
	switch {
	case p.line == 0:
	case r.block:
		// CEL's columns count from the block's indentation, which is
		// that of its first line.
		lines := strings.Split(string(raw), "\n")
		if first := r.origin.line - 1; first >= 0 && first < len(lines) {
			indent := len(lines[first]) - len(strings.TrimLeft(lines[first], " "))
			a.line, a.col = r.origin.line+p.line-1, indent+1+p.col
		}
	case p.line == 1 && !strings.Contains(r.src.v, "\n"):
		a.line, a.col = r.origin.line, r.origin.col+p.col
	}
	return a
}

// rawRun is a command step's run: as written.
type rawRun struct {
	argv  field[[]string]
	text  string
	shell bool
	node  ast.Node
}

// rawLoop is a loop: mapping as written.
type rawLoop struct {
	steps              []rawStep
	stepsSet           bool
	until              *rawExpr
	maxIterations      field[int]
	session, exhausted field[string]
	at                 at
}

func (d *decoder) loopSection(e entry) *rawLoop {
	r := &rawLoop{at: e.keyAt()}
	d.fields(e.val, e.path, []string{"steps", "until", "max_iterations", "session", "on_exhausted"}, func(e entry) {
		switch e.name {
		case "steps":
			r.stepsSet = true
			seq, ok := unwrap(e.val).(*ast.SequenceNode)
			if !ok {
				d.fail(e.valAt(), "want a list of steps, got %s", describe(e.val))
				return
			}
			for i, item := range seq.Values {
				r.steps = append(r.steps, d.step(item, fmt.Sprintf("%s[%d]", e.path, i)))
			}
		case "until":
			r.until = d.expr(e)
		case "max_iterations":
			r.maxIterations = d.integer(e, 1, MaxIterationsLimit)
		case "session":
			r.session = d.enum(e, []string{SessionContinue, SessionFresh})
		case "on_exhausted":
			r.exhausted = d.enum(e, []string{OnFail, OnContinue})
		}
	})
	path := r.at.key
	if !r.maxIterations.set && !d.hasErrorAt(path+".max_iterations") {
		d.fail(r.at, "missing max_iterations (want a number of at least 1: a loop must end)")
	}
	if r.until == nil && !d.hasErrorAt(path+".until") {
		d.fail(r.at, "missing until (an expression over the inner steps that ends the loop when true)")
	}
	if len(r.steps) == 0 && !d.hasErrorAt(path+".steps") {
		d.fail(r.at, "no steps (want at least one inner step)")
	}
	return r
}

// rawApproval is an approval: mapping as written.
type rawApproval struct {
	prompt   field[string]
	onReject field[string]
	timeout  field[time.Duration]
	at       at
}

func (d *decoder) approvalSection(e entry) *rawApproval {
	r := &rawApproval{at: e.keyAt()}
	d.fields(e.val, e.path, []string{"prompt", "on_reject", "timeout"}, func(e entry) {
		switch e.name {
		case "prompt":
			r.prompt = d.nonEmpty(e)
		case "on_reject":
			r.onReject = d.enum(e, []string{OnFail, OnContinue})
		case "timeout":
			r.timeout = d.duration(e, time.Second)
		}
	})
	if !r.prompt.set && !d.hasErrorAt(r.at.key+".prompt") {
		d.fail(r.at, "missing prompt (what the person is asked)")
	}
	return r
}

// commonStepKeys are the keys every kind of step may have; kindOnlyKeys
// the others each kind but an agent step may have (an agent step may have
// every key but run, loop and approval).
var (
	commonStepKeys = []string{"id", "needs", "when", "allow_failure"}
	kindOnlyKeys   = map[string][]string{
		KindCommand:  {"run", "handoff", "retry", "timeout", "checks", "map", "sandbox", "restore_on_retry"},
		KindLoop:     {"loop"},
		KindApproval: {"approval"},
	}
)

// stepKind decides what a step runs from the keys written, reporting a
// step that says two things, and keys that do not apply to its kind.
func (l *loader) stepKind(r *rawStep) string {
	type mark struct {
		kind, key string
	}
	var marks []mark
	for _, k := range []mark{{KindAgent, "prompt"}, {KindAgent, "prompt_file"}, {KindCommand, "run"}, {KindLoop, "loop"}, {KindApproval, "approval"}} {
		if _, ok := r.keys.find(k.key); ok {
			marks = append(marks, k)
		}
	}
	if len(marks) == 0 {
		return KindAgent
	}
	kind := marks[0].kind
	for _, m := range marks[1:] {
		if m.kind != kind {
			a, _ := r.keys.find(m.key)
			l.fail(a, "a step has one of prompt (or prompt_file), run, loop or approval, and this one already has %s", marks[0].key)
			return kind
		}
	}
	if kind == KindAgent {
		return kind
	}
	for _, k := range r.keys {
		key, a := k.name, k.at
		if slices.Contains(commonStepKeys, key) || slices.Contains(kindOnlyKeys[kind], key) {
			continue
		}
		if _, has := r.keys.find("run"); has && key == "agent" {
			l.fail(a, "a command step runs no agent (remove agent:, or run: to make it an agent step)")
			continue
		}
		l.fail(a, "%s does not apply to %s step (it has %s; want %s)", key, article(kind), kindKey(kind), alternatives(append(append([]string{}, commonStepKeys...), kindOnlyKeys[kind]...), "or"))
	}
	return kind
}

func kindKey(kind string) string {
	switch kind {
	case KindCommand:
		return "run:"
	case KindLoop:
		return "loop:"
	case KindApproval:
		return "approval:"
	}
	return "prompt:"
}

// buildCommand checks a command step's run: and parses its templates.
// Which data they may read is checked with the other templates.
func (l *loader) buildCommand(s *Step, r *rawStep) {
	_, handoff := r.keys.find("handoff")
	c := &Command{Argv: r.run.argv.v, Text: r.run.text, Shell: r.run.shell, Handoff: handoff}
	s.Run = c
	if c.Shell {
		return
	}
	l.w.programs = append(l.w.programs, programRef{what: "step " + s.ID, prog: c.Argv[0], at: r.run.argv.at})
}

// buildLoop applies the defaults to a loop: mapping; its inner steps are
// built by the caller.
func (l *loader) buildLoop(r *rawLoop) *Loop {
	return &Loop{
		MaxIterations: r.maxIterations.get(1),
		Session:       r.session.get(SessionContinue),
		OnExhausted:   r.exhausted.get(OnFail),
	}
}

// buildApproval applies the defaults to an approval: mapping; its prompt
// is parsed with the other templates.
func (l *loader) buildApproval(r *rawApproval) *Approval {
	return &Approval{Prompt: r.prompt.v, OnReject: r.onReject.get(OnFail), Timeout: r.timeout.get(0)}
}

// article puts "a" or "an" before a kind of step.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
