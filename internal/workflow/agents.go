package workflow

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// buildAgent checks one agents: entry and adds it to the workflow.
func (l *loader) buildAgent(r rawAgent) {
	a := &Agent{
		Name:         r.name,
		Preset:       r.preset.v,
		Command:      r.command.v,
		Args:         r.args.v,
		Env:          r.env.v,
		PromptVia:    r.promptVia.get("stdin"),
		Output:       r.output.get("text"),
		ContinueArgs: r.continueArgs.v,
		HelpMarker:   r.helpMarker.get(">>>HELP<<<"),
		NativeSchema: r.nativeSchema.v,
		BaseURL:      r.baseURL.v,
		Model:        r.model.v,
		APIKeyEnv:    r.apiKeyEnv.v,
		Circuit: Circuit{
			Failures:      r.failures.get(3),
			OpenFor:       r.openFor.get(2 * time.Minute),
			HalfOpenCalls: r.halfOpenCalls.get(1),
		},
		MaxConcurrent: r.maxConcurrent.get(0),
	}
	if r.configDir.set {
		a.ConfigDir = l.configDir(r.configDir)
	}
	l.w.Agents[r.name] = a
	self := at{line: r.at.line, col: r.at.col, key: "agents." + r.name}
	prog := programRef{what: "agent " + a.Name, at: self, path: a.Env["PATH"], prog: defaultPrograms[a.Preset]}
	switch {
	case r.command.set:
		prog.at, prog.prog = r.command.at, a.Command[0]
	case r.preset.set:
		prog.at = r.preset.at
	}
	if prog.prog != "" {
		l.w.programs = append(l.w.programs, prog)
	}
	need := func(f bool, key string) {
		if !f {
			l.fail(self, "preset %s needs %s", a.Preset, key)
		}
	}
	switch a.Preset {
	case "":
		if !l.hasErrorAt(self.key + ".preset") {
			l.fail(self, "missing preset (want %s)", alternatives(presets, "or"))
		}
	case "exec":
		need(r.command.set, "command")
	case "sim":
		need(r.scenario.set, "scenario")
	case "openai":
		need(r.baseURL.set, "base_url")
		need(r.model.set, "model")
	}
	if r.scenario.set {
		if _, abs, ok := l.file(r.scenario, true); ok {
			a.Scenario = abs
			if l.dir != "" {
				if b, err := os.ReadFile(abs); err != nil {
					l.fail(r.scenario.at, "read scenario: %v", err)
				} else {
					l.named(abs, b)
				}
			}
		}
	}
}

// configDir resolves an agent's config_dir: ~ or ~/… is the user's home
// directory, a relative path is relative to the project directory. It is
// the CLI's own configuration, so it may be outside the project.
func (l *loader) configDir(f field[string]) string {
	p := f.v
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			l.fail(f.at, "cannot expand ~: %v", err)
			return ""
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	case strings.HasPrefix(p, "~"):
		l.fail(f.at, "config_dir %q: only ~ or ~/ is expanded, not ~user (write the path out)", p)
		return ""
	case !filepath.IsAbs(p) && l.dir != "":
		p = filepath.Join(l.dir, p)
	}
	return filepath.Clean(p)
}

// checkFallback checks an agent's fallback: list once every agent is
// known: each entry names another defined agent, once.
func (l *loader) checkFallback(r rawAgent) {
	a := l.w.Agents[r.name]
	if a == nil || !r.fallback.set {
		return
	}
	seq, _ := unwrap(r.fallbackNode).(*ast.SequenceNode)
	for i, name := range r.fallback.v {
		at := r.fallback.at
		if seq != nil && i < len(seq.Values) {
			at = where(seq.Values[i], fmt.Sprintf("agents.%s.fallback[%d]", r.name, i))
		}
		switch {
		case name == r.name:
			l.fail(at, "agent %s cannot be its own fallback", r.name)
		case slices.Contains(a.Fallback, name):
			l.fail(at, "agent %q is listed twice", name)
		case l.checkAgent(field[string]{v: name, set: true, at: at}):
			a.Fallback = append(a.Fallback, name)
		}
	}
}
