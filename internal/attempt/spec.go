package attempt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// onStart records the pid of a started agent (the attempt row itself was
// committed before the start) and announces the attempt.
func (t *try) onStart(ctx context.Context) func(pid int) error {
	runID, a, plan := t.in.Run.ID, t.row, t.plan
	return func(pid int) error {
		// Durable before the agent runs (it runs once this returns): the
		// pid finds an agent that outlived a crashed cadence (G6), and
		// after a power cut it is what tells resume that the agent ran,
		// so that the next attempt continues its session (G5). One
		// fsync of the WAL per attempt. A row that names the process
		// already was committed so (reserveSupervisor).
		if a.PID == nil || *a.PID != pid {
			if err := t.r.Store.UpdateBeforeStart(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
				row, err := tx.UnitAttempt(t.in.Unit(), a.N)
				if err != nil {
					return err
				}
				row.PID = &pid
				return tx.UpdateAttempt(*row)
			}); err != nil {
				return &storeError{fmt.Errorf("record the pid of attempt %d: %w", a.N, err)}
			}
			a.PID = &pid
		}
		t.r.Sink.Emit(history.Event{Time: t.r.now(), Type: history.EventAttemptStarted, RunID: runID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Agent: plan.agent,
			Attempt: a.N, Counted: t.counted, MaxAttempts: t.max, HelpRound: t.round, Kind: plan.kind, PID: pid, SessionID: plan.sessionID})
		return nil
	}
}

// agentSpec builds the process description of an attempt.
func (t *try) agentSpec(ag *workflow.Agent, handoffPath string) (agent.Spec, error) {
	ws, a, plan := t.in.Step, t.row, t.plan
	data := instanceData(t.in, a.N)
	data["Steps"] = map[string]any(nil) // argv templates are not given the steps' outputs

	data["SessionID"] = plan.sessionID
	cmd, err := renderArgs("command", ag.Command, data)
	if err != nil {
		return agent.Spec{}, fmt.Errorf("agent %s: %w", ag.Name, err)
	}
	args, err := renderArgs("args", ag.Args, data)
	if err != nil {
		return agent.Spec{}, fmt.Errorf("agent %s: %w", ag.Name, err)
	}
	var cont []string
	if plan.resume {
		if cont, err = renderArgs("continue_args", ag.ContinueArgs, data); err != nil {
			return agent.Spec{}, fmt.Errorf("agent %s: %w", ag.Name, err)
		}
	}
	inv := agent.Invocation{
		Preset: ag.Preset, Command: cmd, Args: args, ContinueArgs: cont,
		Prompt: plan.prompt, PromptVia: ag.PromptVia,
		SessionID: plan.sessionID, Resume: plan.resume,
		Scenario: ag.Scenario, SelfExe: t.r.SelfExe,
		NativeSchema: ag.NativeSchema, IdleTimeout: ws.IdleTimeout,
		ConfigDir: ag.ConfigDir,
	}
	if ws.Handoff.Schema != nil {
		inv.SchemaJSON = ws.Handoff.Schema.Raw
		if inv.SchemaFile, err = t.nativeSchemaFile(ag, inv.SchemaJSON); err != nil {
			return agent.Spec{}, err
		}
	}
	var (
		argv  []string
		stdin []byte
		proto agent.Protocol
	)
	if ag.Preset != agent.PresetOpenAI {
		if argv, stdin, proto, err = agent.Command(inv); err != nil {
			return agent.Spec{}, fmt.Errorf("agent %s: %w", ag.Name, err)
		}
	}
	if ag.Preset == "exec" && ag.Output != "" {
		proto = agent.Protocol(ag.Output)
	}
	env := append([]string(nil), t.r.Env...)
	for k, v := range ag.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, agent.PresetEnv(inv, env)...)
	env = append(env, t.cadenceEnv()...)
	if handoffPath != "" {
		env = append(env, "CADENCE_HANDOFF_PATH="+handoffPath)
	}
	return agent.Spec{
		StartTimeout: startTimeout(ws, proto),
		Argv:         argv, Env: env, Dir: t.r.WorkDir(t.in), Stdin: stdin, Protocol: proto,
		OutputCap: ws.Handoff.TranscriptMaxBytes, MaxBytes: ws.Handoff.MaxBytes, MaxEventBytes: ws.Handoff.MaxEventBytes,
		Timeout: ws.Timeout, IdleTimeout: ws.IdleTimeout, Grace: t.r.Grace, ExitGrace: ws.ExitGrace,
		HelpMarker: ag.HelpMarker, Resume: plan.resume, Supervisor: t.r.SelfExe, Spares: t.r.Spares,
		UsageFileFlag: agent.UsageFileFlag(ag.Preset),
	}, nil
}

// startTimeout is the step's start_timeout as it applies to an agent
// speaking proto: a stream CLI announces itself at once, so the default
// applies to it; a text agent may be silent until it answers, so only a
// start_timeout the workflow sets applies to it.
func startTimeout(ws *workflow.Step, proto agent.Protocol) time.Duration {
	switch proto {
	case agent.ProtocolClaudeStream, agent.ProtocolCodexJSONL, agent.ProtocolGeminiStream, agent.ProtocolQwenStream, agent.ProtocolOpencodeJSON, agent.ProtocolPiJSON, agent.ProtocolCopilotJSON:
		return ws.StartTimeout
	}
	if ws.StartTimeoutSet {
		return ws.StartTimeout
	}
	return 0
}

// nativeSchemaFile writes the step's schema, as compiled, beside the
// attempt's output for an agent that reads a native schema from a file
// (Codex), and returns its path; "" for any other agent.
func (t *try) nativeSchemaFile(ag *workflow.Agent, schema []byte) (string, error) {
	if !ag.NativeSchema || ag.Preset != agent.PresetCodex {
		return "", nil
	}
	path := filepath.Join(t.attemptsDir(), strconv.Itoa(t.row.N)+".schema.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("agent %s: native schema: %w", ag.Name, err)
	}
	if err := checkpoint.WriteFileAtomic(path, schema, 0o644); err != nil {
		return "", fmt.Errorf("agent %s: native schema: %w", ag.Name, err)
	}
	return path, nil
}

// recordUsage copies what the agent reported (exit code, session, turns,
// tokens, cost) onto the attempt's row; nil leaves it as it is.
func (t *try) recordUsage(res *agent.Result) {
	if res == nil {
		return
	}
	a := t.row
	code := res.ExitCode
	a.ExitCode = &code
	agentName := t.plan.agent
	if t.plan.kind == checkpoint.KindHelp {
		// An advisor's session is its own round's, named by cadence.
		agentName = t.in.Step.OnHelp.Agent
	} else if res.SessionID != "" {
		a.SessionID = res.SessionID
	}
	a.Turns = res.Turns
	a.InputTokens, a.OutputTokens = res.InputTokens, res.OutputTokens
	a.CachedTokens = res.CachedTokens
	// A command step (no agent) costs nothing; an agent's cost is known
	// when it reported one.
	if ag := t.r.Workflow.Agents[agentName]; ag == nil || res.CostKnown || res.CostUSD > 0 || isProtocolCost(ag.Preset) {
		c := res.CostUSD
		a.CostUSD = &c
	}
}

// attemptNote says what an attempt's outcome alone does not: why it did
// not use a session id it would have used (the step's, not a plain token,
// plan.note; or the one the agent reported, which the next attempt would
// have continued), and that the agent was stopped after its final answer
// because it did not exit. "" when there is nothing to say.
func attemptNote(ws *workflow.Step, plan attemptPlan, res *agent.Result) string {
	note := plan.note
	if res == nil {
		return note
	}
	if res.SessionIDRejected != "" {
		note = withNote(note, "the session id the agent reported was not used, the next attempt starts a fresh session: "+res.SessionIDRejected)
	}
	if res.Stop == agent.StopLingered {
		note = withNote(note, fmt.Sprintf("the agent had given its final answer but had not exited %s later (exit_grace); it was stopped, and its answer judged", ws.ExitGrace))
	}
	return note
}

// withNote appends a note, on a line of its own, to an attempt's error.
func withNote(text, note string) string {
	switch {
	case note == "":
		return text
	case text == "":
		return note
	}
	return text + "\n" + note
}

// handoffOptions are the handoff pipeline's settings of a step.
func handoffOptions(ws *workflow.Step) handoff.Options {
	return handoff.Options{Repair: ws.Handoff.Repair, AcceptTruncated: ws.Handoff.AcceptTruncated, Coerce: ws.Handoff.Coerce,
		MaxBytes: ws.Handoff.MaxBytes, MaxDepth: ws.Handoff.MaxDepth}
}

// WithoutCadenceVars returns env without its CADENCE_* variables. An agent
// or a check gets only the CADENCE_* variables cadence sets for it
// (cadenceEnv, CADENCE_HANDOFF_PATH, CADENCE_CHECK) and those the
// workflow gives the agent in its env:: a variable inherited from
// cadence's own environment would describe another run, step or item
// (cadence running inside a cadence step), or steer a cadence the agent
// runs (CADENCE_STATE, CADENCE_FAILPOINT) into the outer run's state.
func WithoutCadenceVars(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CADENCE_") {
			out = append(out, kv)
		}
	}
	return out
}

// cadenceEnv is the CADENCE_* environment of an attempt's agent and of its
// checks (SPEC §4), but for CADENCE_HANDOFF_PATH, which differs.
func (t *try) cadenceEnv() []string {
	env := []string{
		"CADENCE_RUN_ID=" + t.in.Run.ID,
		"CADENCE_STEP=" + t.in.Step.ID,
		"CADENCE_ATTEMPT=" + strconv.Itoa(t.row.N),
		"CADENCE_IDEMPOTENCY_KEY=" + t.in.Unit().String(),
		"CADENCE_SESSION_ID=" + t.plan.sessionID,
		"CADENCE_PROJECT_DIR=" + t.r.Dir,
		"CADENCE_OUTPUTS_DIR=" + outputsDir(t.r.Dir, t.in),
	}
	if t.in.Item != nil {
		env = append(env, "CADENCE_ITEM_KEY="+t.in.Item.Key)
	}
	if t.in.Iteration > 0 {
		env = append(env, "CADENCE_LOOP_ITERATION="+strconv.Itoa(t.in.Iteration))
	}
	return env
}
