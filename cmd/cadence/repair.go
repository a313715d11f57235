package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/handoff/repair"
)

type repairCmd struct {
	Input    string `arg:"" optional:"" help:"File with the agent's output (default: standard input)."`
	Explain  bool   `help:"Print where the value was found (provenance: output, fence_json, prose) and the repairs applied to standard error."`
	All      bool   `help:"Print every JSON value found, one per line, not only the handoff (the last one)."`
	MaxBytes int64  `default:"8388608" help:"Refuse input larger than this many bytes."`
	MaxDepth int    `default:"10000" help:"Refuse values nested deeper than this (10000 is encoding/json's own limit)."`
}

func (c *repairCmd) Run(e *env) error {
	data, err := readInput(e, c.Input, c.MaxBytes)
	if err != nil {
		return err
	}
	opts := repair.Options{MaxDepth: c.MaxDepth}
	var results []repair.Result
	if c.All {
		results, err = repair.RepairAll(data, opts)
	} else {
		var r repair.Result
		r, err = repair.Repair(data, opts)
		results = []repair.Result{r}
	}
	if err != nil {
		return withCode(exitFailed, fmt.Errorf("no JSON value could be recovered: %s", oneLine(err)))
	}
	// The provenance policy of a handoff (docs/repair-policy.md): code,
	// an empty value in prose, and a value in prose whose structure had
	// to be guessed are not returned.
	var refused *handoff.Diagnosis
	printed := 0
	for i, r := range results {
		prov, d := handoff.Admit(data, r)
		if d != nil && !c.All && i == 0 {
			// The best value is refused; a later or earlier one in the
			// output may still be a handoff.
			if alt, ok := admitted(data, opts); ok {
				r, prov, d = alt.r, alt.prov, nil
			}
		}
		if d != nil {
			refused = d
			continue
		}
		printed++
		fmt.Fprintf(e.stdout, "%s\n", r.JSON)
		if c.Explain {
			fmt.Fprintf(e.stderr, "provenance: %s\n", prov)
			if len(r.Repairs) == 0 {
				fmt.Fprintln(e.stderr, "repairs: none (the input was valid JSON)")
			} else {
				fmt.Fprintf(e.stderr, "repairs: %s\n", strings.Join(r.Repairs, ", "))
			}
		}
	}
	if printed == 0 && refused != nil {
		return withCode(exitFailed, fmt.Errorf("no handoff: %s", refused.Details))
	}
	return nil
}

// placed is a repaired value and where it was found.
type placed struct {
	r    repair.Result
	prov handoff.Provenance
}

// admitted returns the last value in data that the provenance policy
// admits.
func admitted(data []byte, opts repair.Options) (placed, bool) {
	all, err := repair.RepairAll(data, opts)
	if err != nil {
		return placed{}, false
	}
	for i := len(all) - 1; i >= 0; i-- {
		if prov, d := handoff.Admit(data, all[i]); d == nil {
			return placed{all[i], prov}, true
		}
	}
	return placed{}, false
}

// readInput reads a file, or standard input when path is "" or "-", refusing
// more than max bytes.
func readInput(e *env, path string, max int64) ([]byte, error) {
	var r io.Reader = e.stdin
	name := "standard input"
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		defer f.Close()
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("read %s: %w", name, err))
	}
	if int64(len(data)) > max {
		return nil, withCode(exitFailed, fmt.Errorf("%s is larger than %d bytes (--max-bytes)", name, max))
	}
	return data, nil
}

func oneLine(err error) string {
	var re *repair.Error
	if errors.As(err, &re) {
		return fmt.Sprintf("line %d, column %d: %s", re.Line, re.Column, re.Msg)
	}
	return firstLine(err.Error())
}
