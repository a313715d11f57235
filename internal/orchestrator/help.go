package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// maxAdviceBytes bounds the advice carried into the next prompt.
const maxAdviceBytes = 16 << 10

// helpPending reports whether the step's latest counted attempt asked for
// help and no advisor round has answered it yet. A round is an attempt row
// of kind help after the request; only a succeeded one holds advice, so a
// round cut short by a crash is asked again, and a finished one never is.
func helpPending(tx *checkpoint.Tx, u checkpoint.Unit, last *checkpoint.Attempt) (bool, error) {
	if last == nil || last.Status != checkpoint.AttemptFailed || last.Class != string(handoff.ClassHelp) {
		return false, nil
	}
	latest, err := tx.UnitLastAttempt(u)
	if err != nil {
		return false, err
	}
	return !(latest.N > last.N && latest.Kind == checkpoint.KindHelp && latest.Status == checkpoint.AttemptSucceeded), nil
}

// helpRound runs the step's advisor agent on the help context of the
// request attempt, records the round as an attempt of kind help, and stores
// the advice on the step for the next attempt to carry into the session.
func (p *project) helpRound(ctx context.Context, run *checkpoint.Run, ws *workflow.Step, it *mapItem, req *checkpoint.Attempt, outputs map[string]any) error {
	oh := ws.OnHelp
	adv := p.wf.Agents[oh.Agent]
	u := unitOf(run.ID, ws.ID, it)
	data := p.templateData(ws, run.ID, req.N, outputs, it)
	data["Help"] = map[string]any{"Context": req.HelpContext, "Advice": ""}
	var b bytes.Buffer
	if err := oh.Template.Execute(&b, data); err != nil {
		return fmt.Errorf("render the on_help prompt of step %s: %w", ws.ID, err)
	}
	task, _ := p.originalTask(ctx, u)
	prompt := b.String()
	if task != "" {
		prompt += "\n\nThe agent's task was:\n----\n" + task + "\n----\n"
	}

	now := p.now()
	var (
		a     checkpoint.Attempt
		round int
	)
	err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		round = s.HelpRounds + 1
		a = checkpoint.Attempt{RunID: run.ID, StepID: ws.ID, ItemKey: u.Item, N: n, Kind: checkpoint.KindHelp,
			Status: checkpoint.AttemptRunning, Prompt: prompt, StartedAt: now, SessionID: agent.NewSessionID(),
			HelpContext: req.HelpContext}
		return tx.InsertAttempt(a)
	})
	if err != nil {
		return fmt.Errorf("begin the help round of step %s: %w", ws.ID, err)
	}
	p.fp.hit(FailAfterAttemptCommit)

	plan := attemptPlan{kind: checkpoint.KindHelp, prompt: prompt, sessionID: a.SessionID}
	t := &try{run: run, ws: ws, item: it, row: &a, plan: plan, round: round}
	spec, err := p.agentSpec(t, adv, "")
	if err != nil {
		return err
	}
	outPath := filepath.Join(p.attemptsDir(t), strconv.Itoa(a.N)+".out")
	a.OutputFile = p.relPath(outPath)
	out, err := checkpoint.CreateAtomicNoSync(outPath, 0o644)
	if err != nil {
		return fmt.Errorf("create attempt output %s: %w", a.OutputFile, err)
	}
	spec.Output = out
	spec.HelpMarker = "\x00" // an advisor's own text is advice, never a new request
	spec.OnStart = p.onStart(ctx, t)
	spec.OnRunning = func() { p.fp.hit(FailAfterAgentStart) }
	res, runErr := agent.Run(ctx, spec)
	if err := out.Commit(); err != nil {
		p.log.Warn("attempt output not saved", "file", a.OutputFile, "err", err)
	}
	var se *storeError
	if errors.As(runErr, &se) {
		return se.err // as in execute: a resume settles the round
	}
	wctx := context.WithoutCancel(ctx)
	end := p.now()
	a.FinishedAt = &end
	advice := ""
	switch {
	case runErr != nil:
		a.Status, a.Class, a.Error = checkpoint.AttemptFailed, string(handoff.ClassExitNonzero), "the advisor could not be started: "+runErr.Error()
	case res.Stop == agent.StopInterrupted:
		a.Status, a.Class, a.Error = checkpoint.AttemptInterrupted, string(handoff.ClassInterrupted), "cadence was stopped during the help round"
	case res.Stop != agent.StopNone:
		a.Status, a.Class, a.Error = checkpoint.AttemptFailed, string(res.Stop), "the advisor was stopped: "+string(res.Stop)
	case res.IsError || res.ExitCode != 0:
		a.Status, a.Class, a.Error = checkpoint.AttemptFailed, string(handoff.ClassExitNonzero), fmt.Sprintf("the advisor failed (exit %d) %s", res.ExitCode, res.ErrorMessage)
	default:
		advice = strings.TrimSpace(string(res.Text))
		if advice == "" {
			a.Status, a.Class, a.Error = checkpoint.AttemptFailed, string(handoff.ClassEmpty), "the advisor gave no advice"
		} else {
			a.Status = checkpoint.AttemptSucceeded
		}
	}
	if len(advice) > maxAdviceBytes {
		advice = advice[:maxAdviceBytes]
	}
	if res != nil {
		code := res.ExitCode
		a.ExitCode = &code
		a.Turns, a.InputTokens, a.OutputTokens = res.Turns, res.InputTokens, res.OutputTokens
		if res.CostUSD > 0 || isProtocolCost(adv.Preset) {
			c := res.CostUSD
			a.CostUSD = &c
		}
	}
	err = p.store.Update(wctx, func(tx *checkpoint.Tx) error {
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		addUsage(s, &a)
		s.UpdatedAt = end
		if a.Status == checkpoint.AttemptSucceeded {
			s.Advice = advice
			s.HelpRounds++
		} else if a.Status == checkpoint.AttemptFailed {
			s.Status = checkpoint.StepFailed
			s.NextRetryAt, s.DelayMS = nil, nil
		}
		return tx.UpdateStep(*s)
	})
	if err != nil {
		return fmt.Errorf("record the help round of step %s: %w", ws.ID, err)
	}
	p.fp.hit(FailAfterOutcomeCommit)
	p.sink.Emit(history.Event{Time: end, Type: history.EventAttemptFinished, RunID: run.ID, Step: ws.ID, Item: u.Item, Agent: oh.Agent, Attempt: a.N,
		HelpRound: round, Kind: checkpoint.KindHelp, Status: a.Status, Class: a.Class, Error: a.Error, Elapsed: elapsedOf(res)})
	switch a.Status {
	case checkpoint.AttemptInterrupted:
		return errInterrupted
	case checkpoint.AttemptFailed:
		p.sink.Emit(history.Event{Time: end, Type: history.EventStepFailed, RunID: run.ID, Step: ws.ID, Item: u.Item, Agent: ws.Agent,
			Class: string(handoff.ClassHelp), Message: "the agent asked for help and the advisor failed: " + a.Error})
	}
	return nil
}

// guidancePrompt is the follow-up that carries an advisor's answer back
// into the agent's session.
func guidancePrompt(advice string, ws *workflow.Step) string {
	var b strings.Builder
	b.WriteString("You asked for help. An advisor answered:\n\n----\n")
	b.WriteString(advice)
	b.WriteString("\n----\n\nContinue your task with this guidance")
	if ws.Handoff.From == "file" {
		fmt.Fprintf(&b, " and write the complete JSON handoff to %s.\n", filepath.ToSlash(ws.Handoff.Path))
	} else {
		b.WriteString(" and finish with the complete JSON handoff as your final message.\n")
	}
	return b.String()
}

func elapsedOf(res *agent.Result) float64 {
	if res == nil {
		return 0
	}
	return res.Elapsed.Seconds()
}
