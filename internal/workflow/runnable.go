package workflow

// CheckSequential reports every construct of SPEC section 16 in w that a
// run loop executing agent steps one after another, in file order, cannot
// carry out as the workflow means it: a command step, a loop, an approval
// gate, a when:, allow_failure:, an input, and a needs: that file order does
// not satisfy. Such a loop calls it before a run starts, so that a workflow
// it would run wrongly (or not at all) ends the command with the lines
// that hold what it cannot do, and nothing runs.
func CheckSequential(w *Workflow) error {
	var errs Errors
	fail := func(a at, what string) {
		errs = append(errs, &Error{File: w.Path, Line: a.line, Column: a.col, Key: a.key,
			Msg: what + ": this version of cadence runs agent steps only, one after another in file order"})
	}
	for _, in := range w.Inputs {
		fail(in.at, "input "+in.Name)
	}
	index := map[string]int{}
	for i, s := range w.Steps {
		index[s.ID] = i
		switch s.Kind {
		case KindCommand:
			fail(s.at, "step "+s.ID+" is a command step (run:)")
		case KindLoop:
			fail(s.at, "step "+s.ID+" is a loop")
		case KindApproval:
			fail(s.at, "step "+s.ID+" is an approval gate")
		}
		if s.When != nil {
			fail(s.at, "step "+s.ID+" has a condition (when)")
		}
		if s.AllowFailure {
			fail(s.at, "step "+s.ID+" may fail (allow_failure)")
		}
		for _, n := range s.Needs {
			if j, ok := index[n]; !ok || j >= i {
				fail(s.at, "step "+s.ID+" needs "+n+", written after it")
			}
		}
	}
	if len(errs) > 0 {
		return errs.tidy()
	}
	return nil
}
