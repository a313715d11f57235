package handoff

import (
	"fmt"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff/provenance"
	"github.com/cadence-dev/cadence/internal/handoff/repair"
)

// Provenance is where an accepted handoff came from (SPEC §18): the whole
// output, a json or unlabelled fence, a handoff file, or JSON in prose.
type Provenance = provenance.Kind

// The provenances of an accepted handoff.
const (
	ProvenanceOutput    = provenance.Output
	ProvenanceFenceJSON = provenance.FenceJSON
	ProvenanceFile      = provenance.File
	ProvenanceProse     = provenance.Prose
)

// structural names the repairs that change what is a key, a value or a
// container, or that read code as data: on text meant as JSON they restore
// what the agent meant, but in prose they would make a value out of code
// or sentences (`{ return 'Hello' }` becomes {"return": "Hello"} through
// unquoted_keys and missing_colon). A value in prose that needed one of
// them is accepted only on the schema's evidence (admit). The other
// repairs fix only the lexical surface (quotes, Python literals, commas at
// the end of a list, comments, a truncated end) and are accepted wherever
// a value may be taken from. docs/repair-policy.md gives each its reason.
var structural = map[string]bool{
	repair.MissingColon:      true, // {"a" 1}: which word is the key is a guess
	repair.MissingComma:      true, // [1 2], {"a":1 "b":2}: two members, or prose with two words
	repair.UnquotedValue:     true, // {"a": some words}: a bare value swallows text to the delimiter
	repair.MissingQuote:      true, // where a string ends is a guess
	repair.InnerQuotes:       true, // which quote ends the string is a guess
	repair.MismatchedCloser:  true, // a closer moved or added: nesting is a guess
	repair.RedundantCloser:   true, // a closer dropped: nesting is a guess
	repair.MissingValue:      true, // {"a": } got null: a value invented
	repair.Concatenated:      true, // several values gathered into an array
	repair.Concatenation:     true, // "a" + "b": an expression of code
	repair.FunctionWrapper:   true, // f({...}): a call of code
	repair.Ellipsis:          true, // [1, ...]: a sample, not the data
	repair.StringEncodedJSON: true, // a string became a container
	repair.UnquotedKeys:      true, // {x: 1}: struct literals and object literals of code look so; data quotes its keys
	repair.BacktickQuotes:    true, // `a`: in prose, backticks are markdown code spans
}

// IsStructural reports whether the named repair changes structure (see
// structural), so that it is accepted only on text meant as JSON or on the
// schema's evidence.
func IsStructural(name string) bool { return structural[name] }

// refusal is why a candidate found in the output is not the handoff
// although it parses.
type refusal struct {
	c      candidate
	code   bool     // the value was code: a code span or another language's fence
	empty  bool     // an empty object or array in prose
	scalar bool     // an array or scalar in prose that no schema asked for
	needed []string // the structural repairs a value in prose needed
}

// admit decides whether candidate c, placed in the output, may be the
// handoff (SPEC §18 "Provenance"): code never is; a value meant as JSON
// (the whole output, a json or unlabelled fence, a file) always may be; a
// value in prose may be when it is a non-empty object that needed no
// structural repair, and otherwise only on the schema's evidence: its
// required properties all present with their declared types. A nil
// schema gives no evidence, like {"type": "object"}.
func admit(c candidate, schema *Schema) *refusal {
	k := c.place.Kind
	switch {
	case k.IsCode():
		return &refusal{c: c, code: true}
	case k.MeantAsJSON():
		return nil
	}
	if isEmptyContainer(c.value) {
		return &refusal{c: c, empty: true}
	}
	if evidence(c, schema) {
		return nil
	}
	var needed []string
	for _, r := range c.repairs {
		if structural[r] {
			needed = append(needed, r)
		}
	}
	if len(needed) > 0 {
		return &refusal{c: c, needed: needed}
	}
	if _, obj := c.value.(map[string]any); !obj && !schema.asksForArray(c) {
		return &refusal{c: c, scalar: true}
	}
	return nil
}

// evidence reports whether the schema vouches for c: it requires top-level
// properties and c has them all, with the declared types (c validates).
func evidence(c candidate, schema *Schema) bool {
	return schema != nil && len(schema.Required()) > 0 && len(c.violations) == 0
}

// asksForArray reports whether the schema's top level is an array and c,
// an array, validates: then a list in prose may be what was asked for.
func (s *Schema) asksForArray(c candidate) bool {
	if s == nil || !s.rootArray || len(c.violations) > 0 {
		return false
	}
	_, ok := c.value.([]any)
	return ok
}

// isEmptyContainer reports {} and [].
func isEmptyContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// refusedDiagnosis explains why the value read from the output is not
// taken as the handoff, quoting what was read, so that the follow-up asks
// for the JSON alone in the same session.
func refusedDiagnosis(output []byte, r *refusal) *Diagnosis {
	src := quote(output[r.c.start:min(r.c.end, len(output))], 160)
	got := quote(r.c.json, 160)
	var d *Diagnosis
	switch {
	case r.code:
		what := "code inside an inline code span"
		switch r.c.place.Kind {
		case provenance.CodeFence:
			what = fmt.Sprintf("code inside a ```%s fence", r.c.place.Lang)
		case provenance.Embedded:
			what = "part of a line of code or of a larger value"
		}
		d = &Diagnosis{Class: ClassEmpty, Details: fmt.Sprintf(
			"No handoff was found: the only JSON-like text, `%s`, is %s, and code is never read as the handoff. Reply with the JSON alone, or in a ```json fence.", src, what)}
	case r.empty:
		d = &Diagnosis{Class: ClassEmpty, Details: fmt.Sprintf(
			"No handoff was found: the only JSON-like text is `%s` in prose, an empty value, which is never taken from prose. Reply with the JSON alone, or in a ```json fence.", src)}
	case r.scalar:
		d = &Diagnosis{Class: ClassEmpty, Details: fmt.Sprintf(
			"No handoff was found: the only JSON-like text is `%s` in prose, which is not an object. Reply with the JSON alone, or in a ```json fence.", src)}
	default:
		d = &Diagnosis{Class: ClassInvalidJSON, Details: fmt.Sprintf(
			"I read `%s` from your prose as `%s`, which needed these repairs: %s. JSON in prose is not taken as the handoff when its structure had to be guessed. Reply with the JSON alone, or in a ```json fence.",
			src, got, strings.Join(r.needed, ", "))}
		line, col := lineColumn(output, int64(r.c.start))
		d.Line, d.Column, d.Excerpt = line, col, string(output[r.c.start:min(r.c.end, len(output))])
		d.Excerpt = cutString(d.Excerpt, 200)
	}
	d.Provenance = r.c.place.Kind
	return d.withOutput(output)
}

// quote shows b on one line, cut to at most n bytes.
func quote(b []byte, n int) string {
	s := showExcerpt(string(b))
	if len(s) > n {
		return cutString(s, n) + "…"
	}
	return s
}

// Admit applies the provenance policy, with no schema (the rules of
// {"type": "object"}), to a value the repair package found in output, as
// `cadence repair` does: it returns where the value was found, or the
// diagnosis of why it is not a handoff.
func Admit(output []byte, r repair.Result) (Provenance, *Diagnosis) {
	c, ok := newCandidate(r.JSON, r.Repairs, r.Truncated, nil)
	if !ok {
		return "", invalidDiagnosis(output, 0, 0, "the repaired value does not decode", "")
	}
	c.start, c.end = r.Start, r.End
	c.place = provenance.Scan(output).Of(r.Start, r.End)
	if ref := admit(c, nil); ref != nil {
		return c.place.Kind, refusedDiagnosis(output, ref)
	}
	return c.place.Kind, nil
}
