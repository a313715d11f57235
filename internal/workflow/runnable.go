package workflow

import "sort"

// CheckRunnable names each construct of the workflow that this version of
// the run loop does not act on yet: an agent's fallback and a step's
// fallback_after (SPEC 17). The run loop refuses
// such a workflow before anything is written, rather than run it as if
// they were not there.
func CheckRunnable(w *Workflow) error {
	var errs Errors
	var keys []string
	for _, name := range sortedNames(w.Agents) {
		a := w.Agents[name]
		if len(a.Fallback) > 0 {
			keys = append(keys, "agents."+name+".fallback")
		}
	}
	for _, s := range w.Steps {
		if s.FallbackAfter > 0 {
			keys = append(keys, "steps["+s.ID+"].fallback_after")
		}
	}
	for _, k := range keys {
		errs = append(errs, &Error{File: w.Path, Line: 1, Column: 1, Key: k,
			Msg: "this version of cadence does not act on it yet (fallbacks and notifications come with SPEC section 17)"})
	}
	if len(errs) > 0 {
		return errs.tidy()
	}
	return nil
}

func sortedNames(m map[string]*Agent) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
