package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff"
)

type validateCmd struct {
	Schema          string `required:"" help:"JSON Schema file (draft 2020-12 or draft-07)." type:"path"`
	Input           string `arg:"" optional:"" help:"File with the agent's output (default: standard input)."`
	JSON            bool   `help:"On failure print the diagnosis as a failed-handoff record (JSON) instead of text."`
	NoRepair        bool   `help:"Do not repair: the JSON must parse as it is."`
	NoCoerce        bool   `help:"Do not coerce a value that misses the schema to its one lossless reading (\"5\" to 5, one item to a list of it)."`
	AcceptTruncated bool   `help:"Accept a value obtained only by closing truncated output."`
	MaxBytes        int64  `default:"8388608" help:"Refuse input larger than this many bytes."`
	MaxDepth        int    `default:"10000" help:"Refuse values nested deeper than this (10000 is encoding/json's own limit)."`
}

func (c *validateCmd) Run(e *env) error {
	schema, err := handoff.CompileSchema(c.Schema)
	if err != nil {
		var se *handoff.SchemaError
		if errors.As(err, &se) {
			return withCode(exitUsage, fmt.Errorf("schema %s does not compile: at %s: %s", se.Path, se.Location, se.Reason))
		}
		return withCode(exitUsage, err)
	}
	data, err := readInput(e, c.Input, c.MaxBytes)
	if err != nil {
		return err
	}
	res := handoff.Check(data, schema, handoff.Options{
		Repair: !c.NoRepair, AcceptTruncated: c.AcceptTruncated, Coerce: !c.NoCoerce, MaxBytes: c.MaxBytes, MaxDepth: c.MaxDepth,
	})
	if res.OK {
		fmt.Fprintf(e.stdout, "%s\n", res.JSON)
		if len(res.Coercions) > 0 {
			cs := make([]string, len(res.Coercions))
			for i, x := range res.Coercions {
				cs[i] = x.String()
			}
			fmt.Fprintf(e.stderr, "coerced to the schema: %s\n", strings.Join(cs, ", "))
		}
		return nil
	}
	d := res.Diagnosis
	if c.JSON {
		rec := handoff.FailedRecord{
			Class: d.Class, Details: d.Details, Violations: d.Violations, Repairs: res.Repairs,
			OutputSample: d.OutputSample, OutputFile: c.Input,
		}
		if rec.Violations == nil {
			rec.Violations = []handoff.Violation{}
		}
		if rec.Repairs == nil {
			rec.Repairs = []string{}
		}
		if err := writeJSON(e.stdout, rec); err != nil {
			return err
		}
		return withCode(exitFailed, nil)
	}
	fmt.Fprintf(e.stdout, "invalid handoff: %s\n%s\n", d.Class, d.Details)
	for _, v := range d.Violations {
		fmt.Fprintf(e.stdout, "  %s: %s (expected %s, got %s)\n", pointer(v.Pointer), v.Keyword, v.Expected, v.Actual)
	}
	if len(res.Repairs) > 0 {
		fmt.Fprintf(e.stdout, "repairs applied: %v\n", res.Repairs)
	}
	return withCode(exitFailed, nil)
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
