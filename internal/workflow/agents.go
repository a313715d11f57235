package workflow

import (
	"os"
	"time"
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
