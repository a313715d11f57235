package ghsummary

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/shellquote"
)

// Run is what a summary is made from: the run's stored history and how
// the process that ran it ended.
type Run struct {
	Report *history.Report
	// Dir is the project directory as the commands shown should name it.
	Dir string
	// Outcome is the process's status output (Outcome* constants).
	Outcome string
	// Now ends the duration of a run that has not finished.
	Now time.Time
}

// Markdown renders the job summary of a run: a heading with the outcome,
// the run's totals, one table row per step instance, the gates waiting
// with the commands that answer them, and each failure's error and
// diagnosis.
func Markdown(r Run) string {
	var b strings.Builder
	rep := r.Report
	fmt.Fprintf(&b, "## cadence: run %s %s\n\n", code(rep.Run.ID), text(r.Outcome, maxCell))
	end := r.Now
	if rep.Run.FinishedAt != nil {
		end = *rep.Run.FinishedAt
	}
	fmt.Fprintf(&b, "Workflow %s · started %s · %s · cost %s\n\n", code(rep.Run.Workflow),
		rep.Run.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), duration(end.Sub(rep.Run.StartedAt)), runCost(rep.Run))
	us := units(rep.Steps)
	if len(us) > 0 {
		b.WriteString("| step | status | attempts | duration | cost | tokens in / out |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		for i, u := range us {
			if i == maxRows {
				fmt.Fprintf(&b, "\n%d more rows; see: %s\n", len(us)-maxRows, code("cadence inspect "+shellquote.Word(r.Dir)))
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cellCode(u.ID), text(status(u), maxCell),
				attempts(u), unitDuration(u), unitCost(u), tokens(u))
		}
		b.WriteString("\n")
	}
	gates(&b, r)
	failures(&b, us)
	return b.String()
}

// A job summary is at most 1 MiB (GitHub refuses a larger one): the table
// and the failures are cut at these many, which with maxBlock and maxCell
// keeps a summary well under it.
const (
	maxRows     = 500
	maxFailures = 30
)

// countFailed counts the failed units that ran an attempt.
func countFailed(us []unit) int {
	n := 0
	for _, u := range us {
		if u.Status == "failed" && u.last() != nil {
			n++
		}
	}
	return n
}

// gates lists the approval gates the run waits on, each with the commands
// that answer it and continue the run.
func gates(b *strings.Builder, r Run) {
	w := r.Report.Run.WaitingFor
	if len(w) == 0 {
		return
	}
	b.WriteString("### Waiting for approval\n\n")
	for _, g := range w {
		fmt.Fprintf(b, "- %s since %s", code(g.Step), g.Since.UTC().Format("2006-01-02 15:04:05 UTC"))
		if g.TimeoutAt != nil {
			fmt.Fprintf(b, ", times out at %s", g.TimeoutAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if p := oneLine(g.Prompt); p != "" {
			fmt.Fprintf(b, ": %s", text(p, maxCell))
		}
		fmt.Fprintf(b, "\n  - approve: %s\n  - reject: %s\n",
			code(fmt.Sprintf("cadence approve %s %s --run %s --resume", shellquote.Word(g.Step), shellquote.Word(r.Dir), r.Report.Run.ID)),
			code(fmt.Sprintf("cadence reject %s %s --run %s --comment TEXT --resume", shellquote.Word(g.Step), shellquote.Word(r.Dir), r.Report.Run.ID)))
	}
	b.WriteString("\n")
}

// failures shows, for each failed unit, its last attempt's class, error
// and diagnosis in code blocks that the text cannot close.
func failures(b *strings.Builder, us []unit) {
	first, shown := true, 0
	for _, u := range us {
		a := u.last()
		if u.Status != "failed" || a == nil {
			continue
		}
		if shown == maxFailures {
			fmt.Fprintf(b, "%d more failed; see: %s\n\n", countFailed(us)-maxFailures, code("cadence inspect"))
			return
		}
		shown++
		if first {
			b.WriteString("### Failures\n\n")
			first = false
		}
		fmt.Fprintf(b, "#### %s failed after %s", code(u.ID), attemptsWord(u.Used))
		if a.Class != "" {
			fmt.Fprintf(b, " (%s)", text(a.Class, maxCell))
		}
		b.WriteString("\n\n")
		body := block(a.Error)
		if d := diagnosis(a.Details); d != "" && d != strings.TrimSpace(a.Error) {
			body = block(a.Error + "\n\n" + d)
		}
		if body == "" {
			body = "(no error recorded)"
		}
		f := fence(body)
		fmt.Fprintf(b, "%s\n%s\n%s\n\n", f, body, f)
		fmt.Fprintf(b, "See: %s\n\n", code(fmt.Sprintf("cadence inspect --step %s --attempt %d", shellquote.Word(baseID(u.ID)), a.N)))
	}
}

// cellCode is code for a table cell: GFM splits cells at a pipe even
// inside a code span unless it is escaped.
func cellCode(s string) string {
	return strings.ReplaceAll(code(s), "|", `\|`)
}

// baseID is the step row a unit's id names: a map item's step.
func baseID(id string) string {
	if i := strings.IndexByte(id, '['); i > 0 {
		return id[:i]
	}
	return id
}

// diagnosis is the diagnosis stored in an attempt's details, "" when none.
func diagnosis(details string) string {
	if details == "" {
		return ""
	}
	var d struct{ Details string }
	if json.Unmarshal([]byte(details), &d) != nil {
		return ""
	}
	return strings.TrimSpace(d.Details)
}

func status(u unit) string {
	if len(u.Items) == 0 {
		return string(u.Status)
	}
	var parts []string
	for _, s := range []checkpoint.StepStatus{checkpoint.StepSucceeded, checkpoint.StepFailed, checkpoint.StepRunning,
		checkpoint.StepWaiting, checkpoint.StepPending, checkpoint.StepSkipped} {
		if n := u.Items[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return string(u.Status) + " (items: " + strings.Join(parts, ", ") + ")"
}

func attempts(u unit) string {
	if len(u.Items) > 0 || len(u.Attempts) == 0 {
		return "–"
	}
	if u.Max > 0 {
		return fmt.Sprintf("%d / %d", u.Used, u.Max)
	}
	return fmt.Sprint(u.Used)
}

func attemptsWord(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func unitDuration(u unit) string {
	if u.Start.IsZero() {
		return "–"
	}
	return duration(u.End.Sub(u.Start))
}

// duration rounds d to a tenth of a second under a minute, to the second
// above.
func duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func unitCost(u unit) string {
	switch {
	case u.Start.IsZero():
		return "–"
	case u.CostUnknown:
		return "unknown"
	}
	return fmt.Sprintf("$%.4f", u.Cost)
}

func runCost(r history.RunReport) string {
	if !r.CostKnown {
		return "unknown"
	}
	s := fmt.Sprintf("$%.4f", r.CostUSD)
	if r.CostUnknown > 0 {
		s += fmt.Sprintf(" (%s reported none)", attemptsWord(r.CostUnknown))
	}
	return s
}

func tokens(u unit) string {
	switch {
	case u.Start.IsZero():
		return "–"
	case u.TokUnknown:
		return "unknown"
	}
	return fmt.Sprintf("%d / %d", u.In, u.Out)
}
