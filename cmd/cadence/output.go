package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cadence-dev/cadence/internal/history"
)

type outputCmd struct {
	Dir      string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	RunID    string `name:"run" help:"Run id (default: the latest run; list them with cadence runs)."`
	Workflow string `placeholder:"FILE" help:"The latest run of this workflow file (instead of --run)." type:"path"`
	Step     string `help:"The step whose result to print (default: the run's last step). For a map step: the items' data as one object keyed by item key."`
	stateFlag
}

// Run prints a step's accepted handoff data as JSON on stdout, for scripts:
// the bytes cadence stored, indented, so numbers keep every digit.
func (c *outputCmd) Run(e *env) error {
	dir := findProject(c.Dir)
	if c.RunID == "" {
		id, err := runOfWorkflow(e, dir, c.State, c.Workflow)
		if err != nil {
			return err
		}
		c.RunID = id
	}
	out, err := history.Output(e.ctx, dir, c.State, c.RunID, c.Step)
	switch {
	case errors.Is(err, history.ErrNoRuns):
		return noRuns(dir)
	case errors.Is(err, history.ErrNoOutput):
		return withCode(exitFailed, fmt.Errorf("%w; see: cadence inspect %s", err, dir))
	case err != nil:
		return withCode(exitUsage, stateHint(err))
	}
	var buf bytes.Buffer
	// json.Indent keeps each number's text as stored; decoding into any
	// would round integers past 2^53 through float64.
	if err := json.Indent(&buf, out.Data, "", "  "); err != nil {
		return fmt.Errorf("step %s of run %s: stored data: %w", out.Step, out.RunID, err)
	}
	buf.WriteByte('\n')
	_, err = jsonSafe{e.stdout}.Write(buf.Bytes())
	return err
}
