package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	wf, err := workflow.Load(dir, c.Workflow)
	var werrs workflow.Errors
	switch {
	case errors.As(err, &werrs):
		for _, we := range werrs {
			errs = append(errs, checkProblem{File: we.File, Line: we.Line, Column: we.Column, Key: we.Key, Message: we.Msg})
		}
	case err != nil:
		errs = append(errs, checkProblem{File: name, Message: err.Error()})
	}
	file := name
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	if raw, rerr := os.ReadFile(file); rerr == nil {
		pos := newLocator(raw)
		errs = append(errs, programProblems(raw, dir, name, pos)...)
		slices.SortStableFunc(errs, func(a, b checkProblem) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
	}
	if wf != nil {
		pos := newLocator(wf.Raw)
		for _, agent := range orchestrator.UnsetAPIKeys(wf, os.Environ()) {
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
	fmt.Fprintf(e.stdout, "%s is ready to run: %s, %s\n", filepath.Join(dir, filepath.FromSlash(name)),
		plural(len(wf.Steps), "step", "steps"), plural(len(wf.Agents), "agent", "agents"))
	return nil
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

// programProblems checks that every program cadence would start can be
// found: each agent's program (the preset's, or its command) and the argv
// of each check given as a list. It reads the file's YAML loosely, on its
// own, so that it also reports what it can in a file the loader refused. A
// program named through a template, and the commands of shell-form checks,
// are known only when they run.
func programProblems(raw []byte, dir, file string, pos *locator) []checkProblem {
	var doc map[string]any
	if yaml.Unmarshal(raw, &doc) != nil {
		return nil
	}
	var out []checkProblem
	add := func(path, key, msg string) {
		line, col := pos.at(path)
		out = append(out, checkProblem{File: file, Line: line, Column: col, Key: key, Message: msg})
	}
	agents, _ := doc["agents"].(map[string]any)
	for _, name := range sortedKeys(agents) {
		a, _ := agents[name].(map[string]any)
		preset, _ := a["preset"].(string)
		command := strings_(a["command"])
		env, _ := a["env"].(map[string]any)
		path, _ := env["PATH"].(string)
		prog := agentProgram(preset, command)
		if prog == "" {
			continue
		}
		if err := findProgram(prog, dir, path); err != nil {
			at, key := "$.agents."+name+".command", "agents."+name+".command"
			if len(command) == 0 {
				at, key = "$.agents."+name+".preset", "agents."+name+".preset"
			}
			add(at, key, fmt.Sprintf("agent %s: program %s %v", name, prog, err))
		}
	}
	checkList := func(list any, at, key string) {
		checks, _ := list.([]any)
		for j, c := range checks {
			m, _ := c.(map[string]any)
			argv := strings_(m["run"])
			if len(argv) == 0 || strings.Contains(argv[0], "{{") {
				continue // a command line for the shell, or not a list of strings
			}
			name, _ := m["name"].(string)
			if err := findProgram(argv[0], dir, ""); err != nil {
				add(fmt.Sprintf("%s[%d].run", at, j), fmt.Sprintf("%s[%d].run", key, j),
					fmt.Sprintf("check %s: program %s %v", name, argv[0], err))
			}
		}
	}
	if defaults, ok := doc["defaults"].(map[string]any); ok {
		checkList(defaults["checks"], "$.defaults.checks", "defaults.checks")
	}
	steps, _ := doc["steps"].([]any)
	for i, s := range steps {
		if m, ok := s.(map[string]any); ok {
			checkList(m["checks"], fmt.Sprintf("$.steps[%d].checks", i), fmt.Sprintf("steps[%d].checks", i))
		}
	}
	return out
}

// strings_ is v as a list of strings, or nil when it is not one.
func strings_(v any) []string {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil
		}
		out[i] = s
	}
	return out
}

// agentProgram is the program an agent starts, or "" when there is none to
// look for: an openai agent, the sim preset (cadence itself), or a
// program named through a template.
func agentProgram(preset string, command []string) string {
	prog := ""
	switch {
	case len(command) > 0:
		prog = command[0]
	case preset == "claude", preset == "codex", preset == "gemini":
		prog = preset
	}
	if strings.Contains(prog, "{{") {
		return ""
	}
	return prog
}

// findProgram looks for a program the way cadence starts it: a name with a
// slash relative to the project, a bare name on PATH (the agent's own PATH
// when its env sets one).
func findProgram(name, dir, path string) error {
	if strings.ContainsRune(name, filepath.Separator) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if _, err := exec.LookPath(name); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return errors.New("does not exist")
			}
			return errors.New("is not an executable file")
		}
		return nil
	}
	if path == "" {
		if _, err := exec.LookPath(name); err != nil {
			return errors.New("is not on PATH")
		}
		return nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if _, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return nil
		}
	}
	return errors.New("is not on the agent's PATH (its env sets PATH)")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
