package workflow

import (
	"container/heap"
	"slices"
	"strings"
)

// buildGraph resolves every step's needs among its siblings and reports
// unknown names and cycles (SPEC 16.3).
func (l *loader) buildGraph() {
	levels := map[string][]builtStep{} // parent id → its steps, in order
	var parents []string
	for _, b := range l.built {
		if _, ok := levels[b.s.Parent]; !ok {
			parents = append(parents, b.s.Parent)
		}
		levels[b.s.Parent] = append(levels[b.s.Parent], b)
	}
	for _, p := range parents {
		l.levelNeeds(levels[p])
		l.levelCycles(levels[p])
	}
}

// levelNeeds resolves the needs of one list of siblings.
func (l *loader) levelNeeds(level []builtStep) {
	index := map[string]int{}
	for i, b := range level {
		if b.s.ID != "" {
			if _, dup := index[b.s.ID]; !dup {
				index[b.s.ID] = i
			}
		}
	}
	for i, b := range level {
		n := b.r.needs
		if !n.set {
			if i > 0 && level[i-1].s.ID != "" {
				b.s.Needs = []string{level[i-1].s.ID}
			}
			continue
		}
		b.s.needsWritten = true
		needs := []string{}
		for _, id := range n.ids {
			_, ok := index[id.v]
			switch {
			case id.v == b.s.ID:
				l.fail(id.at, "step %q cannot need itself", id.v)
			case !ok:
				l.fail(id.at, "%s", l.unknownNeed(b.s, id.v, level))
			case slices.Contains(needs, id.v):
				l.fail(id.at, "step %q is listed twice", id.v)
			default:
				needs = append(needs, id.v)
			}
		}
		slices.SortFunc(needs, func(a, c string) int { return index[a] - index[c] })
		b.s.Needs = needs
	}
}

// unknownNeed says why id cannot be needed by s: it is not a sibling.
func (l *loader) unknownNeed(s *Step, id string, level []builtStep) string {
	var other *Step
	for _, b := range l.built {
		if b.s.ID == id {
			other = b.s
			break
		}
	}
	switch {
	case other == nil:
		names := make([]string, 0, len(level))
		for _, b := range level {
			if b.s.ID != "" && b.s.ID != s.ID {
				names = append(names, b.s.ID)
			}
		}
		if len(names) == 0 {
			return "needs unknown step \"" + id + "\""
		}
		return "needs unknown step \"" + id + "\" (steps beside it: " + alternatives(names, "and") + ")"
	case other.Parent != "" && other.Parent != s.Parent:
		return "needs step \"" + id + "\", which is inside loop \"" + other.Parent + "\": need the loop instead and read .Steps." + other.Parent + ".Output.steps." + id
	default:
		where := "at the top of the workflow"
		if other.Parent != "" {
			where = "in loop \"" + other.Parent + "\""
		}
		return "needs step \"" + id + "\", which is not beside it (it is " + where + "): an inner step needs its siblings only; what the loop needs, every inner step can read"
	}
}

// levelCycles reports each cycle among the needs of one list of siblings
// once, spelled out (a -> b -> a: a needs b, which needs a), at the needs
// entry that closes it in the step written first.
func (l *loader) levelCycles(level []builtStep) {
	byID := map[string]builtStep{}
	for _, b := range level {
		if b.s.ID != "" {
			if _, dup := byID[b.s.ID]; !dup {
				byID[b.s.ID] = b
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, n := range byID[id].s.Needs {
			switch color[n] {
			case white:
				visit(n)
			case grey:
				i := slices.Index(stack, n)
				cycle := append(slices.Clone(stack[i:]), n)
				// Start the cycle at the step written first.
				first := 0
				for k, c := range cycle[:len(cycle)-1] {
					if byID[c].s.Index < byID[cycle[first]].s.Index {
						first = k
					}
				}
				ring := append(slices.Clone(cycle[first:len(cycle)-1]), cycle[:first]...)
				ring = append(ring, ring[0])
				from := byID[ring[0]]
				a := from.r.needs.at
				for _, f := range from.r.needs.ids {
					if f.v == ring[1] {
						a = f.at
					}
				}
				l.fail(a, "needs form a cycle: %s (each step needs the next)", strings.Join(ring, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for _, b := range level {
		if b.s.ID != "" && color[b.s.ID] == white {
			visit(b.s.ID)
		}
	}
}

// siblings returns the list s is in: the workflow's steps, or its loop's.
func (w *Workflow) siblings(s *Step) []*Step {
	if s.Parent == "" {
		return w.Steps
	}
	if p := w.Find(s.Parent); p != nil && p.Loop != nil {
		return p.Loop.Steps
	}
	return nil
}

// Ancestors returns the ids of the steps that are done before the step id
// starts, in file order: those it needs, directly or through others, and,
// for an inner step of a loop, the loop's own ancestors (and so on up).
// The loops it is inside are not among them: they are still running.
// A template or expression of the step may read exactly these.
func (w *Workflow) Ancestors(id string) []string {
	set := map[string]bool{}
	w.EachAncestor(id, func(a string) { set[a] = true })
	var out []string
	for _, s := range w.All() {
		if set[s.ID] {
			out = append(out, s.ID)
		}
	}
	return out
}

// EachAncestor calls fn once with each id Ancestors(id) returns, in no
// particular order, without building the list or listing every step of
// the workflow to order it: the run asks it of every step it starts, and
// in a chain each step has all the steps before it as ancestors.
func (w *Workflow) EachAncestor(id string, fn func(string)) {
	s := w.Find(id)
	if s == nil {
		return
	}
	if s.Parent == "" {
		w.eachNeeded(s, fn)
		return
	}
	walked := map[string]bool{} // a need's id → its needs were walked
	var walk func(*Step)
	walk = func(s *Step) {
		for _, n := range s.Needs {
			ns := w.Find(n)
			if ns == nil {
				continue // Load refuses a need that names no step
			}
			done, seen := walked[n]
			if !seen {
				walked[n] = false
				fn(n)
			}
			// Needs name siblings: a step of the same list (Load refuses
			// others). Each step's needs are walked once.
			if !done && ns.Parent == s.Parent {
				walked[n] = true
				walk(ns)
			}
		}
	}
	for ; s != nil; s = w.Find(s.Parent) {
		walk(s)
		if s.Parent == "" {
			break
		}
	}
}

// eachNeeded is EachAncestor of a step of the top level: fn once with
// each step s needs, directly or through others. A step is marked by its
// place in the list, not in a map: the run asks this of every step it
// starts, and in a chain of n steps a map per call allocated n² entries.
func (w *Workflow) eachNeeded(s *Step, fn func(string)) {
	sib := w.siblings(s)
	seen := make([]bool, len(sib))
	var other map[*Step]bool // a step not where its Index says (built by hand)
	mark := func(ns *Step) bool {
		if ns.Index >= 0 && ns.Index < len(sib) && sib[ns.Index] == ns {
			was := seen[ns.Index]
			seen[ns.Index] = true
			return was
		}
		if other == nil {
			other = map[*Step]bool{}
		}
		was := other[ns]
		other[ns] = true
		return was
	}
	stack := []*Step{s}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, n := range cur.Needs {
			ns := w.Find(n)
			if ns == nil || mark(ns) {
				continue // Load refuses a need that names no step
			}
			fn(n)
			if ns.Parent == s.Parent {
				stack = append(stack, ns)
			}
		}
	}
}

// Dependents returns the ids of the steps that need the step id directly,
// among its siblings, in file order.
func (w *Workflow) Dependents(id string) []string {
	s := w.Find(id)
	if s == nil {
		return nil
	}
	var out []string
	for _, o := range w.siblings(s) {
		if slices.Contains(o.Needs, id) {
			out = append(out, o.ID)
		}
	}
	return out
}

// Order returns the workflow's top-level steps in an order that runs each
// after what it needs: of the steps whose needs are done, the one written
// first comes first. The same workflow always gives the same order.
func (w *Workflow) Order() []*Step { return topoOrder(w.Steps) }

// Order returns the loop's inner steps in dependency order, as
// Workflow.Order does for the top level.
func (l *Loop) Order() []*Step { return topoOrder(l.Steps) }

// topoOrder sorts a list of siblings so that each comes after its needs,
// ties broken by file order. A list with a cycle (which Load refuses)
// gives the steps outside it only.
func topoOrder(steps []*Step) []*Step {
	// Kahn's algorithm with the ready steps in a heap by file position:
	// linear but for the heap, where restarting from the first step after
	// each pick made a chain of n steps cost n²/2 visits.
	waiting := make([]int, len(steps)) // distinct needs not done yet
	waiters := map[string][]int{}      // id → the steps that need it
	ready := &positions{}
	for i, s := range steps {
		seen := make(map[string]bool, len(s.Needs))
		for _, n := range s.Needs {
			if !seen[n] {
				seen[n] = true
				waiting[i]++
				waiters[n] = append(waiters[n], i)
			}
		}
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	done := map[string]bool{}
	out := make([]*Step, 0, len(steps))
	for ready.Len() > 0 {
		s := steps[heap.Pop(ready).(int)]
		if done[s.ID] {
			continue // a second step of the same id (which Load refuses) never runs
		}
		done[s.ID] = true
		out = append(out, s)
		for _, w := range waiters[s.ID] {
			if waiting[w]--; waiting[w] == 0 {
				heap.Push(ready, w)
			}
		}
	}
	return out
}

// positions is a min-heap of positions in a list of steps.
type positions []int

func (p positions) Len() int           { return len(p) }
func (p positions) Less(i, j int) bool { return p[i] < p[j] }
func (p positions) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *positions) Push(x any)        { *p = append(*p, x.(int)) }
func (p *positions) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

func find(steps []*Step, id string) *Step {
	for _, s := range steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}
