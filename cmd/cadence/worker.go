package main

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type workerCmd struct {
	Dir  string        `arg:"" optional:"" default:"." help:"This machine's checkout of the project (default: the current one)."`
	Once bool          `help:"Exit 0 as soon as no running run has an item left to claim, instead of waiting for more."`
	Poll time.Duration `default:"1s" help:"How often to look for items to claim when there are none."`
	stateFlag
	leaseFlag
	output
}

func (c *workerCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	opts, view, err := orchestratorOptions(e, c.Dir, "", 0, c.output)
	if err != nil {
		return err
	}
	opts.State = c.State
	opts.LeaseTTL = c.LeaseTTL
	opts.Poll = c.Poll
	res, err := orchestrator.Work(e.ctx, orchestrator.WorkOptions{Options: opts, Once: c.Once})
	view.close()
	if err != nil {
		return runOutcome(e, c.Dir, nil, err)
	}
	if res.Status == orchestrator.StatusInterrupted {
		fmt.Fprintln(e.stderr, "worker stopped: "+res.Message)
		return withCode(exitInterrupted, nil)
	}
	return nil
}
