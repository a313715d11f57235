package workflow

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Changes summarises, one line per difference, what changed in meaning
// between two versions of a workflow file, for refusing to resume a run
// under a different workflow (G8): "step implement: retry.max_attempts 3 →
// 5", "step review added", "agent claude: args changed". Formatting,
// comments and spelled-out defaults are not changes, so the result is empty
// when the two files mean the same. Files named by the workflow (prompt
// files, schemas) are compared by name only.
func Changes(old, new []byte) []string { return changes(old, new, false) }

// GraphChanges lists the changes among Changes' that alter the graph a
// run was started with: a step's kind, needs, when, run, loop (its inner
// steps, session and on_exhausted; not until and max_iterations, which
// take the loop's next decision) or approval, and the inputs. The run's committed state
// (which steps ran, were skipped, which iteration a loop is in, what a
// gate decided) was taken under the old graph and cannot be carried over
// to another: `resume --allow-changed` must refuse these, and say so,
// rather than apply them.
func GraphChanges(old, new []byte) []string { return changes(old, new, true) }

func changes(old, new []byte, graphOnly bool) []string {
	a, errsA := build(old, "old", "")
	b, errsB := build(new, "new", "")
	switch {
	case len(errsA) == 0 && len(errsB) == 0:
	case bytes.Equal(old, new):
		return nil
	case len(errsB) > 0:
		e := errsB[0]
		return []string{fmt.Sprintf("the workflow changed and no longer loads (line %d: %s)", e.Line, e.Msg)}
	default:
		return []string{"the workflow changed (the previous version did not load)"}
	}
	var out []string
	out = append(out, diff("", settings(a), settings(b), graphOnly)...)
	if !graphOnly {
		out = append(out, agentChanges(a, b)...)
	}
	out = append(out, stepChanges(a, b, graphOnly)...)
	return out
}

// setting is one comparable key of a workflow, agent or step. Long values
// (prompts, argument lists) are reported as changed rather than printed.
// A graph setting is one GraphChanges lists.
type setting struct {
	key, val string
	long     bool
	graph    bool
}

func diff(prefix string, old, new []setting, graphOnly bool) []string {
	var out []string
	for i := range old {
		o, n := old[i], new[i]
		switch {
		case o.val == n.val:
		case graphOnly && !o.graph:
		case o.long:
			out = append(out, fmt.Sprintf("%s%s changed", prefix, o.key))
		default:
			out = append(out, fmt.Sprintf("%s%s %s → %s", prefix, o.key, o.val, n.val))
		}
	}
	return out
}

func agentChanges(a, b *Workflow) []string {
	var out []string
	names := slices.Sorted(maps.Keys(a.Agents))
	for _, n := range names {
		if _, ok := b.Agents[n]; !ok {
			out = append(out, fmt.Sprintf("agent %s removed", n))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(b.Agents)) {
		old, ok := a.Agents[n]
		if !ok {
			out = append(out, fmt.Sprintf("agent %s added", n))
			continue
		}
		out = append(out, diff("agent "+n+": ", old.settings(), b.Agents[n].settings(), false)...)
	}
	return out
}

// stepChanges compares the steps, inner steps of loops included. Adding,
// removing or reordering a loop's inner steps changes the loop: a graph
// change. At the top, steps added, removed or moved are applied by resume
// --allow-changed, but a change they make to another step's needs is
// listed with that step.
func stepChanges(a, b *Workflow, graphOnly bool) []string {
	var out []string
	inside := func(s *Step) string {
		if s.Parent == "" {
			return ""
		}
		return " (inside loop " + s.Parent + ")"
	}
	for _, s := range a.All() {
		if b.Find(s.ID) == nil && (!graphOnly || s.Parent != "") {
			out = append(out, fmt.Sprintf("step %s removed%s", s.ID, inside(s)))
		}
	}
	for _, s := range b.All() {
		old := a.Find(s.ID)
		if old == nil {
			if !graphOnly || s.Parent != "" {
				out = append(out, fmt.Sprintf("step %s added%s", s.ID, inside(s)))
			}
			continue
		}
		out = append(out, diff("step "+s.ID+": ", old.settings(), s.settings(), graphOnly)...)
	}
	if o, n := commonOrder(a.Steps, b), commonOrder(b.Steps, a); !graphOnly && !slices.Equal(o, n) {
		out = append(out, fmt.Sprintf("steps reordered: %s → %s", strings.Join(o, ", "), strings.Join(n, ", ")))
	}
	for _, s := range b.All() {
		old := a.Find(s.ID)
		if s.Loop == nil || old == nil || old.Loop == nil {
			continue
		}
		if o, n := commonOrder(old.Loop.Steps, b), commonOrder(s.Loop.Steps, a); !slices.Equal(o, n) {
			out = append(out, fmt.Sprintf("steps of loop %s reordered: %s → %s", s.ID, strings.Join(o, ", "), strings.Join(n, ", ")))
		}
	}
	return out
}

// commonOrder lists the ids of steps that other has too, in order.
func commonOrder(steps []*Step, other *Workflow) []string {
	var out []string
	for _, s := range steps {
		if other.Find(s.ID) != nil {
			out = append(out, s.ID)
		}
	}
	return out
}

func settings(w *Workflow) []setting {
	inputs := make([]string, len(w.Inputs))
	for i, in := range w.Inputs {
		inputs[i] = fmt.Sprintf("%s %s default %s", in.Name, in.Schema.Raw, in.Default)
	}
	notify := make([]string, len(w.Notify))
	for i, t := range w.Notify {
		notify[i] = fmt.Sprintf("%s %q %q %s", t.Webhook, t.Command, t.On, t.NotifyAfter)
	}
	return []setting{
		{key: "name", val: text(w.Name)},
		{key: "max_cost_usd", val: num(w.MaxCostUSD)},
		{key: "max_parallel_steps", val: strconv.Itoa(w.MaxParallelSteps)},
		{key: "inputs", val: strings.Join(inputs, "; "), long: true, graph: true},
		{key: "notify", val: strings.Join(notify, "; "), long: true},
	}
}

func (a *Agent) settings() []setting {
	env := make([]string, 0, len(a.Env))
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		env = append(env, k+"="+a.Env[k])
	}
	return []setting{
		{key: "preset", val: a.Preset},
		{key: "command", val: list(a.Command), long: true},
		{key: "args", val: list(a.Args), long: true},
		{key: "env", val: list(env), long: true},
		{key: "prompt_via", val: a.PromptVia},
		{key: "output", val: a.Output},
		{key: "continue_args", val: list(a.ContinueArgs), long: true},
		{key: "help_marker", val: text(a.HelpMarker)},
		{key: "native_schema", val: strconv.FormatBool(a.NativeSchema)},
		{key: "scenario", val: text(a.Scenario)},
		{key: "base_url", val: text(a.BaseURL)},
		{key: "model", val: text(a.Model)},
		{key: "api_key_env", val: text(a.APIKeyEnv)},
		{key: "circuit.failures", val: strconv.Itoa(a.Circuit.Failures)},
		{key: "circuit.open_for", val: dur(a.Circuit.OpenFor)},
		{key: "circuit.half_open_calls", val: strconv.Itoa(a.Circuit.HalfOpenCalls)},
		{key: "config_dir", val: text(a.ConfigDir)},
		{key: "max_concurrent", val: strconv.Itoa(a.MaxConcurrent)},
		{key: "fallback", val: list(a.Fallback)},
		{key: "sandbox", val: a.Sandbox.text()},
	}
}

func (s *Step) settings() []setting {
	h, r := s.Handoff, s.Retry
	exprText := func(x *Expr) string {
		if x == nil {
			return "(none)"
		}
		return x.Source
	}
	run, runHandoff := "(none)", false
	if s.Run != nil {
		run, runHandoff = fmt.Sprintf("%q shell=%v", s.Run.Argv, s.Run.Shell), s.Run.Handoff
	}
	loop, until := Loop{}, "(none)"
	if s.Loop != nil {
		loop, until = *s.Loop, exprText(s.Loop.Until)
	}
	gate := Approval{}
	if s.Approval != nil {
		gate = *s.Approval
	}
	out := []setting{
		{key: "kind", val: s.Kind, graph: true},
		{key: "loop", val: text(s.Parent), graph: true},
		{key: "needs", val: needsText(s), graph: true},
		{key: "when", val: exprText(s.When), long: true, graph: true},
		{key: "allow_failure", val: strconv.FormatBool(s.AllowFailure)},
		{key: "run", val: run, long: true, graph: true},
		{key: "run.handoff", val: strconv.FormatBool(runHandoff), graph: true},
		// An edited until or max_iterations takes the loop's next
		// decision: what was decided stands, so neither changes the graph.
		{key: "loop.until", val: until, long: true},
		{key: "loop.max_iterations", val: strconv.Itoa(loop.MaxIterations)},
		{key: "loop.session", val: text(loop.Session), graph: true},
		{key: "loop.on_exhausted", val: text(loop.OnExhausted), graph: true},
		{key: "approval.prompt", val: gate.Prompt, long: true, graph: true},
		{key: "approval.on_reject", val: text(gate.OnReject), graph: true},
		{key: "approval.timeout", val: dur(gate.Timeout), graph: true},
		{key: "start_timeout", val: dur(s.StartTimeout)},
		{key: "fallback_after", val: dur(s.FallbackAfter)},
		{key: "agent", val: text(s.Agent)},
		{key: "prompt", val: s.Prompt, long: true},
		{key: "prompt_file", val: text(s.PromptFile)},
		{key: "handoff.from", val: h.From},
		{key: "handoff.path", val: text(h.Path)},
		{key: "handoff.schema", val: text(h.SchemaPath)},
		{key: "handoff.repair", val: strconv.FormatBool(h.Repair)},
		{key: "handoff.accept_truncated", val: strconv.FormatBool(h.AcceptTruncated)},
		{key: "handoff.coerce", val: strconv.FormatBool(h.Coerce)},
		{key: "handoff.max_bytes", val: strconv.FormatInt(h.MaxBytes, 10)},
		{key: "handoff.max_event_bytes", val: strconv.FormatInt(h.MaxEventBytes, 10)},
		{key: "handoff.transcript_max_bytes", val: strconv.FormatInt(h.TranscriptMaxBytes, 10)},
		{key: "handoff.max_depth", val: strconv.Itoa(h.MaxDepth)},
		{key: "retry.max_attempts", val: strconv.Itoa(r.MaxAttempts)},
		{key: "retry.backoff", val: r.Backoff},
		{key: "retry.initial", val: dur(r.Initial)},
		{key: "retry.multiplier", val: num(r.Multiplier)},
		{key: "retry.max", val: dur(r.Max)},
		{key: "retry.jitter", val: r.Jitter},
		{key: "retry.on", val: list(r.On)},
		{key: "retry.never", val: list(r.Never)},
		{key: "timeout", val: dur(s.Timeout)},
		{key: "idle_timeout", val: dur(s.IdleTimeout)},
		{key: "exit_grace", val: dur(s.ExitGrace)},
		{key: "sandbox", val: s.Sandbox.text()},
		{key: "restore_on_retry", val: strconv.FormatBool(s.RestoreOnRetry)},
		{key: "max_cost_usd", val: num(s.MaxCostUSD)},
		{key: "fail_on_exit_code", val: strconv.FormatBool(s.FailOnExitCode)},
	}
	checks := make([]string, len(s.Checks))
	for i, c := range s.Checks {
		checks[i] = fmt.Sprintf("%s: %q %s %d", c.Name, c.Argv, c.Timeout, c.FeedbackLines)
	}
	out = append(out, setting{key: "checks", val: strings.Join(checks, "; "), long: true})
	m, mapped := Map{}, "absent"
	if s.Map != nil {
		m, mapped = *s.Map, "present"
	}
	out = append(out,
		setting{key: "map", val: mapped},
		setting{key: "map.items", val: text(mapSource(m))},
		setting{key: "map.key", val: text(m.Key)},
		setting{key: "map.max_parallel", val: strconv.Itoa(m.MaxParallel)},
		setting{key: "map.max_failures", val: strconv.Itoa(m.MaxFailures)},
		setting{key: "map.workspace", val: text(m.Workspace)},
		setting{key: "map.merge", val: strconv.FormatBool(m.Merge)},
	)
	help := OnHelp{}
	present := "absent"
	if s.OnHelp != nil {
		help, present = *s.OnHelp, "present"
	}
	return append(out,
		setting{key: "on_help", val: present},
		setting{key: "on_help.agent", val: text(help.Agent)},
		setting{key: "on_help.prompt", val: help.Prompt, long: true},
		setting{key: "on_help.max_rounds", val: strconv.Itoa(help.MaxRounds)},
	)
}

// needsText shows a step's needs as written: a step without needs: needs
// the step before it, whichever that is, so that moving or removing steps
// of a workflow that never says needs: changes no step's needs (resume
// --allow-changed applies such moves).
func needsText(s *Step) string {
	if !s.needsWritten {
		return "(the step before)"
	}
	return fmt.Sprint(s.Needs)
}

func text(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func dur(d time.Duration) string { return d.String() }

func list(l []string) string { return fmt.Sprintf("%q", l) }

// mapSource shows where a map step's items come from.
func mapSource(m Map) string {
	switch {
	case m.ItemsStep != "":
		return "step " + m.ItemsStep + " pointer " + strconv.Quote(m.ItemsPointer)
	case m.ItemsFile != "":
		return "file " + m.ItemsFile
	}
	return ""
}

// FileChanges summarises, one line per file, which of the files a
// workflow names (Workflow.Files, path → sha256) changed content between
// two loads of it: "file schemas/out.json changed". A file that only one
// of them names is left to Changes, which reports the setting that names
// it.
func FileChanges(old, new map[string]string) []string {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(old)) {
		if h, ok := new[path]; ok && h != old[path] {
			out = append(out, fmt.Sprintf("file %s changed", path))
		}
	}
	return out
}
