package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
	htmlreport "github.com/cadence-dev/cadence/internal/report"
)

type reportCmd struct {
	Dir      string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID    string `name:"run" help:"Run id (default: the latest run)."`
	Workflow string `placeholder:"FILE" help:"The latest run of this workflow file (instead of --run)." type:"path"`
	Output   string `short:"o" name:"output" placeholder:"FILE" help:"Where to write the report (default: DIR/.cadence/reports/RUN.html)."`
	stateFlag
}

// Run writes the HTML report of a run and prints its path. It reads the
// state without the project lock, like inspect, so it works while the run
// goes on.
func (c *reportCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	if c.RunID == "" {
		id, err := runOfWorkflow(e, c.Dir, c.State, c.Workflow)
		if err != nil {
			return err
		}
		c.RunID = id
	}
	rep, err := history.Inspect(e.ctx, c.Dir, c.State, c.RunID, true)
	if errors.Is(err, history.ErrNoRuns) {
		return noRuns(c.Dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	listChanges(e, c.Dir, rep)
	var buf bytes.Buffer
	if err := htmlreport.Render(&buf, rep, htmlreport.Options{Dir: c.Dir, Now: time.Now()}); err != nil {
		return err
	}
	path := c.Output
	if path == "" {
		path = filepath.Join(c.Dir, orchestrator.CadenceDir, "reports", rep.Run.ID+".html")
	}
	if err := checkpoint.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		if c.Output == "" && errors.Is(err, fs.ErrPermission) {
			// The state was only read; the report is the one file written.
			return fmt.Errorf("write the report of run %s: this user cannot write %s (%w); write it elsewhere with -o FILE",
				rep.Run.ID, filepath.Dir(path), err)
		}
		return fmt.Errorf("write the report of run %s: %w", rep.Run.ID, err)
	}
	fmt.Fprintln(e.stdout, path)
	return nil
}

// maxChangeLookups bounds the attempts whose changed files the report
// asks git for (a few milliseconds each); the others keep their diff
// command alone.
const maxChangeLookups = 200

// listChanges fills in the files changed by the failed and interrupted
// attempts the report lists (SPEC §19), the first maxChangeLookups of
// them that have both snapshots.
func listChanges(e *env, dir string, rep *history.Report) {
	left := maxChangeLookups
	fill := func(atts []history.AttemptReport) {
		for i := range atts {
			a := &atts[i]
			if left == 0 || a.Snapshot == "" || a.SnapshotAfter == "" ||
				(a.Status != checkpoint.AttemptFailed && a.Status != checkpoint.AttemptInterrupted) {
				continue
			}
			left--
			a.FilesChanged = attemptChanges(e.ctx, dir, *a)
		}
	}
	for i := range rep.Steps {
		fill(rep.Steps[i].Attempts)
		for j := range rep.Steps[i].Items {
			fill(rep.Steps[i].Items[j].Attempts)
		}
	}
}
