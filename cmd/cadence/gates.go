package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/shellquote"
)

type gatesCmd struct {
	Dir  string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	JSON bool   `help:"Print the gates as a JSON array: run_id, workflow, name, gate, prompt, since, timeout_at."`
	stateFlag
}

// Run lists the approval gates that wait for a person in the project's
// unfinished runs, each with the command that answers it.
func (c *gatesCmd) Run(e *env) error {
	dir := findProject(c.Dir)
	gates, err := history.WaitingGates(e.ctx, dir, c.State)
	if errors.Is(err, history.ErrNoRuns) {
		if c.JSON {
			return writeJSON(e.stdout, []history.GateWaiting{})
		}
		return noRuns(dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	if c.JSON {
		return writeJSON(e.stdout, gates)
	}
	if len(gates) == 0 {
		fmt.Fprintf(e.stdout, "no gate waits for approval in %s\n", dir)
		return nil
	}
	for i, g := range gates {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		wf := g.Workflow
		if g.Name != "" {
			wf = clean(g.Name, 60) + " (" + g.Workflow + ")"
		}
		fmt.Fprintf(e.stdout, "gate %s  run %s  workflow %s\n", clean(g.Gate, 120), g.RunID, wf)
		fmt.Fprintf(e.stdout, "  waiting since %s", g.Since.Local().Format("2006-01-02 15:04:05"))
		if g.TimeoutAt != nil {
			fmt.Fprintf(e.stdout, ", times out at %s", g.TimeoutAt.Local().Format("2006-01-02 15:04:05"))
			if g.TimeoutAt.Before(time.Now()) {
				fmt.Fprint(e.stdout, " (passed: the next resume fails it)")
			}
		}
		fmt.Fprintln(e.stdout)
		for _, line := range strings.Split(g.Prompt, "\n") {
			if line = clean(line, 200); line != "" {
				fmt.Fprintf(e.stdout, "  %s\n", line)
			}
		}
		fmt.Fprintf(e.stdout, "  answer with: cadence approve %s %s --run %s [--comment TEXT]  or: cadence reject %s %s --run %s --comment TEXT\n",
			shellquote.Word(g.Gate), shellquote.Word(dir), g.RunID, shellquote.Word(g.Gate), shellquote.Word(dir), g.RunID)
	}
	return nil
}
