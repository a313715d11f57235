package workflow

import "slices"

// SilentSkip is a step that would be skipped by the skip of a step before
// it, and pass a person's approval by: an approval gate (or a loop that
// holds one), or a step after one. A step that needs a skipped step is
// skipped too, unless it has a when of its own (SPEC §16.4), so a gate
// that needs a step with a false when is never asked, and the run
// succeeds without it: cadence check warns of it.
type SilentSkip struct {
	Step *Step
	// Because are the steps with a when whose skip skips it, each
	// reached through steps without a when of their own.
	Because []string
	// Gates are the gates it comes after (by needs, among its
	// siblings); none when the step is a gate itself.
	Gates        []string
	Line, Column int
	Key          string
}

// SilentSkips lists, in file order, the gates (and the loops holding
// one) and the steps after a gate that the skip of a step with a when
// before them would skip, though they have no when of their own.
func (w *Workflow) SilentSkips() []SilentSkip {
	var out []SilentSkip
	var walk func(steps []*Step)
	walk = func(steps []*Step) {
		because := map[string][]string{} // step → the steps with a when whose skip reaches it
		gates := map[string][]string{}   // step → the gates before it
		for _, s := range topoOrder(steps) {
			for _, id := range s.Needs {
				n := w.Find(id)
				if n == nil {
					continue
				}
				switch {
				case n.When != nil && holdsGate(n):
					// A gate's own when decides: skipping it, and the
					// steps after it, is what the workflow says.
				case n.When != nil:
					because[s.ID] = appendNew(because[s.ID], n.ID)
				default:
					for _, b := range because[n.ID] {
						because[s.ID] = appendNew(because[s.ID], b)
					}
				}
				if holdsGate(n) {
					gates[s.ID] = appendNew(gates[s.ID], n.ID)
				}
				for _, g := range gates[n.ID] {
					gates[s.ID] = appendNew(gates[s.ID], g)
				}
			}
			if s.When != nil {
				because[s.ID] = nil // its own when decides
			}
		}
		for _, s := range steps {
			if len(because[s.ID]) > 0 && (holdsGate(s) || len(gates[s.ID]) > 0) {
				sk := SilentSkip{Step: s, Because: because[s.ID], Line: s.at.line, Column: s.at.col, Key: s.at.key}
				if !holdsGate(s) {
					sk.Gates = gates[s.ID]
				}
				out = append(out, sk)
			}
			if s.Loop != nil {
				walk(s.Loop.Steps)
			}
		}
	}
	walk(w.Steps)
	return out
}

// holdsGate reports whether s is an approval gate, or a loop with one
// among its inner steps (at any depth).
func holdsGate(s *Step) bool {
	return s.Approval != nil || s.Loop != nil && s.Loop.HoldsGate()
}

// HoldsGate reports whether an approval gate is among the loop's inner
// steps, at any depth.
func (l *Loop) HoldsGate() bool { return slices.ContainsFunc(l.Steps, holdsGate) }
