package main

import (
	"os"

	"github.com/cadence-dev/cadence/internal/agent/sim"
)

type agentCmd struct {
	Sim agentSimCmd `cmd:"" help:"The simulated agent: speaks Claude Code's stream-json and follows a scenario file (for demos and tests; no API key)."`
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
