package attempt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// onSession records the session an agent names as soon as its stream names
// it, on the running attempt and on the step, so that a crash in the middle
// of the attempt still knows which session to continue (G5).
func (r *Runner) onSession(ctx context.Context, u checkpoint.Unit, a *checkpoint.Attempt) func(id string) {
	return func(id string) {
		if id == "" || id == a.SessionID {
			return
		}
		err := r.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
			row, err := tx.UnitAttempt(u, a.N)
			if err != nil {
				return err
			}
			row.SessionID = id
			if err := tx.UpdateAttempt(*row); err != nil {
				return err
			}
			s, err := tx.Unit(u)
			if err != nil {
				return err
			}
			s.SessionID = id
			return tx.UpdateStep(*s)
		})
		if err != nil {
			r.Log.Warn("the agent's session id was not recorded", "step", u.StepID, "item", u.Item, "attempt", a.N, "err", err)
			return
		}
		a.SessionID = id
	}
}

// sessionTokens sums the usage recorded by the earlier attempts of a
// session: what an agent that reports cumulative usage (codex) had already
// counted before this attempt.
func (r *Runner) sessionTokens(ctx context.Context, u checkpoint.Unit, sessionID string) (in, cached, out int64, err error) {
	err = r.Store.View(ctx, func(tx *checkpoint.Tx) error {
		list, err := tx.UnitAttempts(u)
		if err != nil {
			return err
		}
		for _, x := range list {
			if x.SessionID == sessionID && x.Status() != checkpoint.AttemptRunning {
				in += x.InputTokens
				cached += x.CachedTokens
				out += x.OutputTokens
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read the usage of session %s: %w", sessionID, err)
	}
	return in, cached, out, nil
}

// runChat runs one turn of an openai agent: cadence is the client, so it
// resends the session's history, which it keeps in the store, and appends
// the new turn to it once the endpoint answered.
func (t *try) runChat(ctx context.Context, ag *workflow.Agent, spec agent.Spec) (*agent.Result, error) {
	runID, ws, a, plan := t.in.Run.ID, t.in.Step, t.row, t.plan
	var prior []agent.ChatMessage
	if plan.resume {
		err := t.r.Store.View(ctx, func(tx *checkpoint.Tx) error {
			msgs, err := tx.Messages(plan.sessionID)
			for _, m := range msgs {
				prior = append(prior, agent.ChatMessage{Role: m.Role, Content: m.Content})
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read the history of session %s: %w", plan.sessionID, err)
		}
	}
	cs := agent.ChatSpec{
		BaseURL: ag.BaseURL, Model: ag.Model, APIKeyEnv: ag.APIKeyEnv, Env: spec.Env,
		SessionID: plan.sessionID, History: prior, Prompt: plan.prompt,
		Output: spec.Output, MaxBytes: spec.MaxBytes, Timeout: spec.Timeout, IdleTimeout: spec.IdleTimeout,
		HelpMarker: spec.HelpMarker,
	}
	if ws.Handoff.Schema != nil {
		cs.Schema = json.RawMessage(ws.Handoff.Schema.Raw)
	}
	t.r.mu.Lock()
	noFormat := t.r.noSchemaFormat[ag.Name]
	t.r.mu.Unlock()
	if noFormat {
		cs.SchemaMode = agent.SchemaModeOff
	}
	t.r.Sink.Emit(history.Event{Time: t.r.now(), Type: history.EventAttemptStarted, RunID: runID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Agent: plan.agent,
		Attempt: a.N, Counted: t.counted, MaxAttempts: t.max, Kind: plan.kind, SessionID: plan.sessionID})
	t.r.Failpoint.Hit(FailAfterAgentStart)
	res, msgs, err := agent.RunChat(ctx, cs)
	if err != nil {
		return nil, err
	}
	if res.SchemaUnsupported {
		t.r.mu.Lock()
		t.r.noSchemaFormat[ag.Name] = true
		t.r.mu.Unlock()
	}
	if len(msgs) == 0 {
		return res, nil
	}
	now := t.r.now()
	rows := make([]checkpoint.Message, len(msgs))
	for i, m := range msgs {
		rows[i] = checkpoint.Message{SessionID: plan.sessionID, RunID: runID, StepID: t.in.StepPath(), ItemKey: t.in.ItemKey(), Attempt: a.N,
			Role: m.Role, Content: m.Content, CreatedAt: now}
	}
	if err := t.r.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		return tx.AppendMessages(rows)
	}); err != nil {
		return nil, fmt.Errorf("record the turn of session %s: %w", plan.sessionID, err)
	}
	return res, nil
}

// sessionAnswered reports whether an agent ever answered in the session:
// an attempt of it ended with a handoff, good or bad, or a help request.
// An agent that saves a session only once it answered cannot resume one
// that never was.
func sessionAnswered(list []checkpoint.Attempt, sessionID string) bool {
	for _, x := range list {
		if x.SessionID != sessionID {
			continue
		}
		switch {
		case x.Status() == checkpoint.AttemptSucceeded, x.Status() == checkpoint.AttemptAdopted:
			return true
		case x.Status() == checkpoint.AttemptFailed && (handoff.Class(x.Class).IsAnswerFailure() || x.Class == string(handoff.ClassHelp)):
			return true
		}
	}
	return false
}
