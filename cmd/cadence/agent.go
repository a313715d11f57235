package main

import (
	"os"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/agent/sim"
	// The supervisor starts in this package's init, before the rest of
	// cadence is initialised; agentSuperviseCmd is then never reached
	// but documents the command.
	_ "github.com/cadence-dev/cadence/internal/supervise/early"
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

// Help describes the scenario file, shown by `cadence agent sim --help`.
func (c *agentSimCmd) Help() string {
	return `The scenario file says what the agent does at each attempt of each step:

    steps:
      plan:                        # a step id
        - answer: '{"tasks": []}'  # attempt 1: the final answer
      fix/a:                       # item a of map step fix (fix: all its items)
        - answer: 'not JSON'       # attempt 1
        - sleep: 2s                # attempt 2: wait, then answer
          answer: '{"ok": true}'

Attempts past the end of a list repeat its last entry. An entry combines:

    answer: TEXT                 the final result (any text, broken JSON too)
    write_file: TEXT             write TEXT to CADENCE_HANDOFF_PATH (answer defaults to "done")
    edit: {PATH: TEXT}           write project files first, as an agent at work does
    sleep: DURATION              wait before answering (e.g. 500ms, 2s)
    linger: DURATION             wait after write_file, before answering
    help: {context: VALUE}       ask for help: the help marker, then VALUE as JSON
    rate_limit: {retry_after: DURATION}   fail with HTTP 429
    overloaded: true             fail with HTTP 529
    auth_error: true             fail with an authentication error
    session_not_found: true      on --resume, fail as for an unknown session
    hang: true                   print the start of a session, then nothing until killed
    crash: {after_bytes: N, exit_code: N}  print N bytes of the answer and exit
    stdout_bytes: N              print N bytes of filler before the answer
    exit_code: N                 exit status after the answer
    cost_usd, turns, input_tokens, output_tokens: reported in the result

Use it from a workflow with: agents: {NAME: {preset: sim, scenario: FILE}}.
With --ledger FILE each attempt appends a JSON line (step, item, attempt,
session, prompt) to FILE.`
}
