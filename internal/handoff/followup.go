package handoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// FollowupInput is what a follow-up prompt is built from.
type FollowupInput struct {
	// Task is the step's original rendered prompt.
	Task string
	// Diagnosis is what was wrong with the previous attempt.
	Diagnosis *Diagnosis
	// HandoffPath is where the agent must write (file handoffs); "" when
	// the answer is the agent's final message.
	HandoffPath string
	// Schema is the step's handoff schema, or nil.
	Schema *Schema
	// Attempt is the attempt about to run (2 is the first retry), out of
	// MaxAttempts.
	Attempt     int
	MaxAttempts int
}

const (
	// maxInlineSchema is the largest schema shown in a prompt; a larger
	// one is referred to by its path.
	maxInlineSchema = 2 << 10
	// maxTaskLen bounds the original task repeated in the first retry.
	maxTaskLen = 4000
)

// BuildFollowup writes the prompt that continues the agent's session after
// a failed handoff (SPEC §6.2): what was wrong, where to write, the schema,
// and the instruction to rewrite the complete JSON.
//
// Prompts shrink as attempts go on, because the session already holds the
// earlier ones: the first retry repeats the original task (shortened when
// long); middle retries leave it out; the last attempt gets only the error
// and a one-line template of the expected keys. The text depends only on
// the input, so the same failure always produces the same prompt.
func BuildFollowup(in FollowupInput) string {
	last := in.MaxAttempts > 0 && in.Attempt >= in.MaxAttempts
	var b strings.Builder
	what := "Your previous answer could not be used as the handoff."
	switch {
	case in.Diagnosis != nil && in.Diagnosis.Class == ClassCheck:
		what = "Your previous answer was valid JSON, but a check of your work failed."
	case in.Diagnosis != nil && !in.Diagnosis.Class.IsHandoffFailure():
		what = "Your previous attempt ended without a usable handoff."
	}
	switch {
	case last:
		fmt.Fprintf(&b, "Last attempt (%d of %d). %s\n\n", in.Attempt, in.MaxAttempts, what)
	case in.MaxAttempts > 0:
		fmt.Fprintf(&b, "%s This is attempt %d of %d.\n\n", what, in.Attempt, in.MaxAttempts)
	default:
		fmt.Fprintf(&b, "%s This is attempt %d.\n\n", what, in.Attempt)
	}
	writeProblem(&b, in.Diagnosis)
	b.WriteString("\n")
	if last {
		if in.Diagnosis != nil && in.Diagnosis.Class == ClassCheck {
			b.WriteString("Fix the cause so that the check passes. ")
		}
		writeLastInstructions(&b, in)
		return b.String()
	}
	if in.Diagnosis != nil && in.Diagnosis.Class == ClassCheck {
		b.WriteString("Fix the cause of the failure in the project so that the check passes. ")
		b.WriteString("Then give the complete JSON handoff again, updated for what you changed.\n\n")
	}
	writeDestination(&b, in.HandoffPath)
	b.WriteString("\n")
	if in.Schema != nil {
		writeSchema(&b, in.Schema)
		b.WriteString("\n")
	}
	b.WriteString("Rewrite the complete, corrected JSON: the whole value, not a patch or a list of changes, with no prose and no markdown fences around it.\n")
	if in.Attempt <= 2 && strings.TrimSpace(in.Task) != "" {
		b.WriteString("\nYour original task, for reference:\n----\n")
		b.WriteString(trimTask(in.Task))
		b.WriteString("\n----\n")
	}
	return b.String()
}

// writeProblem says what was wrong, with every detail the agent needs to
// fix it.
func writeProblem(b *strings.Builder, d *Diagnosis) {
	if d == nil {
		b.WriteString("What was wrong: the handoff was rejected.\n")
		return
	}
	fmt.Fprintf(b, "What was wrong (%s): ", d.Class)
	if d.Provenance != "" && (d.Class == ClassEmpty || d.Class == ClassInvalidJSON) {
		// A value found but refused as the handoff (code, or prose whose
		// structure had to be guessed): the diagnosis quotes what was
		// read and asks for the JSON alone.
		fmt.Fprintf(b, "%s\n", oneLine(d.Details))
		return
	}
	switch d.Class {
	case ClassMissing:
		fmt.Fprintf(b, "%s\n", lowerFirst(oneLine(d.Details)))
	case ClassEmpty:
		if d.Path != "" {
			fmt.Fprintf(b, "the handoff file %s contains no JSON value.\n", d.Path)
		} else {
			b.WriteString("your answer contained no JSON value.\n")
		}
	case ClassInvalidJSON:
		if d.Line > 0 {
			fmt.Fprintf(b, "the JSON could not be parsed: line %d, column %d: %s.\n", d.Line, d.Column, firstSentence(d.Details))
		} else {
			fmt.Fprintf(b, "the JSON could not be parsed: %s.\n", firstSentence(d.Details))
		}
		writeExcerpt(b, "Near", d.Excerpt)
	case ClassTruncated:
		if d.Line > 0 {
			fmt.Fprintf(b, "the JSON was cut off: the output stops at line %d, column %d, before the value is closed.\n", d.Line, d.Column)
		} else {
			b.WriteString("the JSON was cut off before the value is closed.\n")
		}
		writeExcerpt(b, "It ends with", d.Excerpt)
		b.WriteString("Write the whole value; if it is long, make it more concise rather than stopping early.\n")
	case ClassSchema:
		b.WriteString("the JSON does not match the schema.\n")
		for _, v := range d.Violations {
			fmt.Fprintf(b, "- %s\n", v.String())
		}
		if len(d.Missing) > 0 {
			fmt.Fprintf(b, "Missing required fields: %s.\n", strings.Join(d.Missing, ", "))
		}
		if len(d.ExpectedKeys) > 0 {
			fmt.Fprintf(b, "Expected top-level keys: %s. Your top-level keys: %s.\n",
				listOrNone(d.ExpectedKeys), listOrNone(d.ActualKeys))
		}
	case ClassCheck:
		writeCheck(b, d.Check)
	default:
		fmt.Fprintf(b, "%s\n", lowerFirst(oneLine(d.Details)))
	}
}

// writeCheck says which check failed, how, and quotes the end of its
// output, where a test runner or a compiler puts what went wrong.
func writeCheck(b *strings.Builder, c *CheckFailure) {
	if c == nil {
		b.WriteString("a check failed.\n")
		return
	}
	fmt.Fprintf(b, "the check %q (`%s`) %s.\n", c.Name, c.Command, c.Outcome())
	out := strings.TrimRight(c.Output, "\n")
	if strings.TrimSpace(out) == "" {
		b.WriteString("It printed nothing.\n")
		return
	}
	n := strings.Count(out, "\n") + 1
	if n == 1 {
		b.WriteString("The last line of its output:\n")
	} else {
		fmt.Fprintf(b, "The last %d lines of its output:\n", n)
	}
	fence := "```"
	for strings.Contains(out, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "%s\n%s\n%s\n", fence, out, fence)
}

// writeExcerpt shows the text around a parse error or the end of a
// cut-off value on one line.
func writeExcerpt(b *strings.Builder, label, excerpt string) {
	ex := showExcerpt(excerpt)
	if ex == "" {
		return
	}
	if strings.Contains(ex, excerptMarker) {
		label += " (" + excerptMarker + " marks the spot)"
	}
	fmt.Fprintf(b, "%s: %s\n", label, ex)
}

// writeDestination says where the JSON must go.
func writeDestination(b *strings.Builder, path string) {
	if path != "" {
		fmt.Fprintf(b, "Where to write: write the JSON to the file %s, replacing its whole content.\n", path)
	} else {
		b.WriteString("Where to write: reply with only the JSON object as your final message.\n")
	}
}

// writeSchema shows the schema inline when small, else its path.
func writeSchema(b *strings.Builder, s *Schema) {
	if s == nil {
		return
	}
	if inline, ok := inlineSchema(s.Raw); ok {
		b.WriteString("The JSON must validate against this JSON Schema:\n")
		b.WriteString(inline)
		b.WriteString("\n")
		return
	}
	fmt.Fprintf(b, "The JSON must validate against the JSON Schema in %s; read it before answering.\n", s.Path)
}

// inlineSchema returns the schema as written when it is small enough,
// else its compact form when that is.
func inlineSchema(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) <= maxInlineSchema {
		return string(raw), true
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err == nil && buf.Len() <= maxInlineSchema {
		return buf.String(), true
	}
	return "", false
}

// writeLastInstructions writes the minimal ending of a last attempt: where
// to write and a template of the expected keys.
func writeLastInstructions(b *strings.Builder, in FollowupInput) {
	if in.HandoffPath != "" {
		fmt.Fprintf(b, "Write only the complete JSON to the file %s", in.HandoffPath)
	} else {
		b.WriteString("Reply with only the complete JSON object as your final message")
	}
	tmpl, optional := template(in.Schema)
	if tmpl == "" {
		b.WriteString(", with no prose around it.\n")
		return
	}
	b.WriteString(", in this shape:\n")
	b.WriteString(tmpl)
	b.WriteString("\n")
	if len(optional) > 0 {
		fmt.Fprintf(b, "Optional keys: %s.\n", strings.Join(optional, ", "))
	}
}

// template renders the schema's top-level keys with their types, as in
// {"tasks": <array>, "success": <boolean>}, and lists the optional ones.
func template(s *Schema) (tmpl string, optional []string) {
	if s == nil || len(s.fields) == 0 {
		return "", nil
	}
	parts := make([]string, 0, len(s.fields))
	for _, f := range s.fields {
		typ := f.typ
		if typ == "" {
			typ = "value"
		}
		key, _ := json.Marshal(f.name)
		parts = append(parts, fmt.Sprintf("%s: <%s>", key, typ))
		if !f.required {
			optional = append(optional, f.name)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}", optional
}

// trimTask shortens a long task, keeping its beginning.
func trimTask(task string) string {
	task = strings.TrimSpace(task)
	if len(task) <= maxTaskLen {
		return task
	}
	return string(cutBytes([]byte(task), maxTaskLen)) + "\n[… the rest of the task is omitted …]"
}

// lowerFirst lowers the first letter of a sentence that follows a colon,
// unless it starts an acronym ("HTTP 529").
func lowerFirst(s string) string {
	if len(s) < 2 || s[0] < 'A' || s[0] > 'Z' || (s[1] >= 'A' && s[1] <= 'Z') {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
