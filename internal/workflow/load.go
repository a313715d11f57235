package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/google/cel-go/cel"
)

// Load reads, decodes and checks the workflow at path (DIR/.cadence/workflow.yaml
// when path is ""; a relative path is relative to dir). A file that cannot be
// read is returned as a wrapped I/O error; every mistake in a file that can
// be read is returned together as Errors.
func Load(dir, path string) (*Workflow, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("project directory %s: %w", dir, err)
	}
	if path == "" {
		path = DefaultPath
	}
	file := path
	if !filepath.IsAbs(file) {
		file = filepath.Join(absDir, file)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read workflow: %w", err)
	}
	return Parse(absDir, path, raw)
}

// loader builds a Workflow from a syntax tree. With dir "" it only decodes
// and checks the file itself (no prompt files, scenarios or schemas are
// read), which is what Changes needs.
type loader struct {
	decoder
	dir     string
	schemas *schemaCache
	w       *Workflow
	ids     map[string]at     // step id → where it was first written
	built   []builtStep       // every step, inner steps included, in file order
	env     *cel.Env          // what expressions are compiled in (inputsEnv), once the inputs are known
	mapped  map[string]bool   // the map steps, whose outputs are not checked against a schema
	shapes  map[string]*shape // what each step's output is known to be (outputShape)
	// ancestry answers which steps a step may read, once the graph is built.
	ancestry *ancestry
	// literals are the templates of texts without an action, by text
	// (parseTemplate).
	literals map[string]*template.Template
}

// build decodes raw, named name in errors, against the project at dir.
func build(raw []byte, name, dir string) (*Workflow, Errors) {
	l := decode(raw, name, dir)
	if len(l.errs) > 0 {
		return nil, l.errs.tidy()
	}
	l.w.SHA256 = Hash(l.w.RawSHA256, l.w.Files)
	return l.w, nil
}

// ParseAndCheck is Parse and CheckPrograms together, for `cadence check`: every
// problem of the workflow at once, sorted by position, the programs that
// cannot be found among them even when the file has other mistakes. The
// workflow is nil when there is any problem.
func ParseAndCheck(dir, name string, raw []byte) (*Workflow, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("project directory %s: %w", dir, err)
	}
	l := decode(raw, name, absDir)
	errs := l.errs
	var progErrs Errors
	if errors.As(CheckPrograms(l.w), &progErrs) {
		errs = append(errs, progErrs...)
	}
	if len(errs) > 0 {
		return nil, errs.tidy()
	}
	l.w.SHA256 = Hash(l.w.RawSHA256, l.w.Files)
	return l.w, nil
}

// decode runs the loader over raw and returns it with what it built and
// the mistakes it found.
func decode(raw []byte, name, dir string) *loader {
	sum := sha256.Sum256(raw)
	l := &loader{
		decoder: decoder{file: name},
		dir:     dir,
		schemas: newSchemaCache(),
		w: &Workflow{
			Path:      name,
			Dir:       dir,
			Raw:       raw,
			RawSHA256: hex.EncodeToString(sum[:]),
			Files:     map[string]string{},
			Agents:    map[string]*Agent{},
		},
	}
	if body := l.parse(raw); body != nil {
		l.top(body)
	}
	return l
}

// warn records a setting that loads but will not do what it says, in
// Workflow.Warnings.
func (l *loader) warn(a at, format string, args ...any) {
	l.w.Warnings = append(l.w.Warnings, &Error{File: l.decoder.file, Line: a.line, Column: a.col, Key: a.key, Msg: fmt.Sprintf(format, args...)})
}

// Hash returns the hash of a workflow whose own file hashes to rawSHA256
// and which names files (path → sha256, as Workflow.Files): rawSHA256
// itself when it names none, so that the hash of such a workflow is what
// it always was.
func Hash(rawSHA256 string, files map[string]string) string {
	if len(files) == 0 {
		return rawSHA256
	}
	h := sha256.New()
	fmt.Fprintf(h, "cadence workflow\n%s\n", rawSHA256)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s  %s\n", files[path], path)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// named records the content of a file the workflow names, by its path
// relative to the project, in Workflow.Files.
func (l *loader) named(abs string, data []byte) {
	rel, err := filepath.Rel(l.dir, abs)
	if err != nil {
		rel = abs
	}
	sum := sha256.Sum256(data)
	l.w.Files[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
}

// parse returns the single document's body, or nil after reporting why
// there is none.
func (l *loader) parse(raw []byte) ast.Node {
	f, err := parser.ParseBytes(raw, 0)
	if err != nil {
		a := at{line: 1, col: 1}
		msg := err.Error()
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				a.line, a.col = tk.Position.Line, tk.Position.Column
			}
		}
		l.fail(a, "invalid YAML: %s%s", strings.ReplaceAll(msg, "\t", `\t`), yamlHint(raw, a.line, msg))
		return nil
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		l.fail(at{line: 1, col: 1}, "the workflow file is empty (run cadence init for a commented example)")
		return nil
	case len(docs) > 1:
		l.fail(where(docs[1].Body, ""), "want a single YAML document, found %d", len(docs))
		return nil
	}
	return docs[0].Body
}

// top decodes the document and then checks what needs the whole of it.
func (l *loader) top(body ast.Node) {
	if _, ok := unwrap(body).(*ast.MappingNode); !ok {
		if _, ok := unwrap(body).(*ast.MappingValueNode); !ok {
			l.fail(where(body, ""), "want a mapping with version, agents and steps, got %s", describe(body))
			return
		}
	}
	var (
		version  field[int]
		defaults rawDefaults
		agents   []rawAgent
		steps    []rawStep
		stepsAt  *at
	)
	l.w.MaxParallelSteps = DefaultMaxParallelSteps
	l.fields(body, "", []string{"version", "name", "inputs", "max_parallel_steps", "defaults", "agents", "steps", "notify"}, func(e entry) {
		switch e.name {
		case "inputs":
			l.w.Inputs = l.inputs(e)
		case "max_parallel_steps":
			l.w.MaxParallelSteps = l.integer(e, 1, MaxParallelStepsLimit).get(DefaultMaxParallelSteps)
		case "notify":
			l.notify(e)
		case "version":
			version = l.integer(e, 0, 1<<20)
		case "name":
			l.w.Name = l.str(e).v
		case "defaults":
			defaults = l.defaults(e.val)
		case "agents":
			es, _ := l.entries(e.val, "agents")
			for _, a := range es {
				agents = append(agents, l.agent(a))
			}
		case "steps":
			a := e.keyAt()
			stepsAt = &a
			steps = l.steps(e)
		}
	})
	switch {
	case !version.set && !l.hasErrorAt("version"):
		l.fail(at{line: 1, col: 1, key: "version"}, "missing (want version: 1)")
	case version.set && version.v != 1:
		l.fail(version.at, "unsupported version %d (want 1)", version.v)
	}
	l.w.Version = 1
	l.w.MaxCostUSD = defaults.maxCost.get(0)
	for _, a := range agents {
		l.buildAgent(a)
		l.agentSandbox(a, defaults.sandbox)
	}
	for _, a := range agents {
		l.checkFallback(a)
	}
	if len(steps) == 0 && !l.hasErrorAt("steps") {
		a := at{line: 1, col: 1, key: "steps"}
		if stepsAt != nil {
			a = *stepsAt
		}
		l.fail(a, "no steps (want at least one)")
	}
	if defaults.agent.set {
		l.checkAgent(defaults.agent)
	}
	l.buildSteps(steps, defaults)
}

// steps decodes the steps: list.
func (l *loader) steps(e entry) []rawStep {
	seq, ok := unwrap(e.val).(*ast.SequenceNode)
	if !ok {
		if !isNull(e.val) {
			l.fail(e.valAt(), "want a list of steps, got %s", describe(e.val))
		}
		return nil
	}
	steps := make([]rawStep, 0, len(seq.Values))
	for i, item := range seq.Values {
		steps = append(steps, l.step(item, fmt.Sprintf("steps[%d]", i)))
	}
	return steps
}

// checkAgent reports a reference to an agent that is not defined.
func (l *loader) checkAgent(name field[string]) bool {
	if _, ok := l.w.Agents[name.v]; ok {
		return true
	}
	l.fail(name.at, "unknown agent %q (%s)", name.v, l.agentNames())
	return false
}

func (l *loader) agentNames() string {
	if len(l.w.Agents) == 0 {
		return "no agents are defined"
	}
	names := make([]string, 0, len(l.w.Agents))
	for n := range l.w.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	return "defined: " + alternatives(names, "and")
}

// file resolves a path the workflow names, checks it stays in the project
// and, when checking files, that it exists. It returns the path relative to
// the project and the absolute path; ok is false after an error.
func (l *loader) file(f field[string], mustExist bool) (rel, abs string, ok bool) {
	rel, abs, err := confine(l.dir, f.v)
	if err != nil {
		l.fail(f.at, "path %q %v", f.v, err)
		return "", "", false
	}
	if l.dir == "" || !mustExist {
		return rel, abs, true
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.fail(f.at, "file %s not found", f.v)
		return "", "", false
	case err != nil:
		l.fail(f.at, "%v", err)
		return "", "", false
	case info.IsDir():
		l.fail(f.at, "%s is a directory, want a file", f.v)
		return "", "", false
	}
	if err := confineReal(l.dir, abs); err != nil {
		l.fail(f.at, "path %q resolves to a file that %v", f.v, err)
		return "", "", false
	}
	return rel, abs, true
}

// Parse decodes and checks a workflow held in memory, such as the one a
// run stored, against the project at dir; name is how errors call it.
func Parse(dir, name string, raw []byte) (*Workflow, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("project directory %s: %w", dir, err)
	}
	w, errs := build(raw, name, absDir)
	if len(errs) > 0 {
		return nil, errs
	}
	return w, nil
}

// plainValue is a line "key: value" (or "- key: value") whose value is
// not quoted and holds what YAML reads as structure: a flow mapping or
// list ({, [) or another "key: ".
var plainValue = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z0-9_.-]+):\s+([^\s'"|>].*)$`)

// yamlHint says what to do about the parse error msg at line of raw, for
// the slips people make most: a tab in indentation, and a plain value
// holding {, [ or ": ", which YAML reads as structure.
func yamlHint(raw []byte, line int, msg string) string {
	lines := strings.Split(string(raw), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	text := lines[line-1]
	indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	if strings.Contains(indent, "\t") || strings.Contains(msg, "tab character") || strings.Contains(msg, "'\t'") {
		return " (indent with spaces: YAML does not allow tabs in indentation)"
	}
	m := plainValue.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	value := m[2]
	if !balancedFlow(value) && (strings.ContainsAny(value, "{}[]") || strings.Contains(value, ": ")) {
		return fmt.Sprintf(" (the value of %s holds {, [ or \": \", which YAML reads as structure: quote it, as %s: '%s', "+
			"or write it as a block scalar, %s: | with the text on the lines below, indented)", m[1], m[1], strings.ReplaceAll(value, "'", "''"), m[1])
	}
	return ""
}

// balancedFlow reports whether value is one flow mapping or list and
// nothing after it (a comment aside), which is YAML, not a slip.
func balancedFlow(value string) bool {
	if value[0] != '{' && value[0] != '[' {
		return false
	}
	depth := 0
	for i, c := range value {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				rest := strings.TrimSpace(value[i+1:])
				return rest == "" || strings.HasPrefix(rest, "#")
			}
		}
	}
	return false
}
