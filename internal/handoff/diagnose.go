package handoff

import (
	"fmt"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/handoff/provenance"
)

// Diagnosis explains why an attempt failed: exactly one class, and the
// detail SPEC §5 records for that class. It is what the failed-handoff
// record, the follow-up prompt and inspect show.
type Diagnosis struct {
	Class Class
	// Details is one human-readable paragraph with the specifics below.
	Details string

	// Violations lists every schema violation (class schema).
	Violations []Violation
	// Missing lists the required top-level fields the value lacks.
	Missing []string
	// ExpectedKeys are the schema's top-level properties, ActualKeys the
	// value's top-level keys (sorted).
	ExpectedKeys, ActualKeys []string

	// Line, Column and Excerpt locate a parse error (invalid_json) or the
	// end of a cut-off value (truncated). Excerpt is the text around it.
	Line, Column int
	Excerpt      string

	// OutputSize is the size of the output in bytes, OutputSample its first
	// 500 bytes (cut on a character boundary).
	OutputSize   int64
	OutputSample string

	// Path is the handoff file that was expected (class missing).
	Path string
	// Check is the check that failed (class check).
	Check *CheckFailure `json:",omitempty"`
	// Provenance is where the value the diagnosis is about was found
	// (prose, a code span, …), when one was found.
	Provenance provenance.Kind `json:",omitempty"`
}

// CheckFailure is what a failed check leaves for the follow-up prompt, the
// failed-handoff record and inspect (SPEC §11).
type CheckFailure struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// ExitCode is the check's exit code; nil when a signal ended it.
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// TimedOut reports that it ran past its timeout and was killed.
	TimedOut   bool   `json:"timed_out"`
	Timeout    string `json:"timeout,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Output is the last lines of its output (feedback_lines of them).
	Output     string `json:"output"`
	OutputFile string `json:"output_file"`
}

// CheckDiagnosis diagnoses a failed check: class check, with the check's
// fields and a one-line summary.
func CheckDiagnosis(c CheckFailure) *Diagnosis {
	return &Diagnosis{Class: ClassCheck, Check: &c, Details: "The check " + c.Name + " " + c.Outcome() + "."}
}

// Outcome says how a check ended: "exited with code 1 after 2.3s", "ran
// past its timeout of 10m0s and was killed".
func (c CheckFailure) Outcome() string {
	took := (time.Duration(c.DurationMS) * time.Millisecond).Round(time.Millisecond)
	switch {
	case c.TimedOut:
		return fmt.Sprintf("ran past its timeout of %s and was killed", c.Timeout)
	case c.ExitCode != nil:
		return fmt.Sprintf("exited with code %d after %s", *c.ExitCode, took)
	case c.Signal != "":
		return fmt.Sprintf("was ended by signal %s after %s", c.Signal, took)
	}
	return fmt.Sprintf("failed after %s", took)
}

// sampleLen is how much of the output a diagnosis keeps (SPEC §5).
const sampleLen = 500

// Diagnose records a failure decided outside Check: exit_nonzero,
// transient, timeout, stuck, interrupted, help, budget, or too_large found
// while capturing.
func Diagnose(class Class, details string) *Diagnosis {
	return &Diagnosis{Class: class, Details: details}
}

// Summary renders the diagnosis on one line, such as
// "schema: /success: expected boolean, got string". It is used as the
// envelope's previous_errors and in logs.
func (d *Diagnosis) Summary() string {
	if d == nil {
		return ""
	}
	var s string
	switch {
	case d.Class == ClassSchema && len(d.Violations) > 0:
		s = d.Violations[0].String()
		if n := len(d.Violations) - 1; n == 1 {
			s += " (and 1 more violation)"
		} else if n > 1 {
			s += fmt.Sprintf(" (and %d more violations)", n)
		}
	case d.Class == ClassTruncated && d.Line > 0:
		s = fmt.Sprintf("the value is cut off at line %d, column %d", d.Line, d.Column)
	case d.Class == ClassCheck && d.Check != nil:
		s = d.Check.Name + " " + d.Check.Outcome()
	case d.Class == ClassInvalidJSON && d.Line > 0:
		s = fmt.Sprintf("line %d, column %d: %s", d.Line, d.Column, firstSentence(d.Details))
	default:
		s = firstLine(d.Details)
	}
	if s == "" {
		return string(d.Class)
	}
	return string(d.Class) + ": " + cutString(s, 300)
}

// firstLine returns the first line of s, trimmed, without a final period.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSuffix(strings.TrimSpace(s), ".")
}

// firstSentence returns the first sentence of s, without its period.
func firstSentence(s string) string {
	s = firstLine(s)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	return s
}

// withOutput fills the output size and sample.
func (d *Diagnosis) withOutput(output []byte) *Diagnosis {
	d.OutputSize = int64(len(output))
	d.OutputSample = string(cutBytes(output, sampleLen))
	return d
}

// emptyDiagnosis: no JSON value at all.
func emptyDiagnosis(output []byte) *Diagnosis {
	d := &Diagnosis{Class: ClassEmpty}
	d.withOutput(output)
	if len(output) == 0 {
		d.Details = "The output is empty."
	} else {
		d.Details = fmt.Sprintf("No JSON value was found in the %d bytes of output.", len(output))
	}
	return d
}

// invalidDiagnosis: JSON-looking text that cannot be parsed or repaired.
func invalidDiagnosis(output []byte, line, col int, msg, excerpt string) *Diagnosis {
	d := &Diagnosis{Class: ClassInvalidJSON, Line: line, Column: col, Excerpt: excerpt}
	d.withOutput(output)
	d.Details = fmt.Sprintf("%s.", strings.TrimSuffix(msg, "."))
	if excerpt != "" {
		d.Details += fmt.Sprintf(" Near: `%s`.", showExcerpt(excerpt))
	}
	return d
}

// truncatedDiagnosis: the value ends before it is complete.
func truncatedDiagnosis(output []byte, line, col int, excerpt string) *Diagnosis {
	d := &Diagnosis{Class: ClassTruncated, Line: line, Column: col, Excerpt: excerpt}
	d.withOutput(output)
	d.Details = "The JSON value is cut off: the output ends before the value is closed."
	if excerpt != "" {
		d.Details += fmt.Sprintf(" It ends with: `%s`.", showExcerpt(excerpt))
	}
	return d
}

// tooLargeDiagnosis: the output exceeds max_bytes.
func tooLargeDiagnosis(size, limit int64) *Diagnosis {
	return &Diagnosis{Class: ClassTooLarge, OutputSize: size,
		Details: fmt.Sprintf("The output is %d bytes, over the limit of %d bytes: raise handoff.max_bytes, or have the agent write its handoff to a file (handoff: {from: file, path: ...}).", size, limit)}
}

// missingDiagnosis: a file handoff that is not there (or not a regular file).
func missingDiagnosis(path, why string) *Diagnosis {
	return &Diagnosis{Class: ClassMissing, Path: path,
		Details: fmt.Sprintf("The handoff file %s %s.", path, why)}
}

// schemaDiagnosis: a parsed value that fails the schema.
func schemaDiagnosis(output []byte, s *Schema, v any, vs []Violation) *Diagnosis {
	d := &Diagnosis{Class: ClassSchema, Violations: vs}
	d.withOutput(output)
	for _, x := range vs {
		if x.Keyword == "required" && x.Pointer == "/" {
			d.Missing = append(d.Missing, x.Expected)
		}
	}
	d.ExpectedKeys = s.Properties()
	if obj, ok := v.(map[string]any); ok {
		d.ActualKeys = sortedKeys(obj)
	}
	var b strings.Builder
	if len(vs) == 1 {
		b.WriteString("The JSON does not match the schema: 1 violation: ")
	} else {
		fmt.Fprintf(&b, "The JSON does not match the schema: %d violations: ", len(vs))
	}
	for i, x := range vs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.String())
	}
	b.WriteString(".")
	if len(d.Missing) > 0 {
		fmt.Fprintf(&b, " Missing required fields: %s.", strings.Join(d.Missing, ", "))
	}
	if len(d.ExpectedKeys) > 0 {
		fmt.Fprintf(&b, " Expected top-level keys: %s; got: %s.", listOrNone(d.ExpectedKeys), listOrNone(d.ActualKeys))
	}
	d.Details = b.String()
	return d
}

// showExcerpt keeps an excerpt on one line by writing line breaks and
// tabs as escapes.
func showExcerpt(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", `\t`).Replace(s)
}

// listOrNone joins names with ", ", or says "none".
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
