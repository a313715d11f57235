package main

import (
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type circuitCmd struct {
	Reset circuitResetCmd `cmd:"" help:"Close an agent's circuit by hand (recorded in the run history)."`
}

type circuitResetCmd struct {
	Agent string `arg:"" help:"Agent name, as in the workflow's agents section."`
	Dir   string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	stateFlag
}

func (c *circuitResetCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	before, err := orchestrator.ResetCircuit(e.ctx, c.Dir, c.State, c.Agent, time.Now().UTC())
	if err != nil {
		return runOutcome(e, c.Dir, nil, err)
	}
	fmt.Fprintf(e.stdout, "circuit of agent %s closed (was %s)\n", c.Agent, before)
	return nil
}
