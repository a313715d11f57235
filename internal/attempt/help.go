package attempt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	if last == nil || last.Status() != checkpoint.AttemptFailed || last.Class != string(handoff.ClassHelp) {
		return false, nil
	}
	latest, err := tx.UnitLastAttempt(u)
	if err != nil {
		return false, err
	}
	return !(latest.N > last.N && latest.Kind == checkpoint.KindHelp && latest.Status() == checkpoint.AttemptSucceeded), nil
}

// helpRound runs the step's advisor agent on the help context of the
// request attempt, records the round as an attempt of kind help, and stores
// the advice on the step for the next attempt to carry into the session.
// The advisor is launched like any attempt's agent.
func (r *Runner) helpRound(ctx context.Context, in *Instance, req *checkpoint.Attempt) error {
	prompt, err := r.helpPrompt(ctx, in, req)
	if err != nil {
		return err
	}
	u := in.Unit()
	now := r.now()
	var (
		a     checkpoint.Attempt
		round int
	)
	err = r.Store.UpdateBeforeStart(ctx, func(tx *checkpoint.Tx) error {
		n, err := nextN(tx, u)
		if err != nil {
			return err
		}
		s, err := tx.Unit(u)
		if err != nil {
			return err
		}
		round = s.HelpRounds + 1
		a = checkpoint.Attempt{RunID: u.RunID, StepID: u.StepID, ItemKey: u.Item, N: n, Kind: checkpoint.KindHelp,
			Prompt: prompt, StartedAt: now, SessionID: agent.NewSessionID(), HelpContext: req.HelpContext}
		return tx.StartAttempt(&a)
	})
	if err != nil {
		return fmt.Errorf("begin the help round of %s: %w", in.Label(), err)
	}
	r.Failpoint.Hit(FailAfterAttemptCommit)

	t := &try{r: r, in: in, row: &a, plan: attemptPlan{agent: in.Step.Agent, kind: checkpoint.KindHelp, prompt: prompt, sessionID: a.SessionID}, round: round}
	adv := r.Workflow.Agents[in.Step.OnHelp.Agent]
	l, err := r.newLaunch(ctx, t, adv, "")
	if err != nil {
		return err
	}
	res, runErr := l.run(ctx)
	var se *storeError
	if errors.As(runErr, &se) {
		return se.err // as in execute: a resume settles the round
	}
	return t.commitHelp(context.WithoutCancel(ctx), res, runErr)
}

// helpPrompt renders the on_help prompt for the request attempt req.
func (r *Runner) helpPrompt(ctx context.Context, in *Instance, req *checkpoint.Attempt) (string, error) {
	data := instanceData(in, req.N)
	data["Help"] = map[string]any{"Context": req.HelpContext, "Advice": ""}
	var b bytes.Buffer
	if err := in.Step.OnHelp.Template.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render the on_help prompt of step %s: %w", in.Step.ID, err)
	}
	task, _ := r.originalTask(ctx, in.Unit())
	prompt := b.String()
	if task != "" {
		prompt += "\n\nThe agent's task was:\n----\n" + task + "\n----\n"
	}
	return prompt, nil
}

// commitHelp records a finished help round: advice stored on the step
// for the next attempt (endAdvised), or the step failed when the advisor
// failed (endFailed), or the round stopped by cadence (endStopped), to be
// asked again when the run resumes.
func (t *try) commitHelp(ctx context.Context, res *agent.Result, runErr error) error {
	a, in := t.row, t.in
	now := t.r.now()
	a.FinishedAt = &now
	advice, ok := t.r.judgeAdvice(a, res, runErr)
	if res != nil {
		t.recordUsage(res)
	}
	e := endFailed
	switch {
	case ok:
		e = endAdvised
	case a.Class == string(handoff.ClassInterrupted):
		e = endStopped
	}
	err := t.r.Store.Update(ctx, func(tx *checkpoint.Tx) error {
		return t.r.finish(tx, t, t.ending(e, endFacts{class: a.Class, advice: advice}, now), now)
	})
	if err != nil {
		return fmt.Errorf("record the help round of %s: %w", in.Label(), err)
	}
	t.r.Failpoint.Hit(FailAfterOutcomeCommit)
	t.r.Sink.Emit(history.Event{Time: now, Type: history.EventAttemptFinished, RunID: in.Run.ID, Step: in.StepPath(), Item: in.ItemKey(), Agent: in.Step.OnHelp.Agent, Attempt: a.N,
		HelpRound: t.round, Kind: checkpoint.KindHelp, Status: string(a.Status()), Class: a.Class, Error: a.Error, Elapsed: elapsedOf(res)})
	switch e {
	case endStopped:
		return ErrInterrupted
	case endFailed:
		t.r.Sink.Emit(history.Event{Time: now, Type: history.EventStepFailed, RunID: in.Run.ID, Step: in.StepPath(), Item: in.ItemKey(), Agent: in.Step.Agent,
			Class: string(handoff.ClassHelp), Message: "the agent asked for help and the advisor failed: " + a.Error})
	}
	return nil
}

// judgeAdvice judges an advisor's answer: ok with its advice (bounded), or
// the class and error of the round set on a.
func (r *Runner) judgeAdvice(a *checkpoint.Attempt, res *agent.Result, runErr error) (string, bool) {
	switch {
	case runErr != nil:
		a.Class, a.Error = string(handoff.ClassExitNonzero), "the advisor could not be started: "+runErr.Error()
	case res.Stop == agent.StopInterrupted:
		a.Class, a.Error = string(handoff.ClassInterrupted), "cadence was stopped during the help round"
	case res.Stop != agent.StopNone:
		a.Class, a.Error = string(res.Stop), "the advisor was stopped: "+string(res.Stop)
	case res.IsError || res.ExitCode != 0:
		a.Class, a.Error = string(handoff.ClassExitNonzero), fmt.Sprintf("the advisor failed (exit %d) %s", res.ExitCode, res.ErrorMessage)
	default:
		advice := strings.TrimSpace(string(res.Text))
		if advice == "" {
			a.Class, a.Error = string(handoff.ClassEmpty), "the advisor gave no advice"
			return "", false
		}
		if len(advice) > maxAdviceBytes {
			// Cut on a character's boundary: the advice goes into the
			// agent's next prompt.
			advice = strings.ToValidUTF8(advice[:maxAdviceBytes], "")
		}
		return advice, true
	}
	return "", false
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
