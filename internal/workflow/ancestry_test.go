package workflow

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomGraph builds a workflow of up to 12 top-level steps, some of them
// loops of up to 4 inner steps, whose needs are drawn at random: forward,
// backward, onto itself, across levels, onto ids that do not exist, with
// duplicate ids now and then. Load refuses most of these; the walks of the
// graph must still agree with their reference whatever they are handed.
func randomGraph(r *rand.Rand) *Workflow {
	w := &Workflow{}
	var ids []string
	level := func(parent string, n int) []*Step {
		var out []*Step
		for i := range n {
			id := fmt.Sprintf("%s%d", parent, i)
			if parent == "" {
				id = fmt.Sprintf("s%d", i)
			}
			if len(ids) > 0 && r.IntN(12) == 0 {
				id = ids[r.IntN(len(ids))] // a duplicate id
			}
			ids = append(ids, id)
			out = append(out, &Step{ID: id, Index: i, Parent: parent})
		}
		return out
	}
	w.Steps = level("", 1+r.IntN(12))
	for _, s := range w.Steps {
		if r.IntN(4) == 0 {
			s.Kind = KindLoop
			s.Loop = &Loop{Steps: level(s.ID+"x", 1+r.IntN(4))}
			for _, in := range s.Loop.Steps {
				in.Parent = s.ID
			}
		}
	}
	w.byID = map[string]*Step{}
	for _, s := range w.All() {
		if _, dup := w.byID[s.ID]; !dup {
			w.byID[s.ID] = s
		}
	}
	all := w.All()
	for _, s := range all {
		for range r.IntN(4) {
			switch k := r.IntN(10); {
			case k == 0:
				s.Needs = append(s.Needs, "nowhere")
			case k == 1:
				s.Needs = append(s.Needs, ids[r.IntN(len(ids))]) // any level
			default:
				sib := w.siblings(s)
				if len(sib) == 0 { // its loop's id is another step's too
					sib = all
				}
				s.Needs = append(s.Needs, sib[r.IntN(len(sib))].ID)
			}
		}
	}
	return w
}

// TestAncestryAgreesWithAncestors asks the loader's walk, for every pair
// of steps of many random graphs (and ids that name no step), whether one
// may read the other, in several orders of asking since the walk keeps
// what it learns; the reference is Workflow.Ancestors.
func TestAncestryAgreesWithAncestors(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 1))
	for g := range 1000 {
		w := randomGraph(r)
		all := w.All()
		ids := []string{"nowhere", ""}
		for _, s := range all {
			ids = append(ids, s.ID)
		}
		type pair struct {
			s  *Step
			id string
		}
		var pairs []pair
		for _, s := range all {
			for _, id := range ids {
				pairs = append(pairs, pair{s, id})
			}
		}
		r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		a := newAncestry(w)
		for _, p := range pairs {
			want := slices.Contains(w.Ancestors(p.s.ID), p.id)
			if got := a.of(p.s, p.id); got != want {
				t.Fatalf("graph %d:%s\nancestry of %s (parent %q) has %q: %v, Ancestors says %v", g, spellGraph(w), p.s.ID, p.s.Parent, p.id, got, want)
			}
		}
	}
}

// spellGraph spells a random graph out for a failure's message.
func spellGraph(w *Workflow) string {
	var out string
	for _, s := range w.All() {
		out += fmt.Sprintf("\n  %s (in %q) needs %v", s.ID, s.Parent, s.Needs)
	}
	return out
}

// topoOrderByRestart is topoOrder as it was written first: after each
// pick, scan again from the first step for the earliest ready one. It is
// quadratic, and obviously what Order's doc comment says.
func topoOrderByRestart(steps []*Step) []*Step {
	done := map[string]bool{}
	out := make([]*Step, 0, len(steps))
	for len(out) < len(steps) {
		progress := false
		for _, s := range steps {
			if done[s.ID] {
				continue
			}
			ready := true
			for _, n := range s.Needs {
				if !done[n] {
					ready = false
					break
				}
			}
			if ready {
				done[s.ID] = true
				out = append(out, s)
				progress = true
				break
			}
		}
		if !progress {
			break
		}
	}
	return out
}

// TestTopoOrderAgreesWithRestart orders the levels of many random graphs
// (cycles, unknown needs and duplicate ids included) both ways.
func TestTopoOrderAgreesWithRestart(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 2))
	for g := range 1000 {
		w := randomGraph(r)
		levels := [][]*Step{w.Steps}
		for _, s := range w.Steps {
			if s.Loop != nil {
				levels = append(levels, s.Loop.Steps)
			}
		}
		for _, level := range levels {
			got, want := topoOrder(level), topoOrderByRestart(level)
			if !slices.Equal(got, want) {
				t.Fatalf("graph %d:%s\norder %v, want %v", g, spellGraph(w), stepIDs(got), stepIDs(want))
			}
		}
	}
}

// stepIDs lists the ids of steps, for messages.
func stepIDs(steps []*Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.ID)
	}
	return out
}

// TestEachAncestorOnce holds EachAncestor, which the run asks of every
// step it starts, to the loader's walk on many random graphs: it yields
// each id the walk says the step may read, once, and no other.
func TestEachAncestorOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(34, 2))
	for g := range 1000 {
		w := randomGraph(r)
		all := w.All()
		a := newAncestry(w)
		for _, s := range all {
			got := map[string]int{}
			w.EachAncestor(s.ID, func(id string) { got[id]++ })
			for id, n := range got {
				if n != 1 {
					t.Fatalf("graph %d:%s\nEachAncestor(%s) yielded %q %d times", g, spellGraph(w), s.ID, id, n)
				}
			}
			// Random graphs may give two steps one id: each id is asked once.
			asked := map[string]bool{}
			for _, o := range all {
				if asked[o.ID] {
					continue
				}
				asked[o.ID] = true
				if want := a.of(s, o.ID); want != (got[o.ID] == 1) {
					t.Fatalf("graph %d:%s\nEachAncestor(%s) yielded %q: %v, the loader's walk says %v", g, spellGraph(w), s.ID, o.ID, got[o.ID] == 1, want)
				}
				delete(got, o.ID)
			}
			if len(got) > 0 {
				t.Fatalf("graph %d:%s\nEachAncestor(%s) yielded ids of no step: %v", g, spellGraph(w), s.ID, got)
			}
		}
	}
}
