package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/goccy/go-yaml/ast"
)

// checkRefs parses a step's templates and expressions and checks what
// they read against the graph: a step may read the outputs of its
// ancestors only (SPEC 16.3), a loop's until the inner steps of its loop
// as well. It builds the step's map: last, whose items are read too.
func (l *loader) checkRefs(b builtStep) {
	s, r := b.s, b.r
	c := l.refChecker(s, r.mapping != nil)
	switch s.Kind {
	case KindAgent:
		src := r.prompt
		if r.promptFile.set {
			src = r.promptFile
		}
		if src.set && !(r.prompt.set && r.promptFile.set) {
			l.template(c, src, s.Prompt, func(t *template.Template) { s.Template = t })
		}
		if r.onHelp != nil && r.onHelp.prompt.set {
			l.template(c, r.onHelp.prompt, r.onHelp.prompt.v, func(t *template.Template) { s.OnHelp.Template = t })
		}
	case KindCommand:
		if s.Run != nil {
			l.commandTemplates(c, s, r.run, b.path+".run")
		}
	case KindApproval:
		if s.Approval != nil && r.approval.prompt.set {
			l.template(c, r.approval.prompt, s.Approval.Prompt, func(t *template.Template) { s.Approval.Template = t })
		}
	case KindLoop:
		if s.Loop != nil && r.loop.until != nil {
			inner := map[string]bool{}
			for _, in := range s.Loop.Steps {
				inner[in.ID] = true
			}
			allowed := func(id string) bool { return inner[id] || c.mayRead(id) }
			s.Loop.Until = l.expression(c, r.loop.until, b.path+".loop.until", allowed, true)
		}
	}
	if r.when != nil {
		s.When = l.expression(c, r.when, b.path+".when", c.mayRead, s.Parent != "")
	}
	if r.mapping != nil && (s.Kind == KindAgent || s.Kind == KindCommand) {
		s.Map = l.buildMap(r.mapping, s, c)
	}
	s.Reads = c.reads
}

// refChecker returns a checker of s's references.
func (l *loader) refChecker(s *Step, isMap bool) *refChecker {
	mayRead := func(id string) bool { return l.ancestry.of(s, id) }
	c := &refChecker{step: s.ID, w: l.w, mayRead: mayRead, inputs: map[string]bool{}, isMap: isMap, shape: l.outputShape}
	for _, in := range l.w.Inputs {
		c.inputs[in.Name] = true
	}
	if s.Parent != "" {
		if p := l.w.Find(s.Parent); p != nil && p.Loop != nil {
			c.loop = p
		}
	}
	return c
}

// commandTemplates parses a command step's templates: each element of the
// list form, of which the first, the program, may not come from agent
// output, or the shell string, which may read no agent output at all.
func (l *loader) commandTemplates(c *refChecker, s *Step, r *rawRun, path string) {
	if r.shell {
		c.shell = true
		defer func() { c.shell = false }()
		l.template(c, field[string]{v: s.Run.Text, set: true, at: r.argv.at}, s.Run.Text, func(t *template.Template) {
			s.Run.Templates = []*template.Template{t}
		})
		return
	}
	seq, _ := unwrap(r.node).(*ast.SequenceNode)
	s.Run.Templates = make([]*template.Template, len(s.Run.Argv))
	for i, word := range s.Run.Argv {
		a := r.argv.at
		if seq != nil && i < len(seq.Values) {
			a = where(seq.Values[i], fmt.Sprintf("%s[%d]", path, i))
		}
		c.agentData = false
		l.template(c, field[string]{v: word, set: true, at: a}, word, func(t *template.Template) { s.Run.Templates[i] = t })
		if i == 0 && c.agentData {
			l.fail(a, "the program to run is chosen by what an agent wrote (.Steps, .Item or .Loop.Previous): "+
				"name the program in the workflow, and pass what the agent wrote as an argument")
		}
	}
}

// expression compiles a when: or until: and checks the steps and inputs
// it reads; allowed are the steps it may read, inLoop whether
// loop.iteration is defined where it is evaluated.
func (l *loader) expression(c *refChecker, r *rawExpr, key string, allowed func(id string) bool, inLoop bool) *Expr {
	if l.env == nil {
		env, err := inputsEnv(l.w.Inputs)
		if err != nil {
			l.fail(r.src.at, "expression environment: %v", err)
			return nil
		}
		l.env = env
	}
	x, problems := compileExprIn(l.env, r.src.v, key)
	for _, p := range problems {
		l.fail(r.problemAt(p, l.w.Raw), "%s", p.msg)
	}
	if x == nil {
		return nil
	}
	good := true
	for _, id := range x.Steps {
		if allowed(id) {
			if c.mayRead(id) { // not a loop's own inner step, read by its until
				c.reads = appendNew(c.reads, id)
			}
			continue
		}
		l.fail(r.src.at, "%s", notAncestor(l.w, c.step, id, "expression reads"))
		good = false
	}
	for _, in := range x.Inputs {
		if !c.inputs[in] {
			l.fail(r.src.at, "expression reads unknown input %q (%s)%s", in, inputNames(c.inputs), didYouMean(in, slices.Sorted(maps.Keys(c.inputs))))
			good = false
		}
	}
	for _, p := range x.Outputs {
		if !allowed(p[0]) {
			continue
		}
		sh := l.outputShape(p[0])
		if sh == nil {
			continue
		}
		if msg := sh.absent("steps."+p[0]+".output", p[1:]); msg != "" {
			l.fail(r.src.at, "expression reads %s", msg)
			good = false
		}
	}
	if good && x.root != nil {
		if sh := l.outputShape(x.root[0]); sh != nil {
			if t := sh.typeAt(x.root[1:]); t != "" && t != "boolean" {
				l.fail(r.src.at, "expression is of type %s (steps.%s.output.%s, in %s), want bool", t, x.root[0], strings.Join(x.root[1:], "."), sh.from)
				good = false
			}
		}
	}
	if x.UsesLoop && !inLoop {
		l.fail(r.src.at, "expression reads loop, which is defined only inside a loop and in its until")
		good = false
	}
	if !good {
		return nil
	}
	return x
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
