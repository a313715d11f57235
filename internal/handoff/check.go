package handoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cadence-dev/cadence/internal/handoff/coerce"
	"github.com/cadence-dev/cadence/internal/handoff/extract"
	"github.com/cadence-dev/cadence/internal/handoff/provenance"
	"github.com/cadence-dev/cadence/internal/handoff/repair"
)

// Options are a step's handoff settings (workflow `handoff:`).
type Options struct {
	// Repair enables deterministic repair of JSON that does not parse.
	Repair bool
	// AcceptTruncated accepts a value obtained only by closing truncated
	// output; otherwise such a value is class truncated.
	AcceptTruncated bool
	// MaxBytes bounds the output; larger output is class too_large. 0
	// means no limit beyond the extractor's default value size.
	MaxBytes int64
	// MaxDepth bounds nesting; 0 means the extractor's default.
	MaxDepth int
	// Coerce lets a value that parses but fails its schema be coerced to
	// the one lossless reading the schema accepts (package coerce).
	Coerce bool
}

// Result is the outcome of checking one attempt's output.
type Result struct {
	// OK reports an accepted handoff.
	OK bool
	// JSON is the accepted value, compact (when OK).
	JSON []byte
	// Value is the accepted value decoded with UseNumber (when OK).
	Value any
	// Repairs names every repair applied to the chosen value, in order;
	// coercions come last, as "name@pointer".
	Repairs []string
	// Coercions are the coercions applied to the accepted value.
	Coercions []coerce.Coercion
	// Truncated reports that the chosen value was closed by repair.
	Truncated bool
	// Provenance is where the accepted value was found (when OK): the
	// whole output, a json or unlabelled fence, a handoff file, prose.
	Provenance Provenance
	// Diagnosis explains the failure (when !OK).
	Diagnosis *Diagnosis
}

// candidate is one value that could be the handoff.
type candidate struct {
	json       []byte
	value      any
	repairs    []string
	truncated  bool
	violations []Violation
	start, end int              // the value's offsets in the output
	place      provenance.Place // where in the output it was found
}

// Check runs the handoff pipeline of SPEC §5 on an attempt's output:
// extract, parse strictly, repair if allowed, validate, diagnose.
//
// The handoff is the last complete value in the output; when a schema is
// given and several values are present, it is the last one that validates.
// Only when no strictly valid value validates, and repair is on, is the
// output repaired, and the repaired values are chosen from the same way. A
// value that exists only because repair closed truncated output is
// accepted only with opts.AcceptTruncated. A nil schema accepts any value.
// When the chosen value fails its schema and opts.Coerce is set, the value
// is coerced to the schema if it has exactly one lossless reading that
// validates; the coercions are recorded among the repairs.
func Check(output []byte, schema *Schema, opts Options) Result {
	return check(output, schema, opts, false)
}

// check is Check; file reports a handoff file, whose whole content is
// provenance file rather than output.
func check(output []byte, schema *Schema, opts Options, file bool) Result {
	if opts.MaxBytes > 0 && int64(len(output)) > opts.MaxBytes {
		return failed(tooLargeDiagnosis(int64(len(output)), opts.MaxBytes))
	}
	values, errs, tail := extract.Scan(output, extract.Options{MaxBytes: opts.MaxBytes, MaxDepth: opts.MaxDepth})
	places := provenance.Scan(output)
	j := judge{output: output, schema: schema, places: places, file: file}
	strict := make([]candidate, 0, len(values))
	fragment := fragments(output, values, errs)
	for i, v := range values {
		if fragment[i] {
			continue
		}
		start := int(v.Offset)
		if c, ok := j.candidate(v.Data, nil, false, start, start+len(v.Data)); ok {
			strict = append(strict, c)
		}
	}
	best, ok := choose(strict)
	if ok {
		return accepted(best)
	}

	var repaired []candidate
	var repairErr error
	if opts.Repair {
		results, err := repair.RepairAll(output, repair.Options{MaxDepth: opts.MaxDepth})
		repairErr = err
		for _, r := range results {
			if c, ok := j.candidate(r.JSON, r.Repairs, r.Truncated, r.Start, r.End); ok {
				repaired = append(repaired, c)
			}
		}
		if rb, ok := choose(repaired); ok {
			if rb.truncated && !opts.AcceptTruncated {
				return refusedTruncated(output, rb)
			}
			return accepted(rb)
		}
	}

	switch {
	case len(strict) > 0:
		return rejectedOrCoerced(output, schema, best, opts)
	case len(repaired) > 0:
		rb, _ := choose(repaired)
		if rb.truncated && !opts.AcceptTruncated {
			return refusedTruncated(output, rb)
		}
		return rejectedOrCoerced(output, schema, rb, opts)
	case j.refused != nil:
		r := failed(refusedDiagnosis(output, j.refused))
		r.Repairs, r.Truncated = j.refused.c.repairs, j.refused.c.truncated
		return r
	}

	// repair reports prose with a stray bracket ("[INFO]", "{see below}")
	// as unrepairable JSON; only text that looks like JSON is invalid_json.
	var re *repair.Error
	if errors.As(repairErr, &re) && looksLikeJSON(output, int64(re.Offset)) {
		if int64(re.Offset) >= contentEnd(output) {
			return failed(endOfOutput(output))
		}
		return failed(invalidDiagnosis(output, re.Line, re.Column, re.Msg, re.Excerpt))
	}
	if len(tail) > 0 {
		return failed(endOfOutput(output))
	}
	if e := firstJSONError(output, errs); e != nil {
		line, col := lineColumn(output, e.Offset)
		return failed(invalidDiagnosis(output, line, col, e.MsgIn(output), excerptAround(output, e.Offset)))
	}
	return failed(emptyDiagnosis(output))
}

// judge builds the candidates of one output and applies the provenance
// policy to them (admit), remembering the refusal to report when no
// candidate is left.
type judge struct {
	output  []byte
	schema  *Schema
	places  *provenance.Map
	file    bool
	refused *refusal
}

// candidate decodes, places and validates the value data found at
// output[start:end]; it reports false for bytes that are not one JSON
// value and for a value the policy refuses.
func (j *judge) candidate(data []byte, repairs []string, truncated bool, start, end int) (candidate, bool) {
	c, ok := newCandidate(data, repairs, truncated, j.schema)
	if !ok {
		return candidate{}, false
	}
	c.start, c.end = start, end
	c.place = j.places.Of(start, end)
	if j.file && c.place.Kind == provenance.Output {
		c.place.Kind = provenance.File
	}
	if r := admit(c, j.schema); r != nil {
		// A structural refusal says more than one for code or {}: it is
		// the one reported.
		if j.refused == nil || len(r.needed) > 0 || len(j.refused.needed) == 0 {
			j.refused = r
		}
		return candidate{}, false
	}
	return c, true
}

// newCandidate decodes and validates one value; it reports false for
// bytes that are not a single JSON value.
func newCandidate(data []byte, repairs []string, truncated bool, schema *Schema) (candidate, bool) {
	v, err := decodeValue(data)
	if err != nil {
		return candidate{}, false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return candidate{}, false
	}
	return candidate{
		json:       buf.Bytes(),
		value:      v,
		repairs:    repairs,
		truncated:  truncated,
		violations: schema.Validate(v),
	}, true
}

// decodeValue decodes exactly one JSON value with UseNumber, so that large
// integers and decimals keep their text.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode value: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode value: data after the value")
	}
	return v, nil
}

// choose picks the handoff among candidates in output order: the last one
// without violations, else the last one. ok reports that it validates.
func choose(cs []candidate) (c candidate, ok bool) {
	for i := len(cs) - 1; i >= 0; i-- {
		if len(cs[i].violations) == 0 {
			return cs[i], true
		}
	}
	if len(cs) == 0 {
		return candidate{}, false
	}
	return cs[len(cs)-1], false
}

// accepted builds the result of an accepted candidate.
func accepted(c candidate) Result {
	repairs := append([]string(nil), c.repairs...)
	if c.truncated && !contains(repairs, repair.Truncated) {
		repairs = append(repairs, repair.Truncated)
	}
	return Result{OK: true, JSON: c.json, Value: c.value, Repairs: repairs, Truncated: c.truncated, Provenance: c.place.Kind}
}

// rejectedOrCoerced accepts the coerced candidate c when coercion is on
// and finds one, and otherwise builds its schema failure.
func rejectedOrCoerced(output []byte, schema *Schema, c candidate, opts Options) Result {
	if opts.Coerce && schema != nil && schema.compiled != nil {
		if r, ok := coerce.Apply(c.json, schema.compiled); ok && len(r.Coercions) > 0 {
			// The pipeline's own check, so that nothing but a value that
			// validates is ever accepted.
			if len(schema.Validate(r.Value)) == 0 {
				res := accepted(candidate{json: r.JSON, value: r.Value, repairs: c.repairs, truncated: c.truncated, place: c.place})
				for _, x := range r.Coercions {
					res.Repairs = append(res.Repairs, x.String())
				}
				res.Coercions = r.Coercions
				return res
			}
		}
	}
	return rejected(output, schema, c)
}

// rejected builds the schema failure of a candidate.
func rejected(output []byte, schema *Schema, c candidate) Result {
	r := failed(schemaDiagnosis(output, schema, c.value, c.violations))
	r.Repairs, r.Truncated = c.repairs, c.truncated
	return r
}

// refusedTruncated builds the failure of a value closed by repair when
// truncated values are not accepted.
func refusedTruncated(output []byte, c candidate) Result {
	r := failed(endOfOutput(output))
	r.Repairs, r.Truncated = c.repairs, true
	return r
}

// failed wraps a diagnosis in a result.
func failed(d *Diagnosis) Result { return Result{Diagnosis: d} }

// endOfOutput diagnoses a value cut off where the output ends.
func endOfOutput(output []byte) *Diagnosis {
	end := contentEnd(output)
	line, col := lineColumn(output, end)
	return truncatedDiagnosis(output, line, col, tailExcerpt(output[:end]))
}

// contentEnd is the offset just after the last non-space byte.
func contentEnd(output []byte) int64 {
	return int64(len(bytes.TrimRight(output, " \t\r\n")))
}

// firstJSONError returns the first extraction error about text that looks
// like JSON (not a "[INFO]" log prefix or a "{see below}" in prose). The
// first is wanted because the extractor restarts inside a malformed value:
// the errors after it are about its inner brackets, not about the value the
// agent meant.
func firstJSONError(output []byte, errs []*extract.Error) *extract.Error {
	for _, e := range errs {
		if e.Kind != extract.ErrMalformed || looksLikeJSON(output, e.Offset) {
			return e
		}
	}
	return nil
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
