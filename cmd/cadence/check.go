package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/cadence-dev/cadence/internal/orchestrator"
	"github.com/cadence-dev/cadence/internal/workflow"
)

type checkCmd struct {
	Dir      string `arg:"" optional:"" default:"." help:"Project directory (default: the current one, or the nearest one above it with a .cadence directory)."`
	Workflow string `help:"Workflow file (default DIR/.cadence/workflow.yaml)." type:"path"`
	JSON     bool   `help:"Print {\"ok\": bool, \"errors\": [{\"file\", \"line\", \"column\", \"key\", \"message\"}], \"warnings\": [...]} on stdout, for editors and CI."`
}

// checkProblem is one error or warning of `cadence check --json`.
type checkProblem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// Run loads and checks a workflow the way run does — its YAML, keys and
// values, schemas, templates, expressions, prompt and scenario files — and
// then that the programs of its agents and argv-form checks can be found,
// all without starting a run or creating the state database. Every error
// is listed; the exit code is 2 when there is one.
func (c *checkCmd) Run(e *env) error {
	if e.process {
		// Loading allocates much and keeps little: it runs under the
		// load phase's collector setting, as run and resume load
		// (gc.go), to the command's end, since check starts no agent.
		defer startLoadGC(os.LookupEnv).end()
	}
	dir := findProject(c.Dir)
	if c.Workflow == "" {
		if fi, err := os.Stat(filepath.Join(dir, orchestrator.CadenceDir)); err != nil || !fi.IsDir() {
			return withCode(exitUsage, fmt.Errorf("%s is not a cadence project (no .cadence directory in it or above it); create one with `cadence init %s`", dir, dir))
		}
	}
	name := c.Workflow
	if name == "" {
		name = workflow.DefaultPath
	}
	var errs, warns []checkProblem
	file := name
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	var wf *workflow.Workflow
	raw, err := os.ReadFile(file)
	if err == nil {
		wf, err = workflow.ParseAndCheck(dir, name, raw)
	}
	var werrs workflow.Errors
	switch {
	case errors.As(err, &werrs):
		for _, we := range werrs {
			errs = append(errs, checkProblem{File: we.File, Line: we.Line, Column: we.Column, Key: we.Key, Message: we.Msg})
		}
	case err != nil:
		errs = append(errs, checkProblem{File: name, Message: err.Error()})
	}
	if wf != nil {
		warns = append(warns, silentSkips(wf)...)
		for _, w := range wf.Warnings {
			warns = append(warns, checkProblem{File: w.File, Line: w.Line, Column: w.Column, Key: w.Key, Message: w.Msg})
		}
		var pos *locator // a second parse of the file: only for a warning that needs it
		for _, agent := range orchestrator.UnsetAPIKeys(wf, os.Environ()) {
			if pos == nil {
				pos = newLocator(wf.Raw)
			}
			key := "agents." + agent + ".api_key_env"
			line, col := pos.at("$.agents." + agent + ".api_key_env")
			warns = append(warns, checkProblem{File: wf.Path, Line: line, Column: col, Key: key,
				Message: fmt.Sprintf("the environment variable %s is not set: the agent's requests will carry no API key", wf.Agents[agent].APIKeyEnv)})
		}
	}
	if c.JSON {
		if errs == nil {
			errs = []checkProblem{}
		}
		if warns == nil {
			warns = []checkProblem{}
		}
		if err := writeJSON(e.stdout, struct {
			OK       bool           `json:"ok"`
			Errors   []checkProblem `json:"errors"`
			Warnings []checkProblem `json:"warnings"`
		}{len(errs) == 0, errs, warns}); err != nil {
			return err
		}
		if len(errs) > 0 {
			return withCode(exitUsage, nil)
		}
		return nil
	}
	for _, w := range warns {
		fmt.Fprintf(e.stderr, "%s: warning: %s\n", w.where(), w.Message)
	}
	if len(errs) > 0 {
		for _, p := range errs {
			fmt.Fprintf(e.stderr, "%s: %s\n", p.where(), p.Message)
		}
		fmt.Fprintf(e.stderr, "%s\n", plural(len(errs), "error", "errors"))
		return withCode(exitUsage, nil)
	}
	steps := plural(len(wf.Steps), "step", "steps")
	if all := len(wf.All()); all > len(wf.Steps) {
		steps += fmt.Sprintf(" (%d with the steps inside loops)", all)
	}
	fmt.Fprintf(e.stdout, "%s is ready to run: %s, %s\n", filepath.Join(dir, filepath.FromSlash(name)), steps, plural(len(wf.Agents), "agent", "agents"))
	return nil
}

// silentSkips warns of the gates, and the steps after a gate, that the
// skip of a step before them would skip without asking anyone (SPEC
// §16.4): the run would succeed all the same.
func silentSkips(wf *workflow.Workflow) []checkProblem {
	var out []checkProblem
	for _, sk := range wf.SilentSkips() {
		what, anyway := "an approval gate, is skipped without asking", "asks anyway"
		if len(sk.Gates) > 0 {
			anyway = "runs it anyway"
		}
		switch {
		case sk.Step.Loop != nil:
			what = "a loop that holds an approval gate, is skipped without asking"
		case len(sk.Gates) > 0:
			what = "after approval gate " + strings.Join(sk.Gates, ", ") + ", is skipped"
		}
		out = append(out, checkProblem{File: wf.Path, Line: sk.Line, Column: sk.Column, Key: sk.Key,
			Message: fmt.Sprintf("step %s, %s whenever %s is skipped (a step that needs a skipped step is skipped too): "+
				"give it a when of its own to decide whether it runs (when: 'true' %s)", sk.Step.ID, what, strings.Join(sk.Because, " or "), anyway)})
	}
	return out
}

// where is "file:line:col: key", the form editors turn into a link.
func (p checkProblem) where() string {
	s := p.File
	if p.Line > 0 {
		s += fmt.Sprintf(":%d:%d", p.Line, p.Column)
	}
	if p.Key != "" {
		s += ": " + p.Key
	}
	return s
}

// plural is "1 item" or "2 items".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// locator finds where a key of the workflow file was written, for problems
// found after loading, when the loaded workflow no longer knows.
type locator struct {
	file *ast.File
}

func newLocator(raw []byte) *locator {
	f, err := parser.ParseBytes(raw, 0)
	if err != nil {
		return &locator{}
	}
	return &locator{file: f}
}

// node returns the node at a YAML path ($.a.b[0].c), or nil.
func (l *locator) node(path string) ast.Node {
	if l.file == nil {
		return nil
	}
	p, err := yaml.PathString(path)
	if err != nil {
		return nil
	}
	n, err := p.FilterFile(l.file)
	if err != nil || n == nil {
		return nil
	}
	return n
}

// at is the line and column of the value at path, or of the nearest
// enclosing key that exists; 0, 0 when none does.
func (l *locator) at(path string) (line, col int) {
	for p := path; p != "$" && p != ""; {
		if n := l.node(p); n != nil {
			if tk := n.GetToken(); tk != nil && tk.Position != nil {
				return tk.Position.Line, tk.Position.Column
			}
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return 0, 0
}
