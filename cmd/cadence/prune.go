package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/prune"
)

type pruneCmd struct {
	Dir       string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	OlderThan string `required:"" name:"older-than" placeholder:"AGE" help:"Remove the finished runs (succeeded, failed, abandoned, cancelled) that ended longer ago than this: 90m, 36h, 30d, 2w. An unfinished run is never removed."`
	DryRun    bool   `name:"dry-run" help:"Print what would be removed, and remove nothing."`
	JSON      bool   `help:"Print what was removed as JSON: {\"runs\": [...], \"leftovers\": [...], \"bytes\", \"dry_run\"}."`
	stateFlag
}

// Run removes finished runs older than --older-than, with their rows and
// files, and says what it removed and the bytes freed.
func (c *pruneCmd) Run(e *env) error {
	age, err := parseAge(c.OlderThan)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--older-than %q: %w", c.OlderThan, err))
	}
	dir := findProject(c.Dir)
	if !isProject(dir) && c.State == "" {
		return noRuns(dir)
	}
	res, err := prune.Prune(e.ctx, prune.Options{Dir: dir, State: c.State, Before: time.Now().Add(-age), DryRun: c.DryRun,
		Failpoint: attempt.ParseFailpoint(os.Getenv("CADENCE_FAILPOINT"))})
	if res != nil && c.JSON {
		if werr := writeJSON(e.stdout, res); werr != nil {
			return werr
		}
	} else if res != nil {
		verb := "removed"
		if c.DryRun {
			verb = "would remove"
		}
		for _, r := range res.Runs {
			fmt.Fprintf(e.stdout, "%s run %s (%s, ended %s): %s, %s", verb, r.ID, r.Status, r.EndedAt.Local().Format("2006-01-02 15:04"),
				plural(r.Files, "file", "files"), bytesText(r.Bytes))
			if len(r.Branches) > 0 {
				fmt.Fprintf(e.stdout, ", %s", plural(len(r.Branches), "branch", "branches"))
			}
			fmt.Fprintln(e.stdout)
			if r.BranchNote != "" {
				fmt.Fprintf(e.stderr, "cadence: warning: run %s: its branches were left: %s\n", r.ID, clean(r.BranchNote, 300))
			}
		}
		for _, l := range res.Leftovers {
			fmt.Fprintf(e.stdout, "%s %s (a run the state no longer has)\n", verb, l)
		}
		if len(res.Runs) == 0 && len(res.Leftovers) == 0 {
			fmt.Fprintf(e.stdout, "no finished run in %s ended more than %s ago\n", dir, c.OlderThan)
		} else {
			fmt.Fprintf(e.stdout, "%s %s, %s freed\n", verb, plural(len(res.Runs), "run", "runs"), bytesText(res.Bytes))
		}
	}
	if err != nil {
		return withCode(exitFailed, err)
	}
	return nil
}

// parseAge reads an age as a Go duration (90m, 36h) or in days or weeks
// (30d, 2w), which durations lack.
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("not an age: write it as 90m, 36h, 30d or 2w")
			}
			return time.Duration(v * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("not an age: write it as 90m, 36h, 30d or 2w")
	}
	return d, nil
}

// bytesText shows a size in the largest unit that keeps it at 1 or more.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
