package workflow

// CheckRunnable names, at its line, each construct of the workflow that
// this version of the run loop does not execute yet: loops and approval
// gates (SPEC 16.5, 16.6). The run loop refuses such a workflow before
// anything is written, rather than run it wrongly.
func CheckRunnable(w *Workflow) error {
	var errs Errors
	fail := func(a at, what string) {
		errs = append(errs, &Error{File: w.Path, Line: a.line, Column: a.col, Key: a.key,
			Msg: what + ": this version of cadence does not run loops and approval gates yet"})
	}
	for _, s := range w.Steps {
		switch s.Kind {
		case KindLoop:
			fail(s.at, "step "+s.ID+" is a loop")
		case KindApproval:
			fail(s.at, "step "+s.ID+" is an approval gate")
		}
	}
	if len(errs) > 0 {
		return errs.tidy()
	}
	return nil
}
