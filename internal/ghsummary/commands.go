package ghsummary

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// Outcomes of a run or resume process, as the status output names them;
// one per exit code of SPEC §2.
const (
	OutcomeSucceeded   = "succeeded"   // exit 0
	OutcomeFailed      = "failed"      // exit 1
	OutcomeError       = "error"       // exit 2: usage, workflow or state error, nothing executed
	OutcomeInterrupted = "interrupted" // exit 3: resumable
	OutcomeLocked      = "locked"      // exit 4: another process holds the project
	OutcomeWaiting     = "waiting"     // exit 5: waits for an approval gate
)

// Annotation is one ::error or ::warning workflow command.
type Annotation struct {
	Level   string // error or warning
	Title   string
	Message string
}

// maxAnnotation is the longest message, in runes, of an annotation, and
// maxAnnotations the most annotations of one level printed.
const (
	maxAnnotation  = 1000
	maxAnnotations = 10
)

// String is the workflow command on one line: the title and message are
// percent-encoded as the runner decodes them, so that no newline or "::"
// in them can end the command or start another one.
func (a Annotation) String() string {
	msg := []rune(a.Message)
	if len(msg) > maxAnnotation {
		msg = append(msg[:maxAnnotation], '…')
	}
	return fmt.Sprintf("::%s title=%s::%s", a.Level, escapeProperty(a.Title), escapeData(string(msg)))
}

// escapeData encodes a workflow command's message.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty encodes a workflow command's property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// Annotations are an error for each failed step instance or map item,
// with its class, error and diagnosis, and a warning for each attempt that succeeded
// with a warning.
func Annotations(r Run) (out []Annotation) {
	errs, warns := 0, 0
	defer func() {
		// GitHub shows at most 10 of each level per step: the last one
		// says how many more there are.
		if errs > maxAnnotations {
			out = append(out, Annotation{Level: "error", Title: "cadence", Message: fmt.Sprintf("%d more steps failed; see cadence inspect", errs-maxAnnotations)})
		}
		if warns > maxAnnotations {
			out = append(out, Annotation{Level: "warning", Title: "cadence", Message: fmt.Sprintf("%d more warnings; see cadence inspect", warns-maxAnnotations)})
		}
	}()
	add := func(a Annotation, n *int) {
		*n++
		if *n <= maxAnnotations {
			out = append(out, a)
		}
	}
	for _, u := range units(r.Report.Steps) {
		a := u.last()
		if u.Status == "failed" && a != nil {
			msg := strings.TrimSpace(a.Error)
			if a.Class != "" && !strings.HasPrefix(msg, a.Class+":") {
				msg = a.Class + ": " + msg
			}
			if d := diagnosis(a.Details); d != "" && d != strings.TrimSpace(a.Error) {
				msg += "\n" + d
			}
			add(Annotation{Level: "error", Title: "cadence: step " + u.ID + " failed after " + attemptsWord(u.Used),
				Message: msg + "\n(cadence inspect --step " + baseID(u.ID) + fmt.Sprintf(" --attempt %d)", a.N)}, &errs)
		}
		for _, at := range u.Attempts {
			if at.Warning != "" && at.Status == "succeeded" {
				add(Annotation{Level: "warning", Title: fmt.Sprintf("cadence: step %s attempt %d", u.ID, at.N), Message: at.Warning}, &warns)
			}
		}
	}
	return out
}

// Output is one step output.
type Output struct{ Name, Value string }

// Outputs are status, run_id and waiting_gates (the gates waited on, one
// per line; empty when none waits).
func Outputs(outcome string, r *Run) []Output {
	out := []Output{{"status", outcome}}
	id, gates := "", []string{}
	if r != nil && r.Report != nil {
		id = r.Report.Run.ID
		for _, g := range r.Report.Run.WaitingFor {
			gates = append(gates, g.Step)
		}
	}
	return append(out, Output{"run_id", id}, Output{"waiting_gates", strings.Join(gates, "\n")})
}

// FormatOutputs writes outputs in GITHUB_OUTPUT's heredoc form
// (name<<DELIM, value, DELIM), each with a delimiter from newDelim that
// the value does not contain, so a value can hold any text.
func FormatOutputs(outs []Output, newDelim func() string) string {
	var b strings.Builder
	for _, o := range outs {
		d := newDelim()
		for strings.Contains(o.Value, d) || strings.Contains(o.Name, d) {
			d = newDelim()
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", o.Name, d, o.Value, d)
	}
	return b.String()
}

// Delimiter is a random heredoc delimiter.
func Delimiter() string {
	return "ghadelimiter_" + rand.Text()
}
