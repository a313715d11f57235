package workflow

// CheckRunnable names each construct of the workflow that this version of
// the run loop does not act on yet: loops and approval gates (SPEC 16.5,
// 16.6, at their lines), and notify targets (SPEC 17). The run loop refuses
// such a workflow before anything is written, rather than run it as if
// they were not there.
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
	var keys []string
	if len(w.Notify) > 0 {
		keys = append(keys, "notify")
	}
	for _, k := range keys {
		errs = append(errs, &Error{File: w.Path, Line: 1, Column: 1, Key: k,
			Msg: "this version of cadence does not act on it yet (notifications come with SPEC section 17)"})
	}
	if len(errs) > 0 {
		return errs.tidy()
	}
	return nil
}
