package main

import (
	"fmt"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type cancelCmd struct {
	Dir      string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	Workflow string `help:"Workflow file whose unfinished run to cancel (with several unfinished runs, name one with this or --run)." type:"path"`
	RunID    string `name:"run" placeholder:"RUN" help:"The run to cancel (default: the project's unfinished run; see cadence runs)."`
	stateFlag
}

func (c *cancelCmd) Run(e *env) error {
	dir := findProject(c.Dir)
	opts, view, err := orchestratorOptions(e, dir, c.Workflow, 0, output{Quiet: true})
	if err != nil {
		return err
	}
	view.close() // what cancel prints is its one line below
	opts.Sink = history.Discard{}
	opts.State, opts.RunID = c.State, c.RunID
	res, err := orchestrator.Cancel(e.ctx, opts)
	if err != nil {
		return runOutcome(e, dir, nil, err)
	}
	fmt.Fprintf(e.stdout, "run %s %s\n", res.RunID, res.Message)
	return nil
}
