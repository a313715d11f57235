package main

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type resumeCmd struct {
	Dir          string        `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	Workflow     string        `help:"Workflow file whose unfinished run to continue (default: the file the run was started from; with several unfinished runs, name one with this or --run)." type:"path"`
	RunID        string        `name:"run" placeholder:"RUN" help:"The run to continue (default: the project's unfinished run; see cadence runs)."`
	AllowChanged bool          `help:"Continue even though the workflow changed since the run started."`
	RetryFailed  bool          `help:"Reopen a failed run: its failed step gets fresh attempts; succeeded steps are kept."`
	Budget       float64       `help:"Raise the run's budget to this many US dollars."`
	MaxWait      time.Duration `help:"Exit 3 instead of waiting longer than this for a backoff, a circuit or a usage limit (e.g. 10m)."`
	WaitApproval bool          `help:"When only approval gates are left, wait for their answers (cadence approve / reject from another terminal) instead of exiting 5."`
	Input        []string      `sep:"none" placeholder:"NAME=VALUE" help:"Refused: a run keeps the inputs it started with (see them with cadence inspect)."`
	output
	leaseFlag
	stateFlag
}

func (c *resumeCmd) Run(e *env) error {
	if len(c.Input) > 0 {
		return withCode(exitUsage, fmt.Errorf("resume takes no --input: the run continues with the inputs it started with; start a new run with `cadence run --new --input ...`"))
	}
	c.Dir = findProject(c.Dir)
	opts, view, err := orchestratorOptions(e, c.Dir, c.Workflow, c.MaxWait, c.output)
	if err != nil {
		return err
	}
	opts.State = c.State
	opts.RunID = c.RunID
	opts.LeaseTTL = c.LeaseTTL
	opts.WaitApproval = c.WaitApproval
	opts.AllowChanged = c.AllowChanged
	opts.RetryFailed = c.RetryFailed
	opts.BudgetUSD = c.Budget
	ci := startReporting(e, false)
	res, err := orchestrator.Resume(e.ctx, opts)
	view.close()
	return ci.finish(e, c.Dir, c.State, res, runOutcome(e, c.Dir, res, err))
}
