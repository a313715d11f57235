package main

import (
	"os"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/agent/sim"
)

type agentCmd struct {
	Sim       agentSimCmd       `cmd:"" help:"The simulated agent: speaks Claude Code's stream-json and follows a scenario file (for demos and tests; no API key)."`
	Supervise agentSuperviseCmd `cmd:"" hidden:"" help:"Run an agent as cadence's child process group, killed whole if cadence dies (started by cadence itself)."`
}

// agentSuperviseCmd is the process cadence puts between itself and each
// agent (see agent.Supervise).
type agentSuperviseCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"--parent PID -- PROGRAM [ARGS...]"`
}

func (c *agentSuperviseCmd) Run(e *env) error {
	if code := agent.Supervise(c.Args, e.stderr); code != 0 {
		return withCode(code, nil)
	}
	return nil
}

// agentSimCmd passes its arguments through to the simulated agent, which
// parses them itself (--scenario FILE [--session-id ID | --resume ID]
// [--ledger FILE] [PROMPT]).
type agentSimCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"--scenario FILE [--session-id ID | --resume ID] [--ledger FILE] [PROMPT]"`
}

func (c *agentSimCmd) Run(e *env) error {
	code := sim.Main(e.ctx, c.Args, e.stdin, e.stdout, e.stderr, os.Getenv)
	if code != 0 {
		return withCode(code, nil)
	}
	return nil
}
