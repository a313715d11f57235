package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type dlqCmd struct {
	List  dlqListCmd  `cmd:"" help:"List the dead items of a run's map steps: key, class, attempts, error signature."`
	Show  dlqShowCmd  `cmd:"" help:"Show one dead item in full: the item, its error, its attempts and failed-handoff records."`
	Retry dlqRetryCmd `cmd:"" help:"Reopen dead items with fresh attempts (their history is kept) and continue the run."`
}

type dlqListCmd struct {
	Dir   string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID string `name:"run" help:"Run id (default: the latest run)."`
	Step  string `help:"Only the dead items of this map step: its id, or its path inside a loop (LOOP/N/STEP)."`
	JSON  bool   `help:"Print the items as a JSON array."`
	stateFlag
}

// deadOf reads the dead items of a run, of one step when step is set.
func deadOf(e *env, dir, state, runID, step string) (*history.Report, []history.DeadReport, error) {
	rep, err := history.Inspect(e.ctx, dir, state, runID, false)
	if errors.Is(err, history.ErrNoRuns) {
		return nil, nil, noRuns(dir)
	}
	if err != nil {
		return nil, nil, withCode(exitUsage, stateHint(err))
	}
	var out []history.DeadReport
	known := false
	// Map steps at any depth: one inside a loop has a row in each
	// iteration (LOOP/N/STEP), named by its path or by its id.
	var walk func(steps []history.StepReport)
	walk = func(steps []history.StepReport) {
		for _, s := range steps {
			if step == "" || s.ID == step || address.Of(s.ID).StepName() == step {
				known = true
				out = append(out, s.Dead...)
			}
			for _, it := range s.Iterations {
				walk(it.Steps)
			}
		}
	}
	walk(rep.Steps)
	if step != "" && !known {
		return nil, nil, withCode(exitUsage, fmt.Errorf("run %s has no step %q", rep.Run.ID, step))
	}
	return rep, out, nil
}

func (c *dlqListCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	rep, dead, err := deadOf(e, c.Dir, c.State, c.RunID, c.Step)
	if err != nil {
		return err
	}
	if c.JSON {
		if dead == nil {
			dead = []history.DeadReport{}
		}
		return writeJSON(e.stdout, dead)
	}
	if len(dead) == 0 {
		fmt.Fprintf(e.stdout, "run %s: the dead-letter queue is empty\n", rep.Run.ID)
		return nil
	}
	fmt.Fprintf(e.stdout, "run %s: %s\n\n", rep.Run.ID, plural(len(dead), "dead item", "dead items"))
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tKEY\tCLASS\tATTEMPTS\tLAST\tSIGNATURE")
	for _, d := range dead {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Step, clean(d.Key, maxQuote), d.Class, d.Attempts, d.LastAt.UTC().Format(time.RFC3339), clip(d.Signature, 80))
	}
	tw.Flush()
	groups := map[string]int{}
	var order []string
	for _, d := range dead {
		if groups[d.Signature] == 0 {
			order = append(order, d.Signature)
		}
		groups[d.Signature]++
	}
	if len(order) < len(dead) {
		fmt.Fprintln(e.stdout, "\nby signature:")
		for _, sig := range order {
			fmt.Fprintf(e.stdout, "  %4d  %s\n", groups[sig], clean(sig, maxErrorLine))
		}
	}
	switch rep.Run.Status {
	case "succeeded", "abandoned", "cancelled":
		// Finished for good: its dead items can be shown, not retried.
		fmt.Fprintf(e.stdout, "\nshow one: cadence dlq show KEY (run %s is %s: its dead items run again only in a new run)\n", rep.Run.ID, rep.Run.Status)
	default:
		fmt.Fprintln(e.stdout, "\nshow one: cadence dlq show KEY · retry: cadence dlq retry --key KEY (or --all)")
	}
	return nil
}

type dlqShowCmd struct {
	Key   string `arg:"" help:"The dead item's key."`
	Dir   string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID string `name:"run" help:"Run id (default: the latest run)."`
	Step  string `help:"The map step, when items of several steps share the key."`
	JSON  bool   `help:"Print the item as one JSON object."`
	stateFlag
}

func (c *dlqShowCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	rep, dead, err := deadOf(e, c.Dir, c.State, c.RunID, c.Step)
	if err != nil {
		return err
	}
	var hits []history.DeadReport
	for _, d := range dead {
		if d.Key == c.Key {
			hits = append(hits, d)
		}
	}
	switch {
	case len(hits) == 0:
		return withCode(exitUsage, fmt.Errorf("run %s has no dead item with key %q (see cadence dlq list)", rep.Run.ID, c.Key))
	case len(hits) > 1:
		steps := make([]string, len(hits))
		for i, h := range hits {
			steps[i] = h.Step
		}
		return withCode(exitUsage, fmt.Errorf("dead items of steps %s have the key %q: choose one with --step", strings.Join(steps, ", "), c.Key))
	}
	d := hits[0]
	step := rep.Find(d.Step)
	item := itemAsStep(step, d.Key)
	if c.JSON {
		var value any
		for _, it := range step.Items {
			if it.Key == d.Key {
				value = it.Item
			}
		}
		return writeJSON(e.stdout, struct {
			history.DeadReport
			Item     any                     `json:"item"`
			Attempts []history.AttemptReport `json:"attempts"`
		}{d, value, item.Attempts})
	}
	printDead(e.stdout, rep.Run.ID, d, step, item)
	return nil
}

func printDead(w io.Writer, runID string, d history.DeadReport, step, item *history.StepReport) {
	// The key, the item and the errors are the agent's: each is cleaned
	// for the terminal.
	key := clean(d.Key, maxQuote)
	fmt.Fprintf(w, "run %s  step %s  item %s  dead\n", runID, d.Step, key)
	fmt.Fprintf(w, "class      %s\nsignature  %s\nattempts   %d\nfirst      %s\nlast       %s\ndead since %s\n",
		d.Class, clean(d.Signature, maxErrorLine), d.Attempts, d.FirstAt.UTC().Format(time.RFC3339), d.LastAt.UTC().Format(time.RFC3339), d.DeadAt.UTC().Format(time.RFC3339))
	for _, it := range step.Items {
		if it.Key == d.Key {
			fmt.Fprintf(w, "item       %s\n", clip(string(it.Item), 500))
		}
	}
	if d.Error != "" {
		fmt.Fprintf(w, "\nerror:\n%s\n", indent(cleanLines(d.Error)))
	}
	fmt.Fprintln(w)
	printStep(w, item)
	var records []string
	for _, a := range item.Attempts {
		if a.FailedHandoff != "" {
			records = append(records, a.FailedHandoff)
		}
	}
	if len(records) > 0 {
		fmt.Fprintf(w, "\nfailed-handoff records:\n  %s\n", strings.Join(records, "\n  "))
	}
	fmt.Fprintf(w, "\none attempt in full: cadence inspect --step %s --item %s --attempt N\n", d.Step, key)
}

type dlqRetryCmd struct {
	Dir      string        `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID    string        `name:"run" help:"Run id (default: the latest run)."`
	Step     string        `help:"Only the dead items of this map step."`
	Key      []string      `sep:"none" help:"Key of a dead item to reopen (repeatable)."`
	All      bool          `help:"Reopen every dead item (of --step, if given)."`
	Workflow string        `help:"Workflow file (default DIR/.cadence/workflow.yaml)." type:"path"`
	MaxWait  time.Duration `help:"Exit 3 instead of waiting longer than this for a backoff, a circuit or a usage limit (e.g. 10m)."`
	output
	leaseFlag
	stateFlag
}

func (c *dlqRetryCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	if c.All == (len(c.Key) > 0) {
		return withCode(exitUsage, errors.New("name the items to retry with --key KEY (repeatable), or retry them all with --all"))
	}
	opts, view, err := orchestratorOptions(e, c.Dir, c.Workflow, c.MaxWait, c.output)
	if err != nil {
		return err
	}
	opts.State = c.State
	opts.LeaseTTL = c.LeaseTTL
	opts.RetryDead = &orchestrator.DeadRetry{RunID: c.RunID, Step: c.Step, Keys: c.Key, All: c.All}
	res, err := orchestrator.Resume(e.ctx, opts)
	view.close()
	return runOutcome(e, c.Dir, res, err)
}
