package workflow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// stepID is the form of a step id: it names directories under .cadence/.
var stepID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// builtStep is a step with what it was built from, kept until the checks
// that need the whole workflow (the graph, templates, expressions) ran.
type builtStep struct {
	s    *Step
	r    *rawStep // in the slice the decoder built, never copied: it is big
	path string
}

// buildSteps merges the defaults into each step, the inner steps of loops
// included, and checks it; the graph, templates and expressions are
// checked last, once every step id and position is known.
func (l *loader) buildSteps(raws []rawStep, defaults rawDefaults) {
	l.ids = map[string]at{}
	l.w.Steps = l.buildLevel(raws, "steps", "", defaults)
	l.w.byID = make(map[string]*Step, len(l.built))
	for _, b := range l.built {
		if _, dup := l.w.byID[b.s.ID]; !dup {
			l.w.byID[b.s.ID] = b.s
		}
	}
	l.buildGraph()
	l.ancestry = newAncestry(l.w)
	l.mapped = map[string]bool{}
	for _, b := range l.built {
		if b.r.mapping != nil {
			l.mapped[b.s.ID] = true
		}
	}
	for _, b := range l.built {
		l.checkRefs(b)
	}
}

// buildLevel builds one list of sibling steps: the workflow's, or a loop's
// inner steps (parent is then the loop's id).
func (l *loader) buildLevel(raws []rawStep, prefix, parent string, defaults rawDefaults) []*Step {
	level := make([]*Step, 0, len(raws))
	for i := range raws {
		r := &raws[i]
		path := fmt.Sprintf("%s[%d]", prefix, i)
		s := &Step{ID: r.id.v, Index: i, Parent: parent, at: r.at}
		level = append(level, s)
		l.built = append(l.built, builtStep{s: s, r: r, path: path})
		switch {
		case !r.id.set:
			if !l.hasErrorAt(path + ".id") {
				l.fail(r.at, "missing id")
			}
		case !stepID.MatchString(r.id.v):
			l.fail(r.id.at, "invalid step id %q (want lowercase letters, digits, _ and -, starting with a letter or digit)", r.id.v)
		default:
			if first, dup := l.ids[r.id.v]; dup {
				l.fail(r.id.at, "duplicate step id %q (first at line %d; ids are unique in the whole file, inner steps of loops included)", r.id.v, first.line)
			} else {
				l.ids[r.id.v] = r.id.at
			}
		}
		s.Kind = l.stepKind(r)
		s.AllowFailure = r.allowFailure.get(false)
		if s.Kind == KindAgent || s.Kind == KindCommand {
			l.restoreOnRetry(s, r, defaults)
		}
		switch s.Kind {
		case KindAgent:
			l.buildAgentStep(s, r, path, defaults)
		case KindCommand:
			s.Handoff = l.buildHandoff(rawHandoff{}, path)
			if _, ok := r.keys.find("handoff"); ok {
				s.Handoff = l.buildHandoff(r.handoff.over(defaults.handoff), path)
			}
			retry := r.retry.over(defaults.retry)
			l.checkRetry(retry)
			s.Retry = retry.build()
			s.Timeout = r.timeout.get(DefaultCommandTimeout)
			s.Checks = l.buildChecks(r.checks)
			if r.run != nil {
				l.buildCommand(s, r)
				s.Sandbox = l.buildSandbox(r.sandbox.over(defaults.sandbox), "step "+s.ID)
			}
		case KindLoop:
			if r.loop != nil {
				s.Loop = l.buildLoop(r.loop)
				s.Loop.Steps = l.buildLevel(r.loop.steps, path+".loop.steps", s.ID, defaults)
			}
		case KindApproval:
			if r.approval != nil {
				s.Approval = l.buildApproval(r.approval)
			}
		}
	}
	return level
}

// buildAgentStep merges the defaults into an agent step.
func (l *loader) buildAgentStep(s *Step, r *rawStep, path string, defaults rawDefaults) {
	l.buildPrompt(s, r)
	if r.sandbox != nil {
		l.fail(r.sandbox.at, "an agent step runs in its agent's box: set sandbox: on the agent (agents.NAME.sandbox) or in defaults")
	}
	agent := r.agent.or(defaults.agent)
	switch {
	case !agent.set:
		if !l.hasErrorAt(path + ".agent") {
			l.fail(r.at, "no agent (set agent: here or in defaults)")
		}
	case l.checkAgent(agent):
		s.Agent = agent.v
	}
	s.Handoff = l.buildHandoff(r.handoff.over(defaults.handoff), path)
	retry := r.retry.over(defaults.retry)
	l.checkRetry(retry)
	s.Retry = retry.build()
	s.Timeout = r.timeout.or(defaults.timeout).get(DefaultTimeout)
	s.IdleTimeout = r.idleTimeout.or(defaults.idleTimeout).get(DefaultIdleTimeout)
	s.ExitGrace = r.exitGrace.or(defaults.exitGrace).get(DefaultExitGrace)
	start := r.startTimeout.or(defaults.startTimeout)
	s.StartTimeout, s.StartTimeoutSet = start.get(DefaultStartTimeout), start.set
	if start.set && s.Timeout > 0 && s.StartTimeout >= s.Timeout {
		l.warn(start.at, "start_timeout %s of step %s is not shorter than its timeout %s, which stops the agent first: it never applies", s.StartTimeout, s.ID, s.Timeout)
	}
	s.FallbackAfter = r.fallbackAfter.or(defaults.fallbackAfter).get(0)
	s.MaxCostUSD = r.maxCost.or(defaults.maxCost).get(0)
	s.Checks = l.buildChecks(r.checks.or(defaults.checks))
	s.FailOnExitCode = r.failOnExitCode.or(defaults.failOnExitCode).get(false)
	if r.onHelp != nil {
		s.OnHelp = l.buildOnHelp(r.onHelp, s, path)
	}
}

// buildPrompt checks that exactly one of prompt and prompt_file is set and
// reads the file.
func (l *loader) buildPrompt(s *Step, r *rawStep) {
	switch {
	case r.prompt.set && r.promptFile.set:
		l.fail(r.promptFile.at, "both prompt and prompt_file are set (want exactly one)")
	case r.prompt.set:
		s.Prompt = r.prompt.v
	case r.promptFile.set:
		s.PromptFile = r.promptFile.v
		_, abs, ok := l.file(r.promptFile, true)
		if !ok || l.dir == "" {
			return
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			l.fail(r.promptFile.at, "read prompt: %v", err)
			return
		}
		l.named(abs, b)
		s.Prompt = string(b)
	default:
		if !l.hasErrorAt(r.at.key+".prompt") && !l.hasErrorAt(r.at.key+".prompt_file") {
			l.fail(r.at, "missing prompt or prompt_file")
		}
	}
}

// buildHandoff applies the built-in defaults to a merged handoff: mapping,
// checks its paths and compiles its schema.
func (l *loader) buildHandoff(r rawHandoff, path string) Handoff {
	h := Handoff{
		From:               r.from.get("stdout"),
		Repair:             r.repair.get(true),
		AcceptTruncated:    r.acceptTruncated.get(false),
		Coerce:             r.coerce.get(true),
		MaxBytes:           r.maxBytes.get(DefaultMaxBytes),
		MaxEventBytes:      r.maxEventBytes.get(DefaultMaxEventBytes),
		TranscriptMaxBytes: r.transcriptMaxBytes.get(DefaultTranscriptMaxBytes),
		MaxDepth:           r.maxDepth.get(DefaultMaxDepth),
	}
	switch {
	case h.From == "file" && !r.path.set:
		l.fail(at{line: r.from.at.line, col: r.from.at.col, key: path + ".handoff"}, "from: file needs a path")
	case h.From != "file" && r.path.set:
		l.fail(r.path.at, "path is only used with from: file")
	case r.path.set:
		if rel, _, ok := l.file(r.path, false); ok {
			h.Path = rel
		}
	}
	if r.schema.set {
		h.SchemaPath = r.schema.v
		if _, abs, ok := l.file(r.schema, true); ok && l.dir != "" {
			s, data, err := l.schemas.get(abs)
			if data != nil {
				l.named(abs, data)
			}
			if err != nil {
				l.fail(r.schema.at, "schema does not compile: %s", l.schemaProblem(abs, err))
			}
			h.Schema = s
		}
	}
	return h
}

// buildOnHelp applies defaults to an on_help: mapping.
func (l *loader) buildOnHelp(r *rawOnHelp, s *Step, path string) *OnHelp {
	h := &OnHelp{Agent: s.Agent, Prompt: r.prompt.v, MaxRounds: r.maxRounds.get(2)}
	if r.agent.set && l.checkAgent(r.agent) {
		h.Agent = r.agent.v
	}
	if !r.prompt.set && !l.hasErrorAt(path+".on_help.prompt") {
		l.fail(at{line: r.at.line, col: r.at.col, key: path + ".on_help"}, "missing prompt")
	}
	return h
}

// template parses text, reporting syntax and reference errors at src.
func (l *loader) template(c *refChecker, src field[string], text string, set func(*template.Template)) {
	t, err := l.parseTemplate(c.step, text)
	if err != nil {
		l.fail(src.at, "%v", err)
		return
	}
	c.errs = c.errs[:0]
	c.check(t)
	for _, msg := range c.errs {
		l.fail(src.at, "%s", msg)
	}
	set(t)
}

// parseTemplate is newTemplate, except that a text without an action
// ("{{") is parsed once per load and its template shared by every step
// that writes it: such a template renders its text and cannot fail, so
// no step can tell it from its own, and the argv words of command steps
// ("/bin/true", "test", "./...") repeat across steps. Executing a template
// is safe from several goroutines at once.
func (l *loader) parseTemplate(name, text string) (*template.Template, error) {
	if strings.Contains(text, "{{") {
		return newTemplate(name, text)
	}
	if t, ok := l.literals[text]; ok {
		return t, nil
	}
	t, err := newTemplate("text", text)
	if err != nil {
		return nil, err
	}
	if l.literals == nil {
		l.literals = map[string]*template.Template{}
	}
	l.literals[text] = t
	return t, nil
}

// schemaProblem describes why the schema at abs did not compile, naming
// files relative to the project.
func (l *loader) schemaProblem(abs string, err error) string {
	var se *handoff.SchemaError
	if !errors.As(err, &se) {
		return err.Error()
	}
	var parts []string
	if se.Path != abs {
		if rel, err := filepath.Rel(l.dir, se.Path); err == nil {
			parts = append(parts, rel)
		} else {
			parts = append(parts, se.Path)
		}
	}
	if se.Location != "" {
		parts = append(parts, se.Location)
	}
	return strings.Join(append(parts, se.Reason), ": ")
}

// checkRetry checks the keys of a merged retry policy against each other.
func (l *loader) checkRetry(r rawRetry) {
	p := r.build()
	if p.Max < p.Initial {
		a := r.max.at
		if !r.max.set {
			a = r.initial.at
		}
		l.fail(a, "max %s is shorter than initial %s", p.Max, p.Initial)
	}
	for _, c := range p.On {
		if slices.Contains(p.Never, c) {
			l.fail(r.never.at, "class %s is in both retry.on and retry.never", c)
		}
	}
}

// restoreOnRetry sets a step's restore_on_retry (its own over defaults').
// The items of a map step in a shared directory would undo each other's
// work: there it needs workspace: worktree.
func (l *loader) restoreOnRetry(s *Step, r *rawStep, defaults rawDefaults) {
	f := r.restoreOnRetry.or(defaults.restoreOnRetry)
	s.RestoreOnRetry = f.get(false)
	if s.RestoreOnRetry && r.mapping != nil && r.mapping.workspace.get(WorkspaceShared) != WorkspaceWorktree {
		l.fail(f.at, "restore_on_retry on map step %s needs workspace: worktree (items sharing the project directory would undo each other's work)", r.id.v)
	}
}
