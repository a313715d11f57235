package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/retrystate"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// beginAttempt asks the agent's circuit for permission and, when granted,
// commits the attempt row (status running) together with the circuit's new
// state and the step's session, before any process starts (G1). When the
// circuit refuses it commits the circuit's state and returns the time to wait
// until; waiting consumes no attempt.
func (p *project) beginAttempt(ctx context.Context, u checkpoint.Unit, ws *workflow.Step, cfg circuit.Config, plan attemptPlan) (*checkpoint.Attempt, time.Time, error) {
	var (
		a         *checkpoint.Attempt
		waitUntil time.Time
	)
	now := p.now()
	err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		b, err := p.agentBreaker(tx, ws.Agent, now)
		if err != nil {
			return err
		}
		next, gen, ok, until := circuit.Acquire(b.Breaker, cfg, now)
		if err := putBreaker(tx, b, next, now); err != nil {
			return err
		}
		if !ok {
			waitUntil = until
			if waitUntil.IsZero() || !waitUntil.After(now) {
				waitUntil = now.Add(time.Second)
			}
			return nil
		}
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		row := checkpoint.Attempt{
			RunID: u.RunID, StepID: u.StepID, ItemKey: u.Item, N: n,
			Kind: plan.kind, Status: checkpoint.AttemptRunning,
			Prompt: plan.prompt, StartedAt: now, SessionID: plan.sessionID, CircuitGen: gen,
		}
		if err := tx.InsertAttempt(row); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		s.Status = checkpoint.StepRunning
		s.SessionID = plan.sessionID
		s.FreshSession = false
		s.UpdatedAt = now
		if err := tx.UpdateStep(*s); err != nil {
			return err
		}
		a = &row
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("begin an attempt of %s: %w", unitLabel(u), err)
	}
	return a, waitUntil, nil
}

// loadBreaker reads an agent's breaker as stored (closed when none is).
func loadBreaker(tx *checkpoint.Tx, agentName string) (circuit.Breaker, error) {
	b, _, err := loadBreakerHash(tx, agentName)
	return b, err
}

// loadBreakerHash reads an agent's breaker and the configuration hash it
// was recorded under ("" when none is recorded).
func loadBreakerHash(tx *checkpoint.Tx, agentName string) (circuit.Breaker, string, error) {
	c, err := tx.Circuit(agentName)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return circuit.Breaker{Agent: agentName, State: circuit.Closed}, "", nil
	}
	if err != nil {
		return circuit.Breaker{}, "", err
	}
	b := circuit.Breaker{
		Agent: c.Agent, State: circuit.State(c.State), Failures: c.Failures, Generation: c.Generation,
		Trials: c.Trials, Successes: c.Successes,
	}
	if c.OpenedAt != nil {
		b.OpenedAt = *c.OpenedAt
	}
	if c.OpenUntil != nil {
		b.OpenUntil = *c.OpenUntil
	}
	return b, c.ConfigHash, nil
}

// sameBreaker reports whether two breakers hold the same state.
func sameBreaker(a, b circuit.Breaker) bool {
	return a.Agent == b.Agent && a.State == b.State && a.Failures == b.Failures && a.Generation == b.Generation &&
		a.OpenedAt.Equal(b.OpenedAt) && a.OpenUntil.Equal(b.OpenUntil) && a.Trials == b.Trials && a.Successes == b.Successes
}

func breakerRow(b circuit.Breaker, now time.Time) checkpoint.Circuit {
	c := checkpoint.Circuit{
		Agent: b.Agent, State: string(b.State), Failures: b.Failures, Generation: b.Generation,
		Trials: b.Trials, Successes: b.Successes, UpdatedAt: now,
	}
	if !b.OpenedAt.IsZero() {
		t := b.OpenedAt.UTC()
		c.OpenedAt = &t
	}
	if !b.OpenUntil.IsZero() {
		t := b.OpenUntil.UTC()
		c.OpenUntil = &t
	}
	return c
}

// try is one attempt in progress, from its committed row to its committed
// outcome: the context every stage of the attempt machinery (launching the
// agent, judging its handoff, running the checks, committing the outcome)
// needs, whoever began the attempt: the step loop, the settling of an
// interrupted attempt, a help round.
type try struct {
	run  *checkpoint.Run
	ws   *workflow.Step
	row  *checkpoint.Attempt
	plan attemptPlan
	// counted is how many attempts count against max_attempts with this
	// one, max the step's max_attempts; both 0 for a help round.
	counted, max int
	// round is the help round an advisor's attempt answers (0 otherwise).
	round int
	// item is the map item the attempt works on; nil for a step's own.
	item *mapItem
	// settling marks an attempt a crash left running, settled on resume:
	// a success adopts it (G5).
	settling bool
	// candidate is the handoff that passed its schema, stored for its
	// checks: committed to the database with the first check's start, so
	// that a process on another machine can settle the attempt.
	candidate []byte
}

// stepOutcome is what execute reports back to the step loop.
type stepOutcome struct {
	done bool
	data any
}

// judgement is the verdict on one finished attempt.
type judgement struct {
	ok         bool
	result     handoff.Result
	diag       *handoff.Diagnosis
	class      handoff.Class
	retryAfter time.Duration
	resetAt    time.Time
	permanent  bool // the agent reported a failure that no retry can fix
	lostSess   bool // the agent no longer knows the session
	// helpContext is the context of a help request (class help).
	helpContext string
	// warning says what was wrong with an attempt accepted anyway.
	warning string
}

// helpRequest decides whether an attempt asked for help: a help marker in
// its stream, or a handoff whose requested_help is true. A handoff that
// denies a request the stream shows is logged, and the stream wins.
func (p *project) helpRequest(ws *workflow.Step, res *agent.Result, hr handoff.Result) (string, bool) {
	claimed, denied := false, false
	var handoffCtx string
	if obj, ok := hr.Value.(map[string]any); ok && hr.OK {
		switch obj["requested_help"] {
		case true:
			claimed = true
			if c, ok := obj["help_context"]; ok {
				if b, err := json.Marshal(c); err == nil {
					handoffCtx = string(b)
				}
			}
		case false:
			denied = true
		}
	}
	if res.Help {
		if denied {
			p.log.Warn("the agent printed the help signal but its handoff says requested_help: false; treating it as a help request",
				"step", ws.ID)
		}
		c := string(res.HelpContext)
		if c == "" {
			c = "{}"
		}
		return c, true
	}
	if claimed {
		if handoffCtx == "" {
			handoffCtx = "{}"
		}
		return handoffCtx, true
	}
	return "", false
}

// execute launches the agent for a committed attempt, judges its handoff and
// commits the outcome.
func (p *project) execute(ctx context.Context, t *try) (stepOutcome, error) {
	ws, a, plan := t.ws, t.row, t.plan
	ag := p.wf.Agents[ws.Agent]
	outPath := filepath.Join(p.attemptsDir(t), strconv.Itoa(a.N)+".out")
	a.OutputFile = p.relPath(outPath)

	handoffPath := ""
	if ws.Handoff.From == "file" {
		var err error
		if handoffPath, err = p.handoffFile(p.workDir(t.item), ws.Handoff.Path); err != nil {
			// Not removed, not created: the attempt runs, and its handoff is
			// judged missing below, with this reason.
			handoffPath = filepath.Join(p.workDir(t.item), ws.Handoff.Path)
			p.log.Warn("the handoff path is unsafe; leaving it alone", "step", ws.ID, "err", err)
		} else {
			if err := os.Remove(handoffPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return stepOutcome{}, fmt.Errorf("clear the handoff file %s before attempt %d: %w", ws.Handoff.Path, a.N, err)
			}
			if err := os.MkdirAll(filepath.Dir(handoffPath), 0o755); err != nil {
				return stepOutcome{}, fmt.Errorf("create the directory of handoff file %s: %w", ws.Handoff.Path, err)
			}
		}
	}

	spec, err := p.agentSpec(t, ag, handoffPath)
	if err != nil {
		return stepOutcome{}, err
	}
	// A text agent's stdout is judged as it streams, in bounded memory; when
	// its handoff is a file, its stdout is not kept at all.
	var (
		stream *handoff.Stream
		stdout *checkpoint.AtomicFile
	)
	if spec.Protocol == agent.ProtocolText && ag.Preset != agent.PresetOpenAI {
		if handoffPath == "" {
			stream = handoff.NewStream(ws.Handoff.Schema, handoffOptions(ws), 0)
			spec.Candidate = stream
			// The .out file mixes in stderr; what was judged is kept
			// apart, for validate --failed to judge again.
			if stdout, err = checkpoint.CreateAtomicNoSync(judgedPath(outPath, judgedStdout), 0o644); err != nil {
				return stepOutcome{}, fmt.Errorf("create attempt stdout of attempt %d: %w", a.N, err)
			}
			spec.Candidate = io.MultiWriter(stream, stdout)
		} else {
			spec.Candidate = io.Discard
		}
	}
	out, err := checkpoint.CreateAtomicNoSync(outPath, 0o644)
	if err != nil {
		if stdout != nil {
			_ = stdout.Abort()
		}
		return stepOutcome{}, fmt.Errorf("create attempt output %s: %w", a.OutputFile, err)
	}
	spec.Output = out
	spec.OnStart = p.onStart(ctx, t)
	spec.OnRunning = func() { p.fp.hit(FailAfterAgentStart) }
	spec.OnSession = p.onSession(ctx, t.unit(), a)
	if plan.resume {
		spec.PriorInputTokens, spec.PriorOutputTokens, err = p.sessionTokens(ctx, t.unit(), plan.sessionID)
		if err != nil {
			return stepOutcome{}, err
		}
	}

	var (
		res    *agent.Result
		runErr error
	)
	if ag.Preset == agent.PresetOpenAI {
		res, runErr = p.runChat(ctx, t, ag, spec)
	} else {
		res, runErr = agent.Run(ctx, spec)
	}
	if err := out.Commit(); err != nil {
		p.log.Warn("attempt output not saved", "file", a.OutputFile, "err", err)
	}
	if stdout != nil {
		if err := stdout.Commit(); err != nil {
			p.log.Warn("attempt stdout not saved", "file", judgedPath(outPath, judgedStdout), "err", err)
		}
	}
	var se *storeError
	if errors.As(runErr, &se) {
		// The store failed while the agent started; the agent was stopped.
		// Recording that would need the store: cadence stops instead, and
		// a resume settles the attempt from what was committed.
		return stepOutcome{}, se.err
	}
	// From here on the outcome must be recorded even if cadence is being
	// stopped: the attempt already happened.
	wctx := context.WithoutCancel(ctx)
	if res != nil && res.SkippedEvents > 0 {
		p.log.Warn("event lines over max_event_bytes were skipped, not parsed", "step", ws.ID, "attempt", a.N,
			"lines", res.SkippedEvents, "bytes", res.SkippedEventBytes, "max_event_bytes", ws.Handoff.MaxEventBytes)
	}
	j := p.judge(ws, res, runErr, p.workDir(t.item), handoffPath, stream)
	if !j.ok && j.class.IsHandoffFailure() && handoffPath == "" && stream == nil && res != nil {
		// A protocol agent's answer, as judged, apart from its transcript.
		if err := checkpoint.WriteFileAtomic(judgedPath(outPath, judgedAnswer), judgedText(res), 0o644); err != nil {
			p.log.Warn("attempt answer not saved", "file", judgedPath(outPath, judgedAnswer), "err", err)
		}
	}
	if j.ok && len(ws.Checks) > 0 {
		if j, err = p.checkHandoff(ctx, t, j, res); err != nil {
			return stepOutcome{}, err
		}
	}
	return p.commitOutcome(wctx, t, res, j)
}

// The files beside an attempt's .out that hold what its handoff was judged
// on: a text agent's stdout alone (the .out file mixes in stderr), and a
// protocol agent's final answer when it failed as a handoff.
const (
	judgedStdout = ".stdout"
	judgedAnswer = ".answer"
)

// judgedPath is the file beside the attempt's .out file with the suffix.
func judgedPath(outPath, suffix string) string {
	return strings.TrimSuffix(outPath, ".out") + suffix
}

// JudgedFiles names, for an attempt's .out file, the files that hold what
// its handoff was judged on: a text agent's stdout, and a protocol agent's
// final answer (kept when it failed as a handoff). Attempts recorded
// before they were kept have neither.
func JudgedFiles(outputFile string) (stdout, answer string) {
	return judgedPath(outputFile, judgedStdout), judgedPath(outputFile, judgedAnswer)
}

// judgedText is what the handoff of a protocol agent was judged on, as in
// judge: the structured output, else the final text, and nothing when
// the turn failed.
func judgedText(res *agent.Result) []byte {
	switch {
	case res.IsError:
		return nil
	case len(res.StructuredOutput) > 0:
		return res.StructuredOutput
	}
	return res.Text
}

// storeError marks a failure of the checkpoint store inside a callback of
// the agent launcher, so the run loop can tell it from the agent's own.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// onStart records the pid of a started agent (the attempt row itself was
// committed before the start) and announces the attempt.
func (p *project) onStart(ctx context.Context, t *try) func(pid int) error {
	runID, ws, a, plan := t.run.ID, t.ws, t.row, t.plan
	return func(pid int) error {
		// Relaxed: the pid serves to find an agent that outlived a crashed
		// cadence (G6); after a power cut no agent is left to find.
		if err := p.store.UpdateRelaxed(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
			row, err := tx.UnitAttempt(t.unit(), a.N)
			if err != nil {
				return err
			}
			row.PID = &pid
			return tx.UpdateAttempt(*row)
		}); err != nil {
			return &storeError{fmt.Errorf("record the pid of attempt %d: %w", a.N, err)}
		}
		a.PID = &pid
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventAttemptStarted, RunID: runID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent,
			Attempt: a.N, Counted: t.counted, MaxAttempts: t.max, HelpRound: t.round, Kind: plan.kind, PID: pid, SessionID: plan.sessionID})
		return nil
	}
}

// agentSpec builds the process description of an attempt.
func (p *project) agentSpec(t *try, ag *workflow.Agent, handoffPath string) (agent.Spec, error) {
	ws, runID, a, plan := t.ws, t.run.ID, t.row, t.plan
	data := p.templateData(ws, runID, a.N, nil, t.item)
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
		Scenario: ag.Scenario, SelfExe: p.opts.SelfExe,
		NativeSchema: ag.NativeSchema, IdleTimeout: ws.IdleTimeout,
	}
	if ws.Handoff.Schema != nil {
		inv.SchemaJSON = ws.Handoff.Schema.Raw
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
	env := append([]string(nil), p.env...)
	for k, v := range ag.Env {
		env = append(env, k+"="+v)
	}
	env = append(env, agent.PresetEnv(inv, env)...)
	env = append(env, p.cadenceEnv(t)...)
	if handoffPath != "" {
		env = append(env, "CADENCE_HANDOFF_PATH="+handoffPath)
	}
	grace := p.grace()
	return agent.Spec{
		Argv: argv, Env: env, Dir: p.workDir(t.item), Stdin: stdin, Protocol: proto,
		OutputCap: ws.Handoff.TranscriptMaxBytes, MaxBytes: ws.Handoff.MaxBytes, MaxEventBytes: ws.Handoff.MaxEventBytes,
		Timeout: ws.Timeout, IdleTimeout: ws.IdleTimeout, Grace: grace, ExitGrace: ws.ExitGrace,
		HelpMarker: ag.HelpMarker, Resume: plan.resume, Supervisor: p.opts.SelfExe,
	}, nil
}

// recordUsage copies what the agent reported (exit code, session, turns,
// tokens, cost) onto the attempt's row; nil leaves it as it is.
func (p *project) recordUsage(t *try, res *agent.Result) {
	if res == nil {
		return
	}
	a := t.row
	code := res.ExitCode
	a.ExitCode = &code
	if res.SessionID != "" {
		a.SessionID = res.SessionID
	}
	a.Turns = res.Turns
	a.InputTokens, a.OutputTokens = res.InputTokens, res.OutputTokens
	if res.CostUSD > 0 || isProtocolCost(p.wf.Agents[t.ws.Agent].Preset) {
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

// withoutCadenceVars returns env without its CADENCE_* variables. An agent
// or a check gets only the CADENCE_* variables cadence sets for it
// (cadenceEnv, CADENCE_HANDOFF_PATH, CADENCE_CHECK) and those the
// workflow gives the agent in its env:: a variable inherited from
// cadence's own environment would describe another run, step or item
// (cadence running inside a cadence step), or steer a cadence the agent
// runs (CADENCE_STATE, CADENCE_FAILPOINT) into the outer run's state.
func withoutCadenceVars(env []string) []string {
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
func (p *project) cadenceEnv(t *try) []string {
	env := []string{
		"CADENCE_RUN_ID=" + t.run.ID,
		"CADENCE_STEP=" + t.ws.ID,
		"CADENCE_ATTEMPT=" + strconv.Itoa(t.row.N),
		"CADENCE_IDEMPOTENCY_KEY=" + t.unit().String(),
		"CADENCE_SESSION_ID=" + t.plan.sessionID,
		"CADENCE_PROJECT_DIR=" + p.dir,
	}
	if t.item != nil {
		env = append(env, "CADENCE_ITEM_KEY="+t.item.key)
	}
	return env
}

// judge classifies a finished attempt into success or exactly one failure
// class (SPEC §5). stream, when not nil, has judged a text agent's stdout as
// it arrived.
func (p *project) judge(ws *workflow.Step, res *agent.Result, runErr error, workDir, handoffPath string, stream *handoff.Stream) judgement {
	if runErr != nil && errors.Is(runErr, context.Canceled) {
		return judgement{class: handoff.ClassInterrupted, diag: handoff.Diagnose(handoff.ClassInterrupted, "cadence was stopped before the agent started")}
	}
	if runErr != nil && errors.Is(runErr, agent.ErrStart) {
		// The workflow names a program that is not there: no retry can
		// fix that, and it says nothing about the agent's provider.
		return judgement{class: handoff.ClassConfig,
			diag: handoff.Diagnose(handoff.ClassConfig, fmt.Sprintf("agent %s: %v; fix the agent's command in the workflow", ws.Agent, runErr))}
	}
	if runErr != nil {
		return judgement{class: handoff.ClassExitNonzero,
			diag: handoff.Diagnose(handoff.ClassExitNonzero, "the agent could not be started: "+runErr.Error())}
	}
	switch res.Stop {
	case agent.StopTimeout:
		return judgement{class: handoff.ClassTimeout, diag: handoff.Diagnose(handoff.ClassTimeout,
			fmt.Sprintf("killed after %s (timeout %s)", res.Elapsed.Round(time.Millisecond), ws.Timeout))}
	case agent.StopStuck:
		return judgement{class: handoff.ClassStuck, diag: handoff.Diagnose(handoff.ClassStuck,
			fmt.Sprintf("no output and no CPU used by its processes for %s; killed after %s", ws.IdleTimeout, res.Elapsed.Round(time.Millisecond)))}
	case agent.StopTooLarge:
		return judgement{class: handoff.ClassTooLarge, diag: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("output reached %d bytes, over max_bytes %d; %s", res.StdoutBytes, ws.Handoff.MaxBytes, tooLargeHint))}
	case agent.StopInterrupted:
		return judgement{class: handoff.ClassInterrupted, diag: handoff.Diagnose(handoff.ClassInterrupted, "cadence was stopped during the attempt")}
	case agent.StopLingered:
		// The agent answered and then did not exit: its answer is judged
		// as if it had (attemptNote records the stop).
	}
	opts := handoffOptions(ws)
	var hr handoff.Result
	switch {
	case res.TextTooLarge && handoffPath == "" && !res.IsError:
		hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("the agent's final answer is %d bytes, over max_bytes %d; %s", res.TextBytes, ws.Handoff.MaxBytes, tooLargeHint))}
	case res.SkippedResult && handoffPath == "":
		hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassTooLarge,
			fmt.Sprintf("the agent's final answer came in an event line over max_event_bytes %d, which was skipped", ws.Handoff.MaxEventBytes))}
	case handoffPath != "":
		if _, err := p.handoffFile(workDir, ws.Handoff.Path); err != nil {
			hr = handoff.Result{Diagnosis: handoff.Diagnose(handoff.ClassMissing, "the handoff file was not read: "+err.Error())}
			hr.Diagnosis.Path = ws.Handoff.Path
		} else {
			hr = handoff.CheckFile(handoffPath, ws.Handoff.Schema, opts)
		}
	case stream != nil:
		hr = stream.Result()
	default:
		text := res.Text
		if len(res.StructuredOutput) > 0 {
			text = res.StructuredOutput
		}
		if res.IsError {
			// The final text of a failed turn is the provider's error
			// message (which may well contain JSON), never an answer.
			text = nil
		}
		hr = handoff.Check(text, ws.Handoff.Schema, opts)
	}
	// A help request takes precedence over a handoff in the same attempt.
	// The stream is the source of truth; a handoff that claims help with no
	// signal counts too.
	if helpCtx, asked := p.helpRequest(ws, res, hr); asked {
		detail := "the agent asked for help: " + helpCtx
		if ws.OnHelp == nil {
			detail = "the agent asked for help and the step has no on_help: " + helpCtx
		}
		return judgement{class: handoff.ClassHelp, diag: handoff.Diagnose(handoff.ClassHelp, detail), helpContext: helpCtx}
	}
	if hr.OK && (res.ExitCode != 0 || res.Signal != 0) && res.Stop == agent.StopNone {
		return exitedBadly(ws, res, hr)
	}
	if hr.OK {
		return judgement{ok: true, result: hr}
	}
	if res.Truncated && hr.Diagnosis.Class != handoff.ClassTruncated {
		// The model stopped at its output limit: whatever is wrong with
		// the JSON, the cause is that it was cut off.
		d := handoff.Diagnose(handoff.ClassTruncated, "the model stopped at its output limit (finish_reason \"length\"): "+hr.Diagnosis.Summary())
		return judgement{class: handoff.ClassTruncated, diag: d, result: hr}
	}
	noHandoff := hr.Diagnosis.Class == handoff.ClassMissing || hr.Diagnosis.Class == handoff.ClassEmpty
	switch {
	case res.Transient && noHandoff:
		msg := res.ErrorMessage
		if msg == "" {
			msg = "the provider reported a transient error"
		}
		if res.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry after %s)", res.RetryAfter.Round(time.Millisecond))
		}
		return judgement{class: handoff.ClassTransient, diag: handoff.Diagnose(handoff.ClassTransient, msg),
			retryAfter: res.RetryAfter, resetAt: res.ResetAt}
	case (res.IsError || res.ExitCode != 0) && noHandoff:
		msg := fmt.Sprintf("the agent exited with code %d", res.ExitCode)
		if res.IsError && res.ExitCode == 0 {
			msg = "the agent reported an error"
		}
		if res.ErrorMessage != "" {
			msg += ": " + res.ErrorMessage
		}
		if res.StderrTail != "" {
			msg += "\nstderr: " + res.StderrTail
		}
		return judgement{class: handoff.ClassExitNonzero, diag: handoff.Diagnose(handoff.ClassExitNonzero, msg),
			permanent: res.Permanent, lostSess: res.SessionNotFound}
	}
	return judgement{class: hr.Diagnosis.Class, diag: hr.Diagnosis, result: hr}
}

// exitedBadly judges an agent that printed a valid handoff but exited
// non-zero (or was ended by a signal): the handoff is accepted with a
// warning, or, with fail_on_exit_code, the attempt fails as exit_nonzero.
func exitedBadly(ws *workflow.Step, res *agent.Result, hr handoff.Result) judgement {
	how := fmt.Sprintf("exited with code %d", res.ExitCode)
	if res.Signal != 0 {
		how = "was ended by signal " + res.Signal.String()
	}
	if !ws.FailOnExitCode {
		return judgement{ok: true, result: hr,
			warning: "the agent " + how + " after printing a valid handoff, which was accepted (fail_on_exit_code: true fails such attempts)"}
	}
	msg := "the agent " + how + " after printing a valid handoff (rejected: the step has fail_on_exit_code: true)"
	if res.StderrTail != "" {
		msg += "\nstderr: " + res.StderrTail
	}
	return judgement{class: handoff.ClassExitNonzero, diag: handoff.Diagnose(handoff.ClassExitNonzero, msg),
		permanent: res.Permanent, lostSess: res.SessionNotFound}
}

// tooLargeHint says what to do about a handoff over max_bytes.
const tooLargeHint = "raise the step's handoff.max_bytes, or have the agent write its handoff to a file (handoff: {from: file, path: ...})"

// commitOutcome records a finished attempt. On success the envelope is
// written to handoffs/ first and then committed; on failure the failed-
// handoff record is written, the backoff deadline computed and committed with
// the outcome and the circuit's new state, in one transaction.
func (p *project) commitOutcome(ctx context.Context, t *try, res *agent.Result, j judgement) (stepOutcome, error) {
	run, ws, a, plan, n := t.run, t.ws, t.row, t.plan, t.counted
	now := p.now()
	a.FinishedAt = &now
	p.recordUsage(t, res)
	ag := p.wf.Agents[ws.Agent]
	cfg := circuitConfig(ag.Circuit)
	policy := policyFor(ws.Retry)
	elapsed := 0.0
	if res != nil {
		elapsed = res.Elapsed.Seconds()
	}

	note := attemptNote(ws, plan, res)
	if j.class == handoff.ClassInterrupted {
		// cadence stopped the attempt itself, on the operator's SIGINT or
		// SIGTERM: that is not the agent's failure, so it does not use up
		// one of max_attempts (G5). An attempt found running after a crash
		// is settled, and counted, by settle instead.
		a.Status = checkpoint.AttemptInterrupted
		a.Class = string(j.class)
		a.Error = withNote(j.diag.Summary(), note)
		a.Uncounted = true
		n--
		err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
			return p.finishAttempt(tx, t, cfg, j.class, now, time.Time{}, func(s *checkpoint.Step) {
				s.Status = checkpoint.StepPending
			})
		})
		if err != nil {
			return stepOutcome{}, fmt.Errorf("record interrupted attempt %d of %s: %w", a.N, unitLabel(t.unit()), err)
		}
		p.sink.Emit(history.Event{Time: now, Type: history.EventAttemptFinished, RunID: run.ID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent, Attempt: a.N, Counted: n,
			Status: a.Status, Class: a.Class, Elapsed: elapsed, Uncounted: true})
		return stepOutcome{}, errInterrupted
	}

	if j.ok {
		a.Error = note
		return p.commitSuccess(ctx, t, j, cfg, elapsed)
	}

	// Failure.
	a.Status = checkpoint.AttemptFailed
	a.Class = string(j.class)
	a.Error = withNote(j.diag.Summary(), note)
	a.Repairs = j.result.Repairs
	details, err := json.Marshal(j.diag)
	if err != nil {
		return stepOutcome{}, fmt.Errorf("encode diagnosis: %w", err)
	}
	a.DetailsJSON = details
	if j.retryAfter > 0 {
		ms := j.retryAfter.Milliseconds()
		a.RetryAfterMS = &ms
	}

	var st *checkpoint.Step
	var used int
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		if st, err = tx.Unit(t.unit()); err != nil {
			return err
		}
		used, err = tx.UnitCountCounted(t.unit())
		return err
	}); err != nil {
		return stepOutcome{}, fmt.Errorf("read step %s: %w", ws.ID, err)
	}
	a.HelpContext = j.helpContext
	helpRetry := j.class == handoff.ClassHelp && ws.OnHelp != nil && st.HelpRounds < ws.OnHelp.MaxRounds
	if !j.resetAt.IsZero() {
		// A usage limit with a reset time: cadence waits for the reset
		// instead of burning an attempt on it.
		a.Uncounted = true
		used--
	}
	retry := (policy.Retryable(string(j.class)) || helpRetry) && !j.permanent && used < st.MaxAttempts
	var followup string
	if retry && !helpRetry {
		failed := used // failed attempts so far, this one included
		drawn := policy.Delay(failed, p.rnd)
		retryAfter := j.retryAfter
		if !j.resetAt.IsZero() {
			if d := j.resetAt.Sub(now); d > retryAfter {
				retryAfter = d
			}
		}
		delay, next := retrystate.Schedule(now, drawn, retryAfter)
		if st.NextRetryAt != nil {
			next = retrystate.Later(*st.NextRetryAt, next)
		}
		ms := delay.Milliseconds()
		a.DelayMS = &ms
		a.NextRetryAt = &next
		if j.class.IsAnswerFailure() {
			task := a.Prompt
			if plan.kind == checkpoint.KindFollowup {
				task, _ = p.originalTask(ctx, t.unit())
			}
			followup = handoff.BuildFollowup(p.followupInput(ws, task, j.diag, used+1))
		}
	}

	rec := handoff.FailedRecord{
		RunID: run.ID, StepID: ws.ID, Item: itemKey(t.item), Attempt: a.N, Agent: ws.Agent, SessionID: a.SessionID,
		Class: j.class, Details: j.diag.Details, Violations: j.diag.Violations, Repairs: j.result.Repairs,
		OutputSample: j.diag.OutputSample, OutputFile: a.OutputFile, FollowupPrompt: followup, CreatedAt: now,
		Check: j.diag.Check,
	}
	if rec.Violations == nil {
		rec.Violations = []handoff.Violation{}
	}
	if rec.Repairs == nil {
		rec.Repairs = []string{}
	}
	recPath := filepath.Join(p.unitDir("failed_handoffs", run.ID, ws.ID, t.item), strconv.Itoa(a.N)+".json")
	recJSON, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return stepOutcome{}, fmt.Errorf("encode failed-handoff record: %w", err)
	}
	if err := checkpoint.WriteFileAtomic(recPath, append(recJSON, '\n'), 0o644); err != nil {
		return stepOutcome{}, fmt.Errorf("write failed-handoff record: %w", err)
	}
	a.FailedHandoff = p.relPath(recPath)
	p.fp.hit(FailAfterHandoffWritten)
	p.fp.hit(FailBeforeOutcomeCommit)

	err = p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		// The record in the database is what another machine reads; the
		// file is this machine's copy.
		if err := tx.PutDocument(t.unit(), a.N, checkpoint.DocFailedHandoff, recJSON); err != nil {
			return err
		}
		return p.finishAttempt(tx, t, cfg, j.class, now, j.resetAt, func(s *checkpoint.Step) {
			s.FreshSession = j.class == handoff.ClassTimeout || j.class == handoff.ClassStuck || j.lostSess ||
				(res != nil && (res.SessionNotFound || res.SessionNotSaved || res.SessionIDRejected != ""))
			if retry {
				s.Status = checkpoint.StepWaiting
				s.NextRetryAt, s.DelayMS = a.NextRetryAt, a.DelayMS
			} else {
				s.Status = checkpoint.StepFailed
				s.NextRetryAt, s.DelayMS = nil, nil
			}
		})
	})
	if err != nil {
		return stepOutcome{}, fmt.Errorf("record failed attempt %d of %s: %w", a.N, unitLabel(t.unit()), err)
	}
	p.fp.hit(FailAfterOutcomeCommit)
	p.sink.Emit(history.Event{Time: now, Type: history.EventAttemptFinished, RunID: run.ID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent, Attempt: a.N, Counted: n,
		MaxAttempts: st.MaxAttempts, Kind: a.Kind, Status: a.Status, Class: a.Class, Error: a.Error, Repairs: a.Repairs, Elapsed: elapsed,
		Until: a.NextRetryAt, Uncounted: a.Uncounted,
		Stderr: stderrCause(j.class, res)})
	if !retry {
		why := fmt.Sprintf("%s after %d of %d attempts", a.Error, used, st.MaxAttempts)
		switch {
		case j.permanent:
			why = a.Error + " (not retried: the agent reported a permanent failure)"
		case j.class == handoff.ClassHelp && ws.OnHelp != nil && used < st.MaxAttempts:
			why = fmt.Sprintf("%s (all %d help rounds used)", a.Error, ws.OnHelp.MaxRounds)
		case j.class == handoff.ClassHelp && ws.OnHelp == nil:
			why = a.Error
		case !policy.Retryable(string(j.class)):
			why = fmt.Sprintf("%s (class %s is not retried)", a.Error, j.class)
		}
		p.sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: run.ID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent, Class: a.Class, Message: why})
	}
	return stepOutcome{}, nil
}

// commitSuccess writes the accepted handoff's envelope and commits the
// attempt, the step and the circuit.
func (p *project) commitSuccess(ctx context.Context, t *try, j judgement, cfg circuit.Config, elapsed float64) (stepOutcome, error) {
	run, ws, a, n := t.run, t.ws, t.row, t.counted
	now := *a.FinishedAt
	a.Status = checkpoint.AttemptSucceeded
	if t.settling {
		a.Status = checkpoint.AttemptAdopted
	}
	a.Repairs = j.result.Repairs
	if j.warning != "" {
		a.Warning = j.warning
		p.log.Warn(j.warning, "step", ws.ID, "item", itemKey(t.item), "attempt", a.N)
	}
	var (
		prev []string
		st   *checkpoint.Step
	)
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		if st, err = tx.Unit(t.unit()); err != nil {
			return err
		}
		list, err := tx.UnitAttempts(t.unit())
		if err != nil {
			return err
		}
		for _, x := range list {
			if x.Status != checkpoint.AttemptRunning && x.Class != "" && x.Kind != checkpoint.KindHelp {
				prev = append(prev, x.Error)
			}
		}
		return nil
	}); err != nil {
		return stepOutcome{}, fmt.Errorf("read step %s: %w", ws.ID, err)
	}
	step := *st
	addUsage(&step, a)
	env := handoff.Envelope{
		Component: ws.ID, SessionID: firstNonEmpty(a.SessionID, st.SessionID), Timestamp: now, Status: "success",
		Data: json.RawMessage(j.result.JSON),
		Metadata: handoff.EnvelopeMetadata{Attempts: n, Repairs: nonNil(j.result.Repairs),
			PreviousErrors: nonNil(prev), CostUSD: step.CostUSD, Turns: step.Turns},
	}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return stepOutcome{}, fmt.Errorf("encode envelope: %w", err)
	}
	if err := p.writeEnvelope(run.ID, ws.ID, t.item, env); err != nil {
		return stepOutcome{}, err
	}
	p.fp.hit(FailAfterHandoffWritten)
	p.fp.hit(FailBeforeOutcomeCommit)
	err = p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		return p.finishAttempt(tx, t, cfg, "", now, time.Time{}, func(s *checkpoint.Step) {
			s.Status = checkpoint.StepSucceeded
			s.NextRetryAt, s.DelayMS = nil, nil
			s.HandoffJSON = envJSON
		})
	})
	if err != nil {
		return stepOutcome{}, fmt.Errorf("record the success of %s: %w", unitLabel(t.unit()), err)
	}
	p.fp.hit(FailAfterOutcomeCommit)
	p.sink.Emit(history.Event{Time: now, Type: history.EventAttemptFinished, RunID: run.ID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent, Attempt: a.N, Counted: n,
		MaxAttempts: st.MaxAttempts, Kind: a.Kind, Status: a.Status, Repairs: a.Repairs, Elapsed: elapsed, Warning: a.Warning})
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepSucceeded, RunID: run.ID, Step: ws.ID, Item: itemKey(t.item), Agent: ws.Agent, Attempt: a.N, Counted: n,
		MaxAttempts: st.MaxAttempts, CostUSD: step.CostUSD})
	data, _ := jsonvalue.Decode(j.result.JSON)
	return stepOutcome{done: true, data: data}, nil
}

// finishAttempt writes a finished attempt's outcome, the circuit update it
// causes and the step's new state (usage added, the session the agent
// reported, then whatever update sets) in the caller's transaction: one
// transition, one commit.
func (p *project) finishAttempt(tx *checkpoint.Tx, t *try, cfg circuit.Config,
	class handoff.Class, now, resetAt time.Time, update func(s *checkpoint.Step)) error {
	ws, a := t.ws, t.row
	if err := tx.UpdateAttempt(*a); err != nil {
		return err
	}
	if err := p.recordCircuit(tx, ws.Agent, cfg, a.CircuitGen, class, now, resetAt); err != nil {
		return err
	}
	s, err := tx.Unit(t.unit())
	if err != nil {
		return err
	}
	addUsage(s, a)
	if a.SessionID != "" {
		s.SessionID = a.SessionID
	}
	s.UpdatedAt = now
	update(s)
	return tx.UpdateStep(*s)
}

// writeEnvelope writes a unit's accepted handoff atomically.
func (p *project) writeEnvelope(runID, stepID string, it *mapItem, env handoff.Envelope) error {
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return fmt.Errorf("encode envelope: %w", err)
	}
	path := p.envelopePath(runID, stepID, it)
	if err := checkpoint.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write handoff of step %s: %w", stepID, err)
	}
	return nil
}

// recordCircuit applies an attempt's outcome to its agent's breaker, in the
// caller's transaction. A usage limit with a reset time keeps the circuit
// open until then.
func (p *project) recordCircuit(tx *checkpoint.Tx, agentName string, cfg circuit.Config, gen int64, class handoff.Class, now, resetAt time.Time) error {
	b, err := p.agentBreaker(tx, agentName, now)
	if err != nil {
		return err
	}
	next := circuit.Record(b.Breaker, cfg, gen, circuit.OutcomeFor(string(class)), now)
	if !resetAt.IsZero() && resetAt.After(now) {
		next = circuit.OpenUntilTime(next, resetAt, now)
	}
	return putBreaker(tx, b, next, now)
}

// originalTask returns the task prompt of the unit's current session.
func (p *project) originalTask(ctx context.Context, u checkpoint.Unit) (string, error) {
	var task string
	err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		list, err := tx.UnitAttempts(u)
		task = sessionTask(list)
		return err
	})
	return task, err
}

// sessionTask returns the prompt of the latest attempt that started a
// session (kind initial or fresh): the task the session's follow-ups refer
// to. It is "" when there is none.
func sessionTask(list []checkpoint.Attempt) string {
	var task string
	for _, x := range list {
		if x.Kind == checkpoint.KindInitial || x.Kind == checkpoint.KindFresh {
			task = x.Prompt
		}
	}
	return task
}

func addUsage(s *checkpoint.Step, a *checkpoint.Attempt) {
	if a.CostUSD != nil {
		s.CostUSD += *a.CostUSD
	} else if a.FinishedAt != nil {
		s.CostKnown = false
	}
	s.Turns += a.Turns
	s.InputTokens += a.InputTokens
	s.OutputTokens += a.OutputTokens
}

func isProtocolCost(preset string) bool { return preset == "claude" || preset == "sim" }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
