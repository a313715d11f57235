package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff/repair"
)

type repairCmd struct {
	Input    string `arg:"" optional:"" help:"File with the agent's output (default: standard input)."`
	Explain  bool   `help:"Print the repairs applied to standard error."`
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
	for _, r := range results {
		fmt.Fprintf(e.stdout, "%s\n", r.JSON)
		if c.Explain {
			if len(r.Repairs) == 0 {
				fmt.Fprintln(e.stderr, "repairs: none (the input was valid JSON)")
			} else {
				fmt.Fprintf(e.stderr, "repairs: %s\n", strings.Join(r.Repairs, ", "))
			}
		}
	}
	return nil
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
