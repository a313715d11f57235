package workflow

import (
	"fmt"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// promptFields lists what a prompt template may reference, for messages.
const promptFields = ".Run.ID, .Step.ID, .Attempt, .HandoffPath, .SchemaPath, .Steps.<id>.Output, .Help.Context, .Help.Advice or, in a map step, .Item"

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
// what the run loop provides, and records the earlier steps they read.
type refChecker struct {
	step  string         // the step whose templates these are
	order map[string]int // step id → index
	index int            // the step's own index
	isMap bool           // a map step: .Item is its work item
	needs []string
	errs  []string
}

// check walks the main tree of t. The bodies of define and block are
// skipped: their dot is whatever the caller passes.
func (c *refChecker) check(t *template.Template) {
	if t == nil || t.Tree == nil {
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
	case *parse.ActionNode:
		c.node(n.Pipe, rooted)
	case *parse.IfNode:
		c.branch(&n.BranchNode, rooted, rooted)
	case *parse.RangeNode:
		c.branch(&n.BranchNode, rooted, false)
	case *parse.WithNode:
		c.branch(&n.BranchNode, rooted, false)
	case *parse.TemplateNode:
		c.node(n.Pipe, rooted)
	case *parse.PipeNode:
		if n == nil {
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
	case *parse.FieldNode:
		if rooted {
			c.ref(n.Ident)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			c.ref(n.Ident[1:])
		}
	}
}

func (c *refChecker) branch(b *parse.BranchNode, rooted, bodyRooted bool) {
	c.node(b.Pipe, rooted)
	c.node(b.List, bodyRooted)
	c.node(b.ElseList, rooted)
}

// ref checks one chain of field names read from the template's data.
func (c *refChecker) ref(chain []string) {
	bad := func() {
		c.errs = append(c.errs, fmt.Sprintf("template references unknown field .%s (want %s)", strings.Join(chain, "."), promptFields))
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
	case "Item":
		// The item's fields are not known before the run.
		if !c.isMap {
			c.errs = append(c.errs, "template references .Item, which only a map step has (add map: to the step)")
		}
	case "Steps":
		if len(chain) < 2 {
			return
		}
		id := chain[1]
		i, known := c.order[id]
		switch {
		case !known:
			c.errs = append(c.errs, fmt.Sprintf("template references unknown step %q", id))
			return
		case i >= c.index:
			c.errs = append(c.errs, fmt.Sprintf("template references step %q, which does not run before step %q", id, c.step))
			return
		}
		if len(chain) > 2 && chain[2] != "Output" {
			bad()
			return
		}
		if !slices.Contains(c.needs, id) {
			c.needs = append(c.needs, id)
		}
	default:
		bad()
	}
}
