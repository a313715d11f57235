package workflow

import "slices"

// ancestry answers whether a step may read another's output, that is
// whether the other is among its ancestors (Workflow.Ancestors), without
// building every step's set of ancestors: for a chain of n steps those
// sets hold n²/2 ids, which made loading a 10,000-step chain take tens of
// seconds. Each answer is found by a walk of needs that stops at the first
// path to the step asked about, and what a walk learns is kept per asked
// step, so steps that read the same step share one walk.
type ancestry struct {
	w *Workflow
	// reach[id][x] says whether id is among the needs of x, directly or
	// through those of x's siblings; inProgress while x's walk is open.
	reach map[string]map[*Step]reach
	// exact is set once a walk meets a cycle among needs: an answer kept
	// while the cycle was open may be wrong, so from then on every answer
	// comes from Workflow.Ancestors. A cycle is an error of the file.
	exact bool
}

// reach is what is known of one step's needs reaching the step asked about.
type reach uint8

const (
	unknown reach = iota
	inProgress
	reaches
	unreached
)

// newAncestry answers for w, whose steps and needs are all built.
func newAncestry(w *Workflow) *ancestry {
	return &ancestry{w: w, reach: map[string]map[*Step]reach{}}
}

// of reports whether id is an ancestor of s: a step s needs, directly or
// through others, or one of those of a loop s is inside (and so on up).
func (a *ancestry) of(s *Step, id string) bool {
	if s.ID == "" || a.w.Find(id) == nil {
		return false
	}
	if !a.exact {
		found := false
		for x := a.w.Find(s.ID); x != nil && !found; {
			found = a.needs(x, id)
			if x.Parent == "" {
				break
			}
			x = a.w.Find(x.Parent)
		}
		if !a.exact {
			return found
		}
	}
	return slices.Contains(a.w.Ancestors(s.ID), id)
}

// needs reports whether id is among x's needs or, for those that are x's
// siblings, among theirs, and so on.
func (a *ancestry) needs(x *Step, id string) bool {
	memo := a.reach[id]
	if memo == nil {
		memo = map[*Step]reach{}
		a.reach[id] = memo
	}
	switch memo[x] {
	case reaches:
		return true
	case unreached:
		return false
	case inProgress:
		a.exact = true
		return false
	}
	if slices.Contains(x.Needs, id) {
		memo[x] = reaches
		return true
	}
	memo[x] = inProgress
	for _, n := range x.Needs {
		if ns := a.w.Find(n); ns != nil && ns.Parent == x.Parent && a.needs(ns, id) {
			memo[x] = reaches
			return true
		}
	}
	memo[x] = unreached
	return false
}
