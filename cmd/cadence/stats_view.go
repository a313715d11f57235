package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

// printStats writes `inspect --stats` for people: one table per step, one per
// agent, then the warnings. A figure that has nothing to be computed from
// (no finished attempt, no success) is shown as "-" rather than a
// misleading 0.
func printStats(w io.Writer, s *history.Stats) {
	runs := "runs"
	if s.Runs == 1 {
		runs = "run"
	}
	fmt.Fprintf(w, "stats of %s (%d %s)\n", s.Scope, s.Runs, runs)
	// Figures over runs of different workflows mix steps and agents that
	// the workflow of today may no longer have.
	mark := func(name string, earlier bool) string {
		if earlier {
			return name + " *"
		}
		return name
	}
	if s.Workflows > 1 {
		fmt.Fprintf(w, "these runs used %d different workflows; * marks a step or agent the latest run does not have (one run's figures: --run ID)\n", s.Workflows)
	}
	fmt.Fprintln(w)
	printStatsTable(w, "STEP", len(s.Steps), func(i int) (string, history.Counts) {
		return mark(s.Steps[i].Step, s.Steps[i].Earlier), s.Steps[i].Counts
	})
	fmt.Fprintln(w)
	printStatsTable(w, "AGENT", len(s.Agents), func(i int) (string, history.Counts) {
		return mark(s.Agents[i].Agent, s.Agents[i].Earlier), s.Agents[i].Counts
	})
	fmt.Fprintln(w)
	if len(s.Checks) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STEP\tCHECK\tRUNS\tFAILED\tFAILURE RATE\tINTERRUPTED\tMEAN TIME")
		for _, c := range s.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\n", c.Step, c.Check, c.Runs, c.Failed,
				statsPercent(c.FailureRate, c.Runs), c.Interrupted, statsSeconds(c.MeanSeconds))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(s.Maps) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MAP STEP\tRUNS\tITEMS\tOK\tDEAD\tDEAD RATE\tDEAD BY SIGNATURE")
		for _, m := range s.Maps {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", m.Step, m.Runs, m.Items, m.Succeeded, m.Dead,
				statsPercent(m.DeadRate, m.Succeeded+m.Dead), statsTally(m.Signatures))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(s.Loops) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LOOP STEP\tRUNS\tUNTIL MET\tEXHAUSTED\tFAILED\tRUNNING\tITERATIONS\tTO SUCCESS MIN\tMEDIAN\tMAX")
		for _, l := range s.Loops {
			lo, med, hi := "-", "-", "-"
			if l.Succeeded > 0 {
				lo, med, hi = fmt.Sprint(l.MinIterationsToSuccess), fmt.Sprint(l.MedianIterationsToSuccess), fmt.Sprint(l.MaxIterationsToSuccess)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", l.Step, l.Loops, l.Succeeded, l.Exhausted, l.Failed, l.Running,
				l.Iterations, lo, med, hi)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(s.Gates) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GATE\tREACHED\tAPPROVED\tREJECTED\tTIMED OUT\tWAITING\tMEAN WAIT\tMAX WAIT\tWAITING FOR")
		for _, g := range s.Gates {
			mean, most, now := "-", "-", "-"
			if g.Approved+g.Rejected > 0 {
				mean, most = statsSeconds(g.MeanWaitSeconds), statsSeconds(g.MaxWaitSeconds)
			}
			if g.Waiting > 0 {
				now = statsSeconds(g.WaitingSeconds)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", g.Step, g.Reached, g.Approved, g.Rejected, g.TimedOut, g.Waiting,
				mean, most, now)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(s.Warnings) == 0 {
		fmt.Fprintln(w, "no warnings")
		return
	}
	fmt.Fprintln(w, "warnings:")
	for _, msg := range s.Warnings {
		fmt.Fprintf(w, "  %s\n", msg)
	}
}

// printStatsTable writes one table of n rows; row returns a row's name and
// figures.
func printStatsTable(w io.Writer, title string, n int, row func(int) (string, history.Counts)) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, title+"\tEXECUTIONS\tOK\tEXHAUSTED\tFAILED\tSKIPPED\tATTEMPTS\tHANDOFF OK\tMEAN ATTEMPTS\tEXHAUSTION\tCOST\tPER ATTEMPT\tRUNNING\tWAITING\tFAILURE CLASSES\tREPAIRS")
	for i := range n {
		name, c := row(i)
		finished := c.Succeeded + c.Exhausted + c.Failed
		cost := fmt.Sprintf("$%.4f", c.CostUSD)
		if c.CostUnknownAttempts > 0 {
			cost += fmt.Sprintf(" +%d unknown", c.CostUnknownAttempts)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			name, c.Steps, c.Succeeded, c.Exhausted, c.Failed, c.Skipped, c.Attempts,
			statsPercent(c.SuccessRate, c.Attempts),
			statsMean(c.MeanAttemptsToSuccess, c.Succeeded),
			statsPercent(c.ExhaustionRate, finished),
			cost, fmt.Sprintf("$%.4f", c.CostPerAttemptUSD),
			statsSeconds(c.RunningSeconds), statsSeconds(c.WaitingSeconds),
			statsTally(c.FailureClasses), statsTally(c.Repairs))
	}
	tw.Flush()
}

// statsPercent renders a rate as a percentage, or "-" when its denominator
// is zero.
func statsPercent(rate float64, den int) string {
	if den == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*rate)
}

// statsMean renders a mean over n values, or "-" when there are none.
func statsMean(mean float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", mean)
}

// statsSeconds renders a number of seconds as a duration to a tenth of a
// second, such as 1m12s or 2.5s.
func statsSeconds(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(100 * time.Millisecond).String()
}

// statsTally renders counts by name, most frequent first (ties by name), as
// "schema 3, truncated 1"; "-" when empty.
func statsTally(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	names := history.ByCount(m)
	parts := make([]string, len(names))
	for i, k := range names {
		// A dead item's signature quotes its error: cleaned.
		parts[i] = fmt.Sprintf("%s %d", clean(k, maxErrorLine), m[k])
	}
	return strings.Join(parts, ", ")
}

// statsJSON writes `inspect --stats --json`: the Stats value as one indented
// JSON object.
func statsJSON(w io.Writer, s *history.Stats) error {
	enc := json.NewEncoder(jsonSafe{w})
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write stats as JSON: %w", err)
	}
	return nil
}
