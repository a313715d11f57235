package attempt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// execute launches the agent for a committed attempt, judges its handoff,
// runs the step's checks on a handoff that passed, and commits the
// outcome.
func (t *try) execute(ctx context.Context, handoffPath string) (Outcome, error) {
	ws := t.in.Step
	if err := t.syncOutputs(); err != nil {
		return Outcome{}, err
	}
	l, err := t.r.newLaunch(ctx, t, t.r.Workflow.Agents[t.plan.agent], handoffPath)
	if err != nil {
		return Outcome{}, err
	}
	res, runErr := l.run(ctx)
	var se *storeError
	if errors.As(runErr, &se) {
		// The store failed while the agent started; the agent was stopped.
		// Recording that would need the store: cadence stops instead, and
		// a resume settles the attempt from what was committed.
		return Outcome{}, se.err
	}
	// From here on the outcome must be recorded even if cadence is being
	// stopped: the attempt already happened.
	wctx := context.WithoutCancel(ctx)
	if res != nil && res.SkippedEvents > 0 {
		t.r.Log.Warn("event lines over max_event_bytes were skipped, not parsed", "step", ws.ID, "attempt", t.row.N,
			"lines", res.SkippedEvents, "bytes", res.SkippedEventBytes, "max_event_bytes", ws.Handoff.MaxEventBytes)
	}
	src := handoffSource{workDir: t.r.WorkDir(t.in), path: handoffPath, stream: l.stream, agent: t.plan.agent}
	var j judgement
	if t.in.isCommand() {
		j = t.judgeCommand(res, runErr, src, l.tail)
	} else {
		j = t.r.judge(ws, res, runErr, src)
	}
	if !j.ok && j.class.IsHandoffFailure() && handoffPath == "" && l.stream == nil && res != nil {
		// A protocol agent's answer, as judged, apart from its transcript.
		if err := checkpoint.WriteFileAtomic(judgedPath(l.outPath, judgedAnswer), judgedText(res), 0o644); err != nil {
			t.r.Log.Warn("attempt answer not saved", "file", judgedPath(l.outPath, judgedAnswer), "err", err)
		}
	}
	if j.ok && len(ws.Checks) > 0 {
		if j, err = t.checkHandoff(ctx, j, res); err != nil {
			return Outcome{}, err
		}
	}
	if t.row.Snapshot != "" {
		t.row.SnapshotAfter, _ = snapshotTree(wctx, t.r, t.in, fmt.Sprintf("after attempt %d", t.row.N))
		keepSnapshots(wctx, t.r, t.in, t.row)
	}
	return t.commit(wctx, res, j)
}

// clearHandoffFile removes a file handoff left by an earlier attempt (or
// an earlier iteration), and creates its directory, before the next
// attempt's row is committed; "" when the step's handoff is not a file.
//
// The removal is durable before the row is (its directory is fsynced,
// SPEC §7): after a crash or a power cut, a file at the handoff path of an
// attempt left running was therefore written after that attempt began,
// by its agent, the only process that writes it then (G6). Resume adopts
// it as the attempt's handoff (G5) with no other evidence that the agent
// ran: a valid file is that evidence, even when the agent's pid did not
// survive.
func (r *Runner) clearHandoffFile(in *Instance) (string, error) {
	ws := in.Step
	if ws.Handoff.From != "file" {
		return "", nil
	}
	path, err := r.handoffFile(r.WorkDir(in), ws.Handoff.Path)
	if err != nil {
		// Not removed, not created: the attempt runs, and its handoff is
		// judged missing, with this reason.
		r.Log.Warn("the handoff path is unsafe; leaving it alone", "step", ws.ID, "err", err)
		return filepath.Join(r.WorkDir(in), ws.Handoff.Path), nil
	}
	switch err := os.Remove(path); {
	case err == nil:
		if err := checkpoint.SyncDir(filepath.Dir(path)); err != nil {
			return "", fmt.Errorf("clear the handoff file %s of %s: %w", ws.Handoff.Path, in.Label(), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("clear the handoff file %s of %s: %w", ws.Handoff.Path, in.Label(), err)
	}
	// The directory is durable before the agent runs, so that a handoff
	// the agent makes durable in it survives a power cut.
	if err := checkpoint.MkdirAllSynced(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("create the directory of handoff file %s: %w", ws.Handoff.Path, err)
	}
	return path, nil
}

// launch is one agent process of an attempt, or of a help round, ready to
// run: its description, and the files its output goes to.
type launch struct {
	r       *Runner
	t       *try
	ag      *workflow.Agent
	spec    agent.Spec
	outPath string
	out     *checkpoint.AtomicFile
	// stream judges a text agent's stdout as it arrives, in bounded
	// memory; stdout keeps what was judged (the .out file mixes in
	// stderr), for validate --failed to judge again. Both nil for a
	// protocol agent or a file handoff.
	stream *handoff.Stream
	stdout *checkpoint.AtomicFile
	// tail keeps the end of a command step's stdout, its output.
	tail *tailBuffer
}

// newLaunch prepares the agent ag's process for the attempt t: its argv
// and environment, its output file, and the callbacks that record its
// pid and session as they become known.
func (r *Runner) newLaunch(ctx context.Context, t *try, ag *workflow.Agent, handoffPath string) (*launch, error) {
	a := t.row
	l := &launch{r: r, t: t, ag: ag}
	l.outPath = filepath.Join(t.attemptsDir(), strconv.Itoa(a.N)+".out")
	a.OutputFile = checkpoint.RelPath(r.Dir, l.outPath)
	var (
		spec agent.Spec
		err  error
	)
	if t.in.isCommand() && t.plan.kind != checkpoint.KindHelp {
		spec, err = t.commandSpec()
	} else {
		spec, err = t.agentSpec(ag, handoffPath)
	}
	if err != nil {
		return nil, err
	}
	if t.in.isCommand() && !t.in.Step.Run.Handoff {
		l.tail = &tailBuffer{max: commandStdoutTail}
		spec.Candidate = l.tail
	} else if spec.Protocol == agent.ProtocolText && (ag == nil || ag.Preset != agent.PresetOpenAI) && t.plan.kind != checkpoint.KindHelp {
		spec.Candidate = io.Discard
		if handoffPath == "" {
			ws := t.in.Step
			l.stream = handoff.NewStream(ws.Handoff.Schema, handoffOptions(ws), 0)
			if l.stdout, err = checkpoint.CreateAtomicNoSync(judgedPath(l.outPath, judgedStdout), 0o644); err != nil {
				return nil, fmt.Errorf("create attempt stdout of attempt %d: %w", a.N, err)
			}
			spec.Candidate = io.MultiWriter(l.stream, l.stdout)
		}
	}
	if l.out, err = checkpoint.CreateAtomicNoSync(l.outPath, 0o644); err != nil {
		if l.stdout != nil {
			_ = l.stdout.Abort()
		}
		return nil, fmt.Errorf("create attempt output %s: %w", a.OutputFile, err)
	}
	spec.Output = l.out
	spec.Sandbox = sandboxOf(t, ag, spec, handoffPath)
	spec.OnStart = t.onStart(ctx)
	spec.OnRunning = func() { r.Failpoint.Hit(FailAfterAgentStart) }
	if t.plan.kind == checkpoint.KindHelp {
		spec.HelpMarker = "\x00" // an advisor's own text is advice, never a new request
	} else {
		spec.OnSession = r.onSession(ctx, t.in.Unit(), a)
	}
	if t.plan.resume {
		spec.PriorInputTokens, spec.PriorCachedTokens, spec.PriorOutputTokens, err = r.sessionTokens(ctx, t.in.Unit(), t.plan.sessionID)
		if err != nil {
			_ = l.out.Abort()
			return nil, err
		}
	}
	l.spec = spec
	return l, nil
}

// run runs the agent to its end and keeps its output files.
func (l *launch) run(ctx context.Context) (*agent.Result, error) {
	var (
		res    *agent.Result
		runErr error
	)
	if l.ag != nil && l.ag.Preset == agent.PresetOpenAI {
		res, runErr = l.t.runChat(ctx, l.ag, l.spec)
	} else {
		res, runErr = agent.Run(ctx, l.spec)
	}
	if err := l.out.Commit(); err != nil {
		l.r.Log.Warn("attempt output not saved", "file", l.t.row.OutputFile, "err", err)
	}
	if l.stdout != nil {
		if err := l.stdout.Commit(); err != nil {
			l.r.Log.Warn("attempt stdout not saved", "file", judgedPath(l.outPath, judgedStdout), "err", err)
		}
	}
	return res, runErr
}
