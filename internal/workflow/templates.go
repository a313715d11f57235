package workflow

import (
	"fmt"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// promptFields lists what a prompt template may reference, for messages.
const promptFields = ".Run.ID, .Step.ID, .Attempt, .HandoffPath, .SchemaPath, .Inputs.<name>, .Steps.<id>.Output, .Help.Context, .Help.Advice, in a map step .Item, or in a loop .Loop.Iteration and .Loop.Previous.<id>.Output"

// newTemplate parses a template the way it will be executed: a missing key
// is an error, never an empty string sent to an agent.
func newTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(jsonvalue.Funcs()).Parse(text)
	if err != nil {
		// "template: NAME:LINE: msg" → "bad template, line LINE: msg"
		msg := strings.TrimPrefix(err.Error(), "template: "+name+":")
		if line, rest, ok := strings.Cut(msg, ": "); ok {
			return nil, fmt.Errorf("bad template, line %s: %s", line, rest)
		}
		return nil, fmt.Errorf("bad template: %s", msg)
	}
	return t, nil
}

// refChecker checks the data references of one step's templates against
// what the run loop provides, and records the steps whose outputs they
// read. It decides by what a template can reach, walking its parse tree:
// the template's data may be read only by naming fields (.Steps.ID.Output,
// $.Inputs.x), never handed whole to a function, a variable, with or a
// template, where no walk could follow what is read of it.
type refChecker struct {
	step    string               // the step whose templates these are
	w       *Workflow            // for where a step is, in messages
	mayRead func(id string) bool // whether it may read step id (Workflow.Ancestors)
	inputs  map[string]bool      // the declared inputs
	loop    *Step                // the innermost loop the step is inside, or nil
	isMap   bool                 // a map step: .Item is its work item
	// shell is set for a command given as a shell string: it may read no
	// step's output, so that no agent output is interpreted by /bin/sh,
	// and it may print an input only quoted by shq (see shellAction).
	shell bool
	// agentData is set when a reference reads what an agent wrote: a
	// step's output, a map item or a previous iteration's outputs.
	agentData bool
	// readsInputs is set when a reference reads an input.
	readsInputs bool
	reads       []string
	errs        []string
	// shape returns what a step's output is known to be, or nil.
	shape func(id string) *shape
	// quote is, in a shell string, the quote /bin/sh is inside at the
	// point the walk has reached: 0, a single or a double quote.
	quote byte
}

// shellOnly says what a shell string may hold, for messages.
const shellOnly = "a shell string may hold only {{ .Field }} actions, {{ .Inputs.NAME | shq }} and {{ if }}; " +
	"give run: as a list, whose elements are passed to the program as they are, for anything more"

// check walks the main tree of t. A prompt's define and block bodies are
// not walked: their dot is what the template call passes, which the walk
// of the call has checked. A shell string may define no template.
func (c *refChecker) check(t *template.Template) {
	if t == nil || t.Tree == nil {
		return
	}
	if c.shell && len(t.Templates()) > 1 {
		c.errs = append(c.errs, "a shell string cannot define templates (define, block): "+shellOnly)
		return
	}
	c.node(t.Tree.Root, true)
}

// node walks n; rooted says whether dot is the template's data there (it is
// not inside the body of range and with).
func (c *refChecker) node(n parse.Node, rooted bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			c.node(x, rooted)
		}
	case *parse.TextNode:
		if c.shell {
			c.quote = shellQuoteAfter(c.quote, string(n.Text))
		}
	case *parse.ActionNode:
		if c.shell {
			c.shellAction(n)
			return
		}
		c.node(n.Pipe, rooted)
	case *parse.IfNode:
		c.branch(&n.BranchNode, rooted, rooted)
	case *parse.RangeNode:
		if c.shell {
			c.errs = append(c.errs, "a shell string cannot use range: "+shellOnly)
			return
		}
		c.branch(&n.BranchNode, rooted, false)
	case *parse.WithNode:
		if c.shell {
			c.errs = append(c.errs, "a shell string cannot use with: "+shellOnly)
			return
		}
		c.branch(&n.BranchNode, rooted, false)
	case *parse.TemplateNode:
		if c.shell {
			c.errs = append(c.errs, "a shell string cannot call a template: "+shellOnly)
			return
		}
		c.node(n.Pipe, rooted)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		if c.shell && len(n.Decl) > 0 {
			c.errs = append(c.errs, "a shell string cannot declare variables: "+shellOnly)
			return
		}
		for _, cmd := range n.Cmds {
			c.node(cmd, rooted)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			c.node(a, rooted)
		}
	case *parse.ChainNode:
		c.node(n.Node, rooted)
	case *parse.DotNode:
		if rooted {
			c.whole(".")
		}
	case *parse.FieldNode:
		if rooted {
			c.ref(n.Ident)
		}
	case *parse.VariableNode:
		switch {
		case n.Ident[0] != "$":
			if c.shell {
				c.errs = append(c.errs, "a shell string cannot use variables: "+shellOnly)
			}
		case len(n.Ident) == 1:
			c.whole("$")
		default:
			c.ref(n.Ident[1:])
		}
	}
}

// whole refuses the template's data passed on whole, by dot or $: what is
// then read of it cannot be known before the run.
func (c *refChecker) whole(name string) {
	c.errs = append(c.errs, fmt.Sprintf("a template may read its data only by field (such as .Steps.ID.Output or $.Inputs.NAME), "+
		"not pass all of it on as %s to a function, variable, with or template: name the fields it reads", name))
}

// shellAction checks an action of a shell string: what it prints is
// interpreted by /bin/sh, so an input, which whoever starts the run
// chooses, must reach it through shq, which quotes it as one word.
func (c *refChecker) shellAction(a *parse.ActionNode) {
	before := c.readsInputs
	c.readsInputs = false
	defer func() { c.readsInputs = c.readsInputs || before }()
	n := len(c.errs)
	c.node(a.Pipe, true)
	if !c.readsInputs || len(c.errs) > n || len(a.Pipe.Cmds) == 0 {
		return
	}
	last := a.Pipe.Cmds[len(a.Pipe.Cmds)-1]
	if id, ok := last.Args[0].(*parse.IdentifierNode); ok && id.Ident == "shq" {
		if c.quote != 0 {
			// Inside '…' shq's own quotes end the string's; inside "…"
			// they are plain characters and $( ) still runs.
			c.errs = append(c.errs, fmt.Sprintf("a shell string prints an input quoted by shq inside %c quotes in {{%s}}: "+
				"the quotes would undo shq's; write the action outside quotes, shq quotes the value itself", c.quote, a.Pipe.String()))
		}
		return
	}
	c.errs = append(c.errs, fmt.Sprintf("a shell string prints an input unquoted in {{%s}}: /bin/sh would run what it holds; "+
		"quote it with shq, as {{%s | shq }}", a.Pipe.String(), a.Pipe.String()))
}

func (c *refChecker) branch(b *parse.BranchNode, rooted, bodyRooted bool) {
	c.node(b.Pipe, rooted)
	before := c.quote
	c.node(b.List, bodyRooted)
	after := c.quote
	c.quote = before
	c.node(b.ElseList, rooted)
	if after == 0 { // a branch that leaves a quote open decides
		after = c.quote
	}
	c.quote = after
}

// shellQuoteAfter returns the quote /bin/sh is inside after reading text,
// starting inside quote (0, a single or a double quote): single quotes
// take everything literally up to the next one; outside them a backslash
// escapes the next character, and double quotes open and close.
func shellQuoteAfter(quote byte, text string) byte {
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			}
		case ch == '\\':
			i++
		case quote == '"':
			if ch == '"' {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		}
	}
	return quote
}

// ref checks one chain of field names read from the template's data.
func (c *refChecker) ref(chain []string) {
	bad := func() {
		c.errs = append(c.errs, fmt.Sprintf("template references unknown field .%s (want %s)", strings.Join(chain, "."), promptFields))
	}
	switch chain[0] {
	case "Steps", "Item":
		c.agentData = true
	case "Loop":
		c.agentData = c.agentData || len(chain) < 2 || chain[1] == "Previous"
	case "Inputs":
		c.readsInputs = true
	}
	switch chain[0] {
	case "Steps", "Item", "Loop":
		if c.shell {
			c.errs = append(c.errs, fmt.Sprintf("a shell string cannot read .%s: /bin/sh would interpret what an agent wrote; "+
				"give run: as a list, whose elements are passed as they are, or read $CADENCE_OUTPUTS_DIR/STEP.json", chain[0]))
			return
		}
	}
	switch chain[0] {
	case "Run", "Step":
		if len(chain) > 2 || (len(chain) == 2 && chain[1] != "ID") {
			bad()
		}
	case "Attempt", "HandoffPath", "SchemaPath":
		if len(chain) > 1 {
			bad()
		}
	case "Help":
		if len(chain) > 1 && chain[1] != "Context" && chain[1] != "Advice" {
			bad()
		}
	case "Inputs":
		if len(chain) > 1 && !c.inputs[chain[1]] {
			c.errs = append(c.errs, fmt.Sprintf("template references unknown input %q (%s)%s", chain[1], inputNames(c.inputs), didYouMean(chain[1], slices.Sorted(maps.Keys(c.inputs)))))
		}
	case "Item":
		// The item's fields are not known before the run.
		if !c.isMap {
			c.errs = append(c.errs, "template references .Item, which only a map step has (add map: to the step)")
		}
	case "Loop":
		c.loopRef(chain, bad)
	case "Steps":
		if len(chain) < 2 {
			c.errs = append(c.errs, "template reads .Steps whole: name the step it reads, as .Steps.ID.Output, so that it is known to run before this one")
			return
		}
		id := chain[1]
		if !c.readStep(id, "template references") {
			return
		}
		if len(chain) > 2 && chain[2] != "Output" {
			bad()
			return
		}
		if len(chain) > 3 {
			c.fields(id, ".Steps."+id+".Output", chain[3:])
		}
	default:
		bad()
	}
}

// fields checks the fields a template reads of step id's output against
// what the output is known to be.
func (c *refChecker) fields(id, name string, fields []string) {
	if len(fields) == 0 || c.shape == nil {
		return
	}
	if sh := c.shape(id); sh != nil {
		if msg := sh.absent(name, fields); msg != "" {
			c.errs = append(c.errs, "template reads "+msg)
		}
	}
}

// loopRef checks a reference to .Loop.
func (c *refChecker) loopRef(chain []string, bad func()) {
	if c.loop == nil {
		c.errs = append(c.errs, "template references .Loop, which only a step inside a loop has")
		return
	}
	if len(chain) < 2 {
		return
	}
	switch chain[1] {
	case "Iteration":
		if len(chain) > 2 {
			bad()
		}
	case "Previous":
		if len(chain) < 3 {
			return
		}
		if find(c.loop.Loop.Steps, chain[2]) == nil {
			c.errs = append(c.errs, fmt.Sprintf("template references .Loop.Previous.%s, which is not a step of loop %q", chain[2], c.loop.ID))
			return
		}
		if len(chain) > 3 && chain[3] != "Output" {
			bad()
			return
		}
		if len(chain) > 4 {
			c.fields(chain[2], ".Loop.Previous."+chain[2]+".Output", chain[4:])
		}
	default:
		bad()
	}
}

// readStep checks that the step may read step id's output and records
// it; what says what reads it, for messages.
func (c *refChecker) readStep(id, what string) bool {
	if c.mayRead(id) {
		if !slices.Contains(c.reads, id) {
			c.reads = append(c.reads, id)
		}
		return true
	}
	c.errs = append(c.errs, notAncestor(c.w, c.step, id, what))
	return false
}

// notAncestor says why step may not read step id.
func notAncestor(w *Workflow, step, id, what string) string {
	other := w.Find(id)
	switch {
	case other == nil:
		ids := make([]string, 0, len(w.byID))
		for s := range w.byID {
			ids = append(ids, s)
		}
		slices.Sort(ids)
		return fmt.Sprintf("%s unknown step %q%s", what, id, didYouMean(id, ids))
	case id == step:
		return fmt.Sprintf("%s step %q, its own", what, id)
	}
	for p := other.Parent; p != ""; {
		if slices.Contains(w.Ancestors(step), p) {
			return fmt.Sprintf("%s step %q, which is inside loop %q: read its last iteration's output as .Steps.%s.Output.steps.%s (steps.%s.output.steps.%s in an expression)", what, id, p, p, id, p, id)
		}
		ps := w.Find(p)
		if ps == nil {
			break
		}
		p = ps.Parent
	}
	return fmt.Sprintf("%s step %q, which does not run before step %q: it is not among the steps %s needs, directly or through others (add it to needs:)", what, id, step, step)
}

// inputNames lists the declared inputs for a message.
func inputNames(inputs map[string]bool) string {
	if len(inputs) == 0 {
		return "no inputs are declared"
	}
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	return "declared: " + alternatives(names, "and")
}
