package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

type runsCmd struct {
	Dir      string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	Limit    int    `default:"20" help:"Show at most this many runs (0: all of them)."`
	Status   string `placeholder:"STATUS" enum:",running,stopped,waiting,interrupted,succeeded,failed,abandoned,cancelled" default:"" help:"Only runs in this status: running, stopped (no process holds it; resume continues it), waiting (at an approval gate), interrupted, succeeded, failed, abandoned or cancelled."`
	Workflow string `placeholder:"FILE" help:"Only runs started from this workflow file." type:"path"`
	JSON     bool   `help:"Print the runs as a JSON array."`
	stateFlag
}

// Run lists the runs of a project, newest first, so that a run's id can be
// found for --run.
func (c *runsCmd) Run(e *env) error {
	if c.Limit < 0 {
		return withCode(exitUsage, errors.New("--limit must be 0 (all runs) or more"))
	}
	dir := findProject(c.Dir)
	f := history.RunFilter{State: c.Status, Limit: c.Limit}
	if c.Workflow != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("project directory %s: %w", dir, err))
		}
		f.Workflow = checkpoint.RelPath(abs, c.Workflow)
	}
	runs, err := history.ListRuns(e.ctx, dir, c.State, f)
	if errors.Is(err, history.ErrNoRuns) {
		if c.JSON && (c.State != "" || isProject(dir)) {
			return writeJSON(e.stdout, []history.RunSummary{})
		}
		if c.Status != "" || c.Workflow != "" {
			fmt.Fprintf(e.stderr, "no run in %s matches; see them all with: cadence runs %s\n", dir, dir)
			return nil
		}
		return noRuns(dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	if c.JSON {
		return writeJSON(e.stdout, runs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tWORKFLOW\tSTARTED\tDURATION\tCOST\tTOKENS IN/OUT\tFAILED STEP")
	for _, r := range runs {
		took := "-"
		if r.DurationMS != nil {
			took = (time.Duration(*r.DurationMS) * time.Millisecond).Round(100 * time.Millisecond).String()
		}
		wf := r.Workflow
		if r.Name != "" {
			wf = clean(r.Name, 40) + " (" + r.Workflow + ")"
		}
		tokens := "-"
		if r.InputTokens > 0 || r.OutputTokens > 0 {
			tokens = fmt.Sprintf("%d/%d", r.InputTokens, r.OutputTokens)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, wf, r.StartedAt.Local().Format("2006-01-02 15:04:05"),
			took, costText(r.CostUSD, r.CostUnknown), tokens, dash(r.FailedStep))
	}
	return tw.Flush()
}

// runStatus is a run's status as people read it: a run that waits for a
// person at a gate is "waiting", and one that the state says is running
// but that no process holds any more (its process was killed) is
// "stopped", for `cadence resume` to continue (history.RunSummary.State).
func runStatus(status checkpoint.RunStatus, h *history.Holder, waiting bool) string {
	switch {
	case waiting && (status == checkpoint.RunRunning || status == checkpoint.RunInterrupted):
		return history.RunWaiting
	case status == checkpoint.RunRunning && h == nil:
		return history.RunStopped
	}
	return string(status)
}

// costText shows a cost in dollars; attempts whose agent reported none make
// it "unknown" when nothing else was reported, and a lower bound otherwise.
func costText(usd float64, unknown int) string {
	switch {
	case unknown > 0 && usd == 0:
		return "unknown"
	case unknown > 0:
		return fmt.Sprintf("≥ $%.4f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}
