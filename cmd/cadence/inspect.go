package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

type inspectCmd struct {
	Dir       string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	RunID     string `name:"run" help:"Run id (default: the latest run)."`
	Workflow  string `placeholder:"FILE" help:"The latest run of this workflow file (instead of --run)." type:"path"`
	Step      string `help:"Show the attempt history of this step."`
	Item      string `help:"With --step of a map step: show the attempt history of this item (by its key)."`
	Attempt   int    `help:"With --step: show one attempt in full (prompt, output file, diagnosis, repairs)."`
	Iteration int    `help:"With --step of a loop step: show one iteration (from 1) with its inner steps."`
	Stats     bool   `help:"Per step and per agent: handoff success rate, mean attempts to success, exhaustion rate, failure classes, repairs, cost, time waiting vs running; across all runs unless --run is given."`
	JSON      bool   `help:"Print the run as one JSON object (the stable shape documented in the README); with --follow, the transitions as JSON Lines."`
	Follow    bool   `help:"Print the run's transitions as they are committed, from another terminal, until the run ends: waits for a run to start, and through a stop for its resume; exits 0 when it succeeded, 1 when it failed or was abandoned or cancelled."`
	stateFlag
}

func (c *inspectCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	if c.Attempt != 0 && c.Step == "" {
		return withCode(exitUsage, errors.New("--attempt needs --step"))
	}
	if c.Item != "" && c.Step == "" {
		return withCode(exitUsage, errors.New("--item needs --step (the map step the item belongs to)"))
	}
	if c.Iteration != 0 && c.Step == "" {
		return withCode(exitUsage, errors.New("--iteration needs --step (the loop step the iteration belongs to)"))
	}
	if c.Iteration < 0 {
		return withCode(exitUsage, fmt.Errorf("--iteration %d: iterations are numbered from 1", c.Iteration))
	}
	if c.Stats {
		return c.stats(e)
	}
	if c.Follow {
		return c.follow(e)
	}
	if c.RunID == "" {
		id, err := runOfWorkflow(e, c.Dir, c.State, c.Workflow)
		if err != nil {
			return err
		}
		c.RunID = id
	}
	rep, err := history.Inspect(e.ctx, c.Dir, c.State, c.RunID, c.Attempt != 0)
	if errors.Is(err, history.ErrNoRuns) {
		return noRuns(c.Dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	var step *history.StepReport
	if c.Step != "" {
		step = rep.Find(c.Step)
		if step == nil {
			// An inner step named by its workflow id: its instance in
			// every iteration.
			all := rep.Instances(c.Step)
			switch {
			case len(all) == 0:
				return withCode(exitUsage, fmt.Errorf("run %s has no step %q", rep.Run.ID, c.Step))
			case len(all) > 1 && (c.Attempt != 0 || c.Item != "" || c.Iteration != 0):
				return withCode(exitUsage, fmt.Errorf("step %s ran in %d iterations of run %s; name one by its path, e.g. --step %s",
					c.Step, len(all), rep.Run.ID, all[len(all)-1].ID))
			case len(all) > 1:
				return c.instances(e, all)
			}
			step = all[0]
		}
		if c.Iteration != 0 {
			return c.iteration(e, rep, step)
		}
		if c.Item != "" {
			it := itemAsStep(step, c.Item)
			if it == nil {
				return withCode(exitUsage, fmt.Errorf("step %s of run %s has no item %q", c.Step, rep.Run.ID, c.Item))
			}
			step = it
		}
	}
	if c.Attempt != 0 {
		for _, a := range step.Attempts {
			if a.N == c.Attempt {
				a.FilesChanged = attemptChanges(e.ctx, c.Dir, a)
				if c.JSON {
					return writeJSON(e.stdout, a)
				}
				printAttempt(e.stdout, rep.Run.ID, step, a)
				return nil
			}
		}
		if step.ItemCounts != nil {
			key := "KEY"
			if len(step.Items) > 0 {
				key = step.Items[0].Key
			}
			return withCode(exitUsage, fmt.Errorf("step %s of run %s is a map step: its attempts belong to its items; name one with --item, e.g. cadence inspect --step %s --item %s --attempt %d (the items: cadence inspect --step %s)",
				c.Step, rep.Run.ID, c.Step, key, c.Attempt, c.Step))
		}
		return withCode(exitUsage, fmt.Errorf("step %s of run %s has no attempt %d", c.Step, rep.Run.ID, c.Attempt))
	}
	if c.JSON {
		if step != nil {
			return writeJSON(e.stdout, step)
		}
		return writeReport(e.stdout, rep)
	}
	if step != nil {
		printStep(e.stdout, step)
		return nil
	}
	printSummary(e.stdout, rep)
	return nil
}

// instances shows an inner step of a loop in every iteration it ran in.
func (c *inspectCmd) instances(e *env, all []*history.StepReport) error {
	if c.JSON {
		return writeJSON(e.stdout, all)
	}
	for i, s := range all {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printStep(e.stdout, s)
	}
	return nil
}

// iteration shows one iteration of a loop step.
func (c *inspectCmd) iteration(e *env, rep *history.Report, step *history.StepReport) error {
	if len(step.Iterations) == 0 {
		return withCode(exitUsage, fmt.Errorf("step %s of run %s is not a loop step that has run an iteration: --iteration shows a loop's", step.ID, rep.Run.ID))
	}
	it := step.Iteration(c.Iteration)
	if it == nil {
		return withCode(exitUsage, fmt.Errorf("loop step %s of run %s has no iteration %d (it ran %s)", step.ID, rep.Run.ID,
			c.Iteration, plural(len(step.Iterations), "iteration", "iterations")))
	}
	if c.JSON {
		return writeJSON(e.stdout, it)
	}
	fmt.Fprintf(e.stdout, "loop step %s  iteration %d  %s\n", step.ID, it.Iteration, it.Status)
	if len(it.Until) > 0 {
		fmt.Fprintf(e.stdout, "decision  %s\n", clean(untilText(it.Until), maxErrorLine))
	}
	fmt.Fprintln(e.stdout)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tAGENT\tATTEMPTS\tNEXT RETRY\tLAST ERROR")
	for _, s := range it.Steps {
		summaryRows(tw, s, "")
	}
	tw.Flush()
	for _, s := range it.Steps {
		fmt.Fprintln(e.stdout)
		printStep(e.stdout, &s)
	}
	return nil
}

func (c *inspectCmd) follow(e *env) error {
	if c.Step != "" || c.Item != "" || c.Attempt != 0 {
		return withCode(exitUsage, errors.New("--follow shows the whole run; it does not take --step, --item or --attempt"))
	}
	if c.State == "" && !isProject(c.Dir) {
		return noRuns(c.Dir)
	}
	v := newView(e.stdout, e.stderr, output{JSON: c.JSON, NoColor: true})
	v.live = false
	status, err := history.Follow(e.ctx, c.Dir, c.State, c.RunID, v.Emit, func(msg string) {
		fmt.Fprintf(e.stderr, "cadence: %s\n", msg)
	})
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	if status == "succeeded" {
		return nil
	}
	return withCode(exitFailed, nil)
}

func (c *inspectCmd) stats(e *env) error {
	if c.Step != "" {
		return withCode(exitUsage, errors.New("--stats covers every step; it does not take --step"))
	}
	st, err := history.ComputeStats(e.ctx, c.Dir, c.State, c.RunID)
	if errors.Is(err, history.ErrNoRuns) {
		return noRuns(c.Dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	if c.JSON {
		return statsJSON(e.stdout, st)
	}
	printStats(e.stdout, st)
	return nil
}

// stateHint adds what to do to an error about an unusable state file.
func stateHint(err error) error {
	if errors.Is(err, checkpoint.ErrCorrupt) || errors.Is(err, checkpoint.ErrNotSQLite) {
		return fmt.Errorf("%w\n.cadence/state.db cannot be used; restore it from a backup, or move it aside to start afresh (its run history is then gone)", err)
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(jsonSafe{w})
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeReport prints a whole run's report as JSON: indented for a person at
// a terminal, compact for a program reading a pipe or a file, where
// indenting a run of 10,000 items costs more than reading it from the
// database.
func writeReport(w io.Writer, v any) error {
	if isTerminal(w) {
		return writeJSON(w, v)
	}
	return json.NewEncoder(jsonSafe{w}).Encode(v)
}

func ts(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func printSummary(w io.Writer, rep *history.Report) {
	r := rep.Run
	fmt.Fprintf(w, "run      %s  %s\n", r.ID, runStatus(r.Status, r.Holder, len(r.WaitingFor) > 0))
	switch {
	case r.Status == checkpoint.RunRunning && r.Holder == nil && len(r.WaitingFor) == 0:
		fmt.Fprintf(w, "         no cadence process holds it (it was killed or the machine stopped): cadence resume continues it\n")
	case r.Holder != nil:
		fmt.Fprintf(w, "         held by pid %d on host %s\n", r.Holder.PID, r.Holder.Host)
	}
	fmt.Fprintf(w, "workflow %s (sha256 %s)\n", r.Workflow, short(r.WorkflowSHA256))
	fmt.Fprintf(w, "started  %s  finished %s\n", r.StartedAt.UTC().Format(time.RFC3339), ts(r.FinishedAt))
	cost := fmt.Sprintf("$%.4f", r.CostUSD)
	switch {
	case !r.CostKnown && r.CostUnknown > 0:
		cost = "unknown (the agents report no cost)"
	case r.CostUnknown > 0:
		cost += fmt.Sprintf(" (+ %s whose agent reports no cost)", plural(r.CostUnknown, "attempt", "attempts"))
	}
	fmt.Fprintf(w, "cost     %s\n", cost)
	if len(r.Inputs) > 0 {
		fmt.Fprintf(w, "inputs   %s\n", r.Inputs)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "skipped  %s\n", strings.Join(r.Skipped, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tAGENT\tATTEMPTS\tNEXT RETRY\tLAST ERROR")
	for _, s := range rep.Steps {
		summaryRows(tw, s, "")
	}
	tw.Flush()
	printWaitingFor(w, rep.Run.WaitingFor)
	for _, s := range rep.Steps {
		if len(s.Dead) == 0 {
			continue
		}
		fmt.Fprintf(w, "\ndead items of step %s (cadence dlq list):\n", s.ID)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tCLASS\tATTEMPTS\tSIGNATURE")
		for _, d := range s.Dead {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", clean(d.Key, maxQuote), d.Class, d.Attempts, clip(d.Signature, 80))
		}
		tw.Flush()
	}
	printDeliveries(w, r.Deliveries)
	if len(rep.Circuits) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		// Circuits are the project's, kept across runs: an agent of an
		// earlier workflow keeps its breaker.
		used := map[string]bool{}
		var walk func([]history.StepReport)
		walk = func(steps []history.StepReport) {
			for _, s := range steps {
				used[s.Agent] = true
				for _, it := range s.Iterations {
					walk(it.Steps) // the agents of a loop's inner steps
				}
			}
		}
		walk(rep.Steps)
		other := false
		fmt.Fprintln(tw, "AGENT\tCIRCUIT\tFAILURES\tOPEN UNTIL")
		for _, c := range rep.Circuits {
			name := c.Agent
			if !used[c.Agent] {
				name += " *"
				other = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", name, c.State, c.Failures, ts(c.OpenUntil))
		}
		tw.Flush()
		if other {
			fmt.Fprintln(w, "* no step of this run uses the agent: its circuit is from an earlier workflow (or an on_help advisor)")
		}
	}
}

// summaryRows writes the row of one step in the summary table, its name
// indented by pad; a loop step's iterations follow it, one row each, with
// their inner steps indented under them.
func summaryRows(tw io.Writer, s history.StepReport, pad string) {
	lastErr := lastError(s.Status, s.Attempts)
	if s.Status == "skipped" {
		lastErr = decisionLine(s.Decision)
	}
	if s.Agent == "" {
		s.Agent = "-" // a command step, a loop or a gate
	}
	switch {
	case s.ItemCounts != nil:
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", pad, s.ID, s.Status, s.Agent, itemCounts(s), "-", clip(deadSummary(s), 70))
	case s.Approval != nil:
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", pad, s.ID, s.Status, "-", "gate", "-", clip(approvalLine(s.Approval), 70))
	case len(s.Iterations) > 0:
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", pad, s.ID, s.Status, "-", plural(len(s.Iterations), "iteration", "iterations"), "-", clip(lastErr, 70))
		for _, it := range s.Iterations {
			until := "-"
			if len(it.Until) > 0 {
				until = untilText(it.Until)
			}
			fmt.Fprintf(tw, "%s  iteration %d\t%s\t%s\t%s\t%s\t%s\n", pad, it.Iteration, it.Status, "-", "-", "-", clip(until, 70))
			for _, inner := range it.Steps {
				summaryRows(tw, inner, pad+"    ")
			}
		}
	default:
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d/%d\t%s\t%s\n", pad, s.ID, s.Status, s.Agent, s.AttemptsUsed, s.MaxAttempts, ts(s.NextRetryAt), clip(lastErr, 70))
	}
}

// printWaitingFor lists the approval gates the run waits on, each with its
// prompt and the commands that answer it.
func printWaitingFor(w io.Writer, gates []history.WaitingReport) {
	for _, g := range gates {
		fmt.Fprintf(w, "\nwaiting for approval of %s since %s", g.Step, g.Since.UTC().Format(time.RFC3339))
		if g.TimeoutAt != nil {
			fmt.Fprintf(w, " (times out at %s)", ts(g.TimeoutAt))
		}
		fmt.Fprintf(w, ":\n%s\n%s\n", indent(cleanLines(g.Prompt)), answerHint(g.Step))
	}
}

// approvalLine says where a gate stands: waiting since when, or the
// decision with who took it and the comment.
func approvalLine(a *history.ApprovalReport) string {
	switch a.Decision {
	case history.ApprovalWaiting:
		return "waiting for approval since " + a.RequestedAt.UTC().Format(time.RFC3339)
	case history.ApprovalTimedOut:
		return "no decision before " + ts(a.TimeoutAt)
	}
	line := fmt.Sprintf("%s by %s at %s", a.Decision, dash(clean(a.By, maxQuote)), ts(a.At))
	if a.Comment != "" {
		line += ": " + clean(firstLine(a.Comment), maxQuote)
	}
	return line
}

// untilText says what an iteration's until decision was: the expression,
// its value and what it read.
func untilText(raw json.RawMessage) string {
	var d history.Decision
	if json.Unmarshal(raw, &d) != nil {
		return string(raw)
	}
	line := "until " + d.Until
	if d.Value != nil {
		line += fmt.Sprintf(" was %v", *d.Value)
	}
	if len(d.Read) > 0 {
		b, _ := json.Marshal(d.Read)
		line += " (read " + string(b) + ")"
	}
	return line
}

// printDeliveries shows one line per notification of the run to one
// target: nothing for a run without.
func printDeliveries(w io.Writer, ds []history.DeliveryReport) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(w, "\nnotifications:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT\tTARGET\tSTATUS\tTRIES\tWHEN\tLAST ERROR")
	for _, d := range ds {
		when := ts(d.DeliveredAt)
		if d.NextTryAt != nil {
			when = "next " + ts(d.NextTryAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Event, d.Target, d.Status, d.Attempts, when, clip(d.LastError, 70))
	}
	tw.Flush()
}

// lastError is the first line of the latest error among attempts, or ""
// once the step or item succeeded.
func lastError(status checkpoint.StepStatus, attempts []history.AttemptReport) string {
	if status == checkpoint.StepSucceeded {
		return ""
	}
	last := ""
	for _, a := range attempts {
		if a.Error != "" {
			last = firstLine(a.Error)
		}
	}
	return last
}

// itemCounts shows a map step's items by status: "3 items: 2 succeeded, 1 failed".
func itemCounts(s history.StepReport) string {
	total := 0
	var parts []string
	for _, st := range []checkpoint.StepStatus{checkpoint.StepSucceeded, checkpoint.StepRunning, checkpoint.StepWaiting,
		checkpoint.StepPending, checkpoint.StepFailed} {
		if n := s.ItemCounts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
			total += n
		}
	}
	return fmt.Sprintf("%d items: %s", total, strings.Join(parts, ", "))
}

// deadSummary names the dead items of a map step, for the summary table.
func deadSummary(s history.StepReport) string {
	if len(s.Dead) == 0 {
		return ""
	}
	return fmt.Sprintf("%d dead, first %s: %s", len(s.Dead), s.Dead[0].Key, s.Dead[0].Signature)
}

// itemAsStep shows one item of a map step as the step-shaped history that
// printStep and printAttempt read; nil when the step has no such item.
func itemAsStep(s *history.StepReport, key string) *history.StepReport {
	for _, it := range s.Items {
		if it.Key == key {
			return &history.StepReport{ID: s.ID + "[" + key + "]", Status: it.Status, Agent: s.Agent,
				AttemptsUsed: it.AttemptsUsed, MaxAttempts: it.MaxAttempts, NextRetryAt: it.NextRetryAt,
				SessionID: it.SessionID, CostUSD: it.CostUSD, Turns: it.Turns, Handoff: it.Handoff, Attempts: it.Attempts}
		}
	}
	return nil
}

func printStep(w io.Writer, s *history.StepReport) {
	if s.ItemCounts != nil {
		fmt.Fprintf(w, "map step %s  %s  agent %s  %s\n", s.ID, s.Status, s.Agent, itemCounts(*s))
		if s.Handoff != "" {
			fmt.Fprintf(w, "handoff %s\n", s.Handoff)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tSTATUS\tATTEMPTS\tNEXT RETRY\tLAST ERROR")
		for _, it := range s.Items {
			lastErr := lastError(it.Status, it.Attempts)
			fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\n", clean(it.Key, maxQuote), it.Status, it.AttemptsUsed, it.MaxAttempts, ts(it.NextRetryAt), clip(lastErr, 70))
		}
		tw.Flush()
		fmt.Fprintf(w, "\none item's attempts: cadence inspect --step %s --item KEY\n", s.ID)
		return
	}
	if len(s.Iterations) > 0 {
		printLoop(w, s)
		return
	}
	if s.Approval != nil {
		printGate(w, s)
		return
	}
	fmt.Fprintf(w, "step %s  %s  agent %s  attempts %d/%d  session %s\n", clean(s.ID, maxQuote), s.Status, dash(s.Agent), s.AttemptsUsed, s.MaxAttempts, dash(s.SessionID))
	if len(s.Decision) > 0 {
		fmt.Fprintf(w, "decision %s\n", clean(decisionLine(s.Decision), maxErrorLine))
	}
	if s.Handoff != "" {
		fmt.Fprintf(w, "handoff %s\n", s.Handoff)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tKIND\tSTATUS\tCLASS\tSTARTED\tPID\tEXIT\tDELAY\tREPAIRS\tCHECKS\tERROR")
	for _, a := range s.Attempts {
		pid, exit, delay := "-", "-", "-"
		if a.PID != nil {
			pid = fmt.Sprint(*a.PID)
		}
		if a.ExitCode != nil {
			exit = fmt.Sprint(*a.ExitCode)
		}
		if a.DelayMS != nil {
			delay = (time.Duration(*a.DelayMS) * time.Millisecond).String()
		}
		checks := make([]string, len(a.Checks))
		for i, c := range a.Checks {
			checks[i] = c.Name + " " + c.Status
		}
		msg := firstLine(a.Error)
		if msg == "" && a.Warning != "" {
			msg = "WARNING: " + a.Warning
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.N, a.Kind, a.Status, dash(a.Class),
			a.StartedAt.UTC().Format("15:04:05"), pid, exit, delay, dash(strings.Join(a.Repairs, ",")),
			dash(strings.Join(checks, ", ")), clip(msg, 90))
	}
	tw.Flush()
}

// printLoop shows a loop step: its iterations, each with its until and
// its inner steps.
func printLoop(w io.Writer, s *history.StepReport) {
	fmt.Fprintf(w, "loop step %s  %s  %s\n", s.ID, s.Status, plural(len(s.Iterations), "iteration", "iterations"))
	if s.Handoff != "" {
		fmt.Fprintf(w, "handoff %s\n", s.Handoff)
	}
	if msg := lastError(s.Status, s.Attempts); msg != "" {
		fmt.Fprintf(w, "error   %s\n", clean(msg, maxErrorLine))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tAGENT\tATTEMPTS\tNEXT RETRY\tLAST ERROR")
	for _, it := range s.Iterations {
		until := "-"
		if len(it.Until) > 0 {
			until = untilText(it.Until)
		}
		fmt.Fprintf(tw, "iteration %d\t%s\t-\t-\t-\t%s\n", it.Iteration, it.Status, clip(until, 70))
		for _, inner := range it.Steps {
			summaryRows(tw, inner, "    ")
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\none iteration: cadence inspect --step %s --iteration N\n", s.ID)
}

// printGate shows an approval gate: its prompt, and the decision or how to
// take it.
func printGate(w io.Writer, s *history.StepReport) {
	a := s.Approval
	fmt.Fprintf(w, "gate %s  %s", s.ID, s.Status)
	if a.Decision != string(s.Status) {
		fmt.Fprintf(w, "  %s", a.Decision)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "reached   %s\n", a.RequestedAt.UTC().Format(time.RFC3339))
	if a.TimeoutAt != nil {
		fmt.Fprintf(w, "timeout   %s\n", ts(a.TimeoutAt))
	}
	if a.At != nil {
		fmt.Fprintf(w, "decided   %s by %s\n", ts(a.At), dash(clean(a.By, maxQuote)))
	}
	if a.Comment != "" {
		fmt.Fprintf(w, "comment:\n%s\n", indent(cleanLines(a.Comment)))
	}
	if s.Handoff != "" {
		fmt.Fprintf(w, "handoff   %s\n", s.Handoff)
	}
	fmt.Fprintf(w, "prompt:\n%s\n", indent(cleanLines(a.Prompt)))
	if a.Decision == history.ApprovalWaiting && s.Status == "waiting" {
		fmt.Fprintf(w, "\n%s\n", answerHint(s.ID))
	}
}

func printAttempt(w io.Writer, runID string, s *history.StepReport, a history.AttemptReport) {
	fmt.Fprintf(w, "run %s  step %s  attempt %d (%s)  %s\n", runID, clean(s.ID, maxQuote), a.N, a.Kind, a.Status)
	fmt.Fprintf(w, "started   %s\nfinished  %s\n", a.StartedAt.UTC().Format(time.RFC3339), ts(a.FinishedAt))
	if a.PID != nil {
		fmt.Fprintf(w, "pid       %d\n", *a.PID)
	} else {
		fmt.Fprintln(w, "pid       -")
	}
	if a.ExitCode != nil {
		fmt.Fprintf(w, "exit code %d\n", *a.ExitCode)
	}
	fmt.Fprintf(w, "session   %s\n", dash(a.SessionID))
	fmt.Fprintf(w, "output    %s\n", dash(a.OutputFile))
	if a.Class != "" {
		fmt.Fprintf(w, "class     %s\n", a.Class)
	}
	switch {
	case a.Provenance != "" && a.Status == "succeeded":
		fmt.Fprintf(w, "handoff   from %s\n", a.Provenance)
	case a.Provenance != "":
		fmt.Fprintf(w, "found in  %s\n", a.Provenance)
	}
	if len(a.Repairs) > 0 {
		fmt.Fprintf(w, "repairs   %s\n", strings.Join(a.Repairs, ", "))
	}
	if a.Snapshot != "" && a.SnapshotAfter != "" {
		fmt.Fprintf(w, "changed   %s (cadence diff shows them)\n", history.ChangedSummary(a.FilesChanged))
	}
	if a.FailedHandoff != "" {
		fmt.Fprintf(w, "record    %s\n", a.FailedHandoff)
	}
	if a.Warning != "" {
		fmt.Fprintf(w, "warning   %s\n", clean(a.Warning, maxErrorLine))
	}
	if a.NextRetryAt != nil {
		fmt.Fprintf(w, "retry at  %s (delay %s)\n", ts(a.NextRetryAt), time.Duration(*a.DelayMS)*time.Millisecond)
	}
	if a.Error != "" {
		fmt.Fprintf(w, "\nerror:\n%s\n", indent(cleanLines(a.Error)))
	}
	if a.Details != "" {
		var d struct{ Details string }
		if json.Unmarshal([]byte(a.Details), &d) == nil && d.Details != "" && d.Details != a.Error {
			fmt.Fprintf(w, "\ndiagnosis:\n%s\n", indent(cleanLines(d.Details)))
		}
	}
	if len(a.Checks) > 0 {
		fmt.Fprintln(w, "\nchecks:")
		for _, c := range a.Checks {
			how := "-"
			switch {
			case c.TimedOut:
				how = "timed out"
			case c.ExitCode != nil:
				how = fmt.Sprintf("exit %d", *c.ExitCode)
			case c.Signal != "":
				how = "signal " + c.Signal
			}
			took := (time.Duration(c.DurationMS) * time.Millisecond).String()
			fmt.Fprintf(w, "  check %s  %s  %s  %s  %s\n    %s\n", c.Name, c.Status, how, took, dash(c.OutputFile), c.Command)
			if c.Tail != "" && c.Status == "failed" {
				fmt.Fprintf(w, "%s\n", "    "+strings.ReplaceAll(cleanLines(c.Tail), "\n", "\n    "))
			}
		}
	}
	fmt.Fprintf(w, "\nprompt:\n%s\n", indent(cleanLines(a.Prompt)))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip makes s a table cell of at most n characters: cleaned for the
// terminal (clean), on one line, the rest cut.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if c := clean(s, n); utf8.RuneCountInString(c) <= n {
		return c
	}
	return clean(s, n-1) // and "…"
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// decisionLine says what a step's committed decision was (SPEC §16.4):
// its when and the value it had, with what it read, or the skipped steps
// it was skipped for.
func decisionLine(raw json.RawMessage) string {
	var d history.Decision
	if json.Unmarshal(raw, &d) != nil {
		return string(raw)
	}
	if d.Value == nil {
		return "skipped: " + d.Why()
	}
	line := fmt.Sprintf("when %s was %v", d.When, *d.Value)
	if len(d.Read) > 0 {
		b, _ := json.Marshal(d.Read)
		line += " (read " + string(b) + ")"
	}
	return line
}

// cleanLines cleans each line of a text for a terminal, as clean does,
// keeping its lines and their indentation; a line longer than a
// screenful is cut.
func cleanLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		text := strings.TrimLeft(l, " \t")
		lines[i] = strings.Repeat(" ", len(l)-len(text)) + clean(text, 2000)
	}
	return strings.Join(lines, "\n")
}
