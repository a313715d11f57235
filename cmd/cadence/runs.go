package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

type runsCmd struct {
	Dir   string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	Limit int    `default:"20" help:"Show at most this many runs (0: all of them)."`
	JSON  bool   `help:"Print the runs as a JSON array."`
	stateFlag
}

// Run lists the runs of a project, newest first, so that a run's id can be
// found for --run.
func (c *runsCmd) Run(e *env) error {
	if c.Limit < 0 {
		return withCode(exitUsage, errors.New("--limit must be 0 (all runs) or more"))
	}
	dir := findProject(c.Dir)
	runs, err := history.ListRuns(e.ctx, dir, c.State, c.Limit)
	if errors.Is(err, history.ErrNoRuns) {
		if c.JSON && (c.State != "" || isProject(dir)) {
			return writeJSON(e.stdout, []history.RunSummary{})
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
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tDURATION\tCOST\tFAILED STEP")
	for _, r := range runs {
		took := "-"
		if r.DurationMS != nil {
			took = (time.Duration(*r.DurationMS) * time.Millisecond).Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, runStatus(r.Status, r.Holder), r.StartedAt.Local().Format("2006-01-02 15:04:05"),
			took, costText(r.CostUSD, r.CostUnknown), dash(r.FailedStep))
	}
	return tw.Flush()
}

// runStatus is a run's status as people read it: a run that the state
// says is running but that no process holds any more (its process was
// killed) is "stopped", for `cadence resume` to continue.
func runStatus(status string, h *history.Holder) string {
	if status == checkpoint.RunRunning && h == nil {
		return "stopped"
	}
	return status
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
