package workflow

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/cadence-dev/cadence/internal/retrystate"
)

// rawRetry is a retry: mapping as written; unset fields inherit.
type rawRetry struct {
	maxAttempts field[int]
	backoff     field[string]
	initial     field[time.Duration]
	multiplier  field[float64]
	max         field[time.Duration]
	jitter      field[string]
	on, never   field[[]string]
}

func (d *decoder) retry(n ast.Node, path string) rawRetry {
	var r rawRetry
	d.fields(n, path, []string{"max_attempts", "backoff", "initial", "multiplier", "max", "jitter", "on", "never"}, func(e entry) {
		switch e.name {
		case "max_attempts":
			r.maxAttempts = d.integer(e, 1, math.MaxInt32)
		case "backoff":
			r.backoff = d.enum(e, backoffs)
		case "initial":
			r.initial = d.duration(e, 0)
		case "multiplier":
			r.multiplier = d.number(e, 1)
		case "max":
			r.max = d.duration(e, 0)
		case "jitter":
			r.jitter = d.enum(e, jitters)
		case "on":
			r.on = d.classes(e, true)
		case "never":
			r.never = d.classes(e, false)
		}
	})
	return r
}

// classes decodes a list of failure class names, the ones the retry
// policy knows (retrystate.Classes); retryable says the list is retry.on,
// which may not name a class that always ends the step.
func (d *decoder) classes(e entry, retryable bool) field[[]string] {
	f := d.stringList(e)
	if !f.set {
		return f
	}
	seq := unwrap(e.val).(*ast.SequenceNode)
	for i, c := range f.v {
		a := where(seq.Values[i], fmt.Sprintf("%s[%d]", e.path, i))
		switch {
		case !slices.Contains(retrystate.Classes, c):
			d.fail(a, "unknown failure class %q (want %s)", c, alternatives(retrystate.Classes, "or"))
			f.set = false
		case retryable && retrystate.Terminal(c):
			d.fail(a, "class %q always ends the step and is never retried; remove it from retry.on", c)
			f.set = false
		}
	}
	return f
}

// over merges r over the defaults d, key by key.
func (r rawRetry) over(d rawRetry) rawRetry {
	return rawRetry{
		maxAttempts: r.maxAttempts.or(d.maxAttempts),
		backoff:     r.backoff.or(d.backoff),
		initial:     r.initial.or(d.initial),
		multiplier:  r.multiplier.or(d.multiplier),
		max:         r.max.or(d.max),
		jitter:      r.jitter.or(d.jitter),
		on:          r.on.or(d.on),
		never:       r.never.or(d.never),
	}
}

func (r rawRetry) build() Retry {
	return Retry{
		MaxAttempts: r.maxAttempts.get(3),
		Backoff:     r.backoff.get("exponential"),
		Initial:     r.initial.get(2 * time.Second),
		Multiplier:  r.multiplier.get(2),
		Max:         r.max.get(60 * time.Second),
		Jitter:      r.jitter.get("full"),
		On:          r.on.get(nil),
		Never:       r.never.get(nil),
	}
}

// rawHandoff is a handoff: mapping as written; unset fields inherit.
type rawHandoff struct {
	from, path, schema      field[string]
	repair, acceptTruncated field[bool]
	coerce                  field[bool]
	maxBytes                field[int64]
	maxEventBytes           field[int64]
	transcriptMaxBytes      field[int64]
	maxDepth                field[int]
}

func (d *decoder) handoff(n ast.Node, path string) rawHandoff {
	var h rawHandoff
	d.fields(n, path, []string{"from", "path", "schema", "repair", "accept_truncated", "coerce", "max_bytes", "max_event_bytes", "transcript_max_bytes", "max_depth"}, func(e entry) {
		switch e.name {
		case "from":
			h.from = d.enum(e, handoffFroms)
		case "path":
			h.path = d.nonEmpty(e)
		case "schema":
			h.schema = d.nonEmpty(e)
		case "repair":
			h.repair = d.boolean(e)
		case "accept_truncated":
			h.acceptTruncated = d.boolean(e)
		case "coerce":
			h.coerce = d.boolean(e)
		case "max_bytes":
			h.maxBytes = d.size(e)
		case "max_event_bytes":
			h.maxEventBytes = d.size(e)
		case "transcript_max_bytes":
			h.transcriptMaxBytes = d.size(e)
		case "max_depth":
			h.maxDepth = d.integer(e, 1, 1<<20)
		}
	})
	return h
}

func (h rawHandoff) over(d rawHandoff) rawHandoff {
	return rawHandoff{
		from:               h.from.or(d.from),
		path:               h.path.or(d.path),
		schema:             h.schema.or(d.schema),
		repair:             h.repair.or(d.repair),
		acceptTruncated:    h.acceptTruncated.or(d.acceptTruncated),
		coerce:             h.coerce.or(d.coerce),
		maxBytes:           h.maxBytes.or(d.maxBytes),
		maxEventBytes:      h.maxEventBytes.or(d.maxEventBytes),
		transcriptMaxBytes: h.transcriptMaxBytes.or(d.transcriptMaxBytes),
		maxDepth:           h.maxDepth.or(d.maxDepth),
	}
}

// nonEmpty decodes a string that must not be empty.
func (d *decoder) nonEmpty(e entry) field[string] {
	s := d.str(e)
	if s.set && s.v == "" {
		d.fail(s.at, "must not be empty")
		return field[string]{}
	}
	return s
}

// rawDefaults is the defaults: section.
type rawDefaults struct {
	agent                field[string]
	retry                rawRetry
	timeout, idleTimeout field[time.Duration]
	exitGrace            field[time.Duration]
	handoff              rawHandoff
	maxCost              field[float64]
	checks               rawChecks
	failOnExitCode       field[bool]
	startTimeout         field[time.Duration]
	fallbackAfter        field[time.Duration]
	sandbox              *rawSandbox
	restoreOnRetry       field[bool]
}

func (d *decoder) defaults(n ast.Node) rawDefaults {
	var r rawDefaults
	d.fields(n, "defaults", []string{"agent", "retry", "timeout", "idle_timeout", "exit_grace", "handoff", "max_cost_usd", "checks", "fail_on_exit_code", "start_timeout", "fallback_after", "sandbox", "restore_on_retry"}, func(e entry) {
		switch e.name {
		case "restore_on_retry":
			r.restoreOnRetry = d.boolean(e)
		case "sandbox":
			r.sandbox = d.sandbox(e)
		case "start_timeout":
			r.startTimeout = d.duration(e, time.Second)
		case "fallback_after":
			r.fallbackAfter = d.duration(e, 0)
		case "agent":
			r.agent = d.nonEmpty(e)
		case "retry":
			r.retry = d.retry(e.val, e.path)
		case "timeout":
			r.timeout = d.duration(e, time.Second)
		case "idle_timeout":
			r.idleTimeout = d.duration(e, time.Second)
		case "exit_grace":
			r.exitGrace = d.exitGrace(e)
		case "handoff":
			r.handoff = d.handoff(e.val, e.path)
		case "max_cost_usd":
			r.maxCost = d.number(e, 0)
		case "checks":
			r.checks = d.checks(e)
		case "fail_on_exit_code":
			r.failOnExitCode = d.boolean(e)
		}
	})
	return r
}

// exitGrace decodes an exit_grace: a duration from 0 to MaxExitGrace.
func (d *decoder) exitGrace(e entry) field[time.Duration] {
	f := d.duration(e, 0)
	if f.set && f.v > MaxExitGrace {
		d.fail(e.valAt(), "exit_grace %s is too long (want at most %s)", f.v, MaxExitGrace)
		return field[time.Duration]{}
	}
	return f
}

// rawOnHelp is a step's on_help: mapping.
type rawOnHelp struct {
	agent, prompt field[string]
	maxRounds     field[int]
	at            at
}

// rawStep is one entry of steps: as written.
type rawStep struct {
	id, agent, prompt, promptFile field[string]
	handoff                       rawHandoff
	retry                         rawRetry
	timeout, idleTimeout          field[time.Duration]
	exitGrace                     field[time.Duration]
	maxCost                       field[float64]
	onHelp                        *rawOnHelp
	checks                        rawChecks
	failOnExitCode                field[bool]
	mapping                       *rawMap
	needs                         rawNeeds
	when                          *rawExpr
	allowFailure                  field[bool]
	run                           *rawRun
	loop                          *rawLoop
	approval                      *rawApproval
	startTimeout, fallbackAfter   field[time.Duration]
	sandbox                       *rawSandbox
	restoreOnRetry                field[bool]
	keys                          writtenKeys // every key written, where
	at                            at          // the step itself
}

// writtenKeys are the keys of a step as written, in file order, each once
// (the YAML parser refuses a key written twice). A step has a handful:
// a list searched from the start costs less than a map per step.
type writtenKeys []stepKey

// stepKey is one key of a step and where it was written.
type stepKey struct {
	name string
	at   at
}

// find returns where key was written, and whether it was.
func (ks writtenKeys) find(key string) (at, bool) {
	for _, k := range ks {
		if k.name == key {
			return k.at, true
		}
	}
	return at{}, false
}

// allStepKeys are the keys a step may have, whatever its kind.
var allStepKeys = []string{
	"id", "needs", "when", "allow_failure",
	"agent", "prompt", "prompt_file", "handoff", "retry", "timeout", "idle_timeout", "exit_grace",
	"max_cost_usd", "on_help", "checks", "map", "fail_on_exit_code", "start_timeout", "fallback_after",
	"run", "loop", "approval", "sandbox", "restore_on_retry",
}

func (d *decoder) step(n ast.Node, path string) rawStep {
	r := rawStep{at: where(n, path)}
	if m, ok := unwrap(n).(*ast.MappingNode); ok {
		r.keys = make(writtenKeys, 0, len(m.Values))
	}
	d.fields(n, path, allStepKeys, func(e entry) {
		r.keys = append(r.keys, stepKey{e.name, e.keyAt()})
		switch e.name {
		case "fail_on_exit_code":
			r.failOnExitCode = d.boolean(e)
		case "map":
			r.mapping = d.mapSection(e)
		case "id":
			r.id = d.str(e)
		case "agent":
			r.agent = d.nonEmpty(e)
		case "prompt":
			r.prompt = d.str(e)
		case "prompt_file":
			r.promptFile = d.nonEmpty(e)
		case "handoff":
			r.handoff = d.handoff(e.val, e.path)
		case "retry":
			r.retry = d.retry(e.val, e.path)
		case "timeout":
			r.timeout = d.duration(e, time.Second)
		case "idle_timeout":
			r.idleTimeout = d.duration(e, time.Second)
		case "exit_grace":
			r.exitGrace = d.exitGrace(e)
		case "max_cost_usd":
			r.maxCost = d.number(e, 0)
		case "checks":
			r.checks = d.checks(e)
		case "on_help":
			h := &rawOnHelp{at: e.keyAt()}
			d.fields(e.val, e.path, []string{"agent", "prompt", "max_rounds"}, func(e entry) {
				switch e.name {
				case "agent":
					h.agent = d.nonEmpty(e)
				case "prompt":
					h.prompt = d.str(e)
				case "max_rounds":
					h.maxRounds = d.integer(e, 1, 100)
				}
			})
			r.onHelp = h
		case "needs":
			r.needs = d.needs(e)
		case "when":
			r.when = d.expr(e)
		case "allow_failure":
			r.allowFailure = d.boolean(e)
		case "start_timeout":
			r.startTimeout = d.duration(e, time.Second)
		case "fallback_after":
			r.fallbackAfter = d.duration(e, 0)
		case "run":
			argv, text, shell := d.command(e)
			if argv.set {
				r.run = &rawRun{argv: argv, text: text, shell: shell, node: e.val}
			}
		case "sandbox":
			r.sandbox = d.sandbox(e)
		case "restore_on_retry":
			r.restoreOnRetry = d.boolean(e)
		case "loop":
			r.loop = d.loopSection(e)
		case "approval":
			r.approval = d.approvalSection(e)
		}
	})
	return r
}

// rawAgent is one entry of agents: as written.
type rawAgent struct {
	name                        string
	preset, promptVia, output   field[string]
	command, args, continueArgs field[[]string]
	env                         field[map[string]string]
	helpMarker, scenario        field[string]
	baseURL, model, apiKeyEnv   field[string]
	nativeSchema                field[bool]
	failures, halfOpenCalls     field[int]
	openFor                     field[time.Duration]
	configDir                   field[string]
	maxConcurrent               field[int]
	fallback                    field[[]string]
	fallbackNode                ast.Node
	sandbox                     *rawSandbox
	at                          at // the agent's name
}

func (d *decoder) agent(e entry) rawAgent {
	r := rawAgent{name: e.name, at: e.keyAt()}
	d.fields(e.val, e.path, []string{
		"preset", "command", "args", "env", "prompt_via", "output", "continue_args",
		"help_marker", "native_schema", "scenario", "base_url", "model", "api_key_env", "circuit",
		"config_dir", "max_concurrent", "fallback", "sandbox",
	}, func(e entry) {
		switch e.name {
		case "sandbox":
			r.sandbox = d.sandbox(e)
		case "config_dir":
			r.configDir = d.nonEmpty(e)
		case "max_concurrent":
			r.maxConcurrent = d.integer(e, 1, math.MaxInt32)
		case "fallback":
			r.fallback = d.stringList(e)
			r.fallbackNode = e.val
		case "preset":
			r.preset = d.enum(e, presets)
		case "command":
			r.command = d.argv(e)
			if r.command.set && len(r.command.v) == 0 {
				d.fail(r.command.at, "must not be empty")
				r.command.set = false
			}
		case "args":
			r.args = d.argv(e)
		case "env":
			r.env = d.strmap(e)
		case "prompt_via":
			r.promptVia = d.enum(e, promptVias)
		case "output":
			r.output = d.enum(e, outputs)
		case "continue_args":
			r.continueArgs = d.argv(e)
		case "help_marker":
			r.helpMarker = d.nonEmpty(e)
		case "native_schema":
			r.nativeSchema = d.boolean(e)
		case "scenario":
			r.scenario = d.nonEmpty(e)
		case "base_url":
			r.baseURL = d.nonEmpty(e)
		case "model":
			r.model = d.nonEmpty(e)
		case "api_key_env":
			r.apiKeyEnv = d.nonEmpty(e)
		case "circuit":
			d.fields(e.val, e.path, []string{"failures", "open_for", "half_open_calls"}, func(e entry) {
				switch e.name {
				case "failures":
					r.failures = d.integer(e, 1, math.MaxInt32)
				case "open_for":
					r.openFor = d.duration(e, 0)
				case "half_open_calls":
					r.halfOpenCalls = d.integer(e, 1, math.MaxInt32)
				}
			})
		}
	})
	return r
}

// argv decodes a list of argv words, each of which is a template.
func (d *decoder) argv(e entry) field[[]string] {
	f := d.stringList(e)
	if !f.set {
		return f
	}
	seq := unwrap(e.val).(*ast.SequenceNode)
	for i, word := range f.v {
		if !strings.Contains(word, "{{") {
			continue // no action: the text itself, which always parses
		}
		if _, err := newTemplate(e.path, word); err != nil {
			d.fail(where(seq.Values[i], fmt.Sprintf("%s[%d]", e.path, i)), "%v", err)
		}
	}
	return f
}
