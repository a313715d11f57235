package attempt

import (
	"context"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// Fallback agents (SPEC §17). The entry a step instance's next attempt
// runs on is committed on its row (checkpoint.Step.Agent), and every
// attempt records the entry that ran it. A resume therefore continues on
// the entry the step row names, whatever the last attempt ran on: a move
// to a fallback is committed (StepFellBack) before the attempt that runs
// there begins, so a crash between the two resumes on the fallback.

// currentAgent is the entry the instance's next attempt runs on: its
// row's, when that is the step's own agent or one of its fallbacks (or
// theirs); else the step's own: a row that names none, or an entry the
// step can no longer reach since its workflow changed.
func currentAgent(w *workflow.Workflow, ws *workflow.Step, st *checkpoint.Step) string {
	if ws.Agent == "" || !reachable(w, ws.Agent, st.Agent) {
		return ws.Agent // "" for a command step
	}
	return st.Agent
}

// reachable reports whether entry to is entry from, or is reached from it
// through fallback lists.
func reachable(w *workflow.Workflow, from, to string) bool {
	seen := map[string]bool{}
	queue := []string{from}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		ag := w.Agents[name]
		if ag == nil || seen[name] {
			continue
		}
		if name == to {
			return true
		}
		seen[name] = true
		queue = append(queue, ag.Fallback...)
	}
	return false
}

// readEntries reads what the committed state says of the entries an
// instance may run on: the circuits that are open, and the entries whose
// latest attempt of the instance failed its login.
func (r *Runner) readEntries(tx *checkpoint.Tx, in *Instance, names []string, current string) (map[string]time.Time, map[string]bool, error) {
	open := map[string]time.Time{}
	for _, name := range append([]string{current}, names...) {
		b, err := LoadBreaker(tx, name)
		if err != nil {
			return nil, nil, err
		}
		if b.State == circuit.Open {
			open[name] = b.OpenUntil
		}
	}
	list, err := tx.UnitAttempts(in.Unit())
	if err != nil {
		return nil, nil, err
	}
	loggedOut := map[string]bool{}
	for _, a := range list {
		if a.Kind == checkpoint.KindHelp || a.Status() == checkpoint.AttemptRunning {
			continue
		}
		loggedOut[attemptAgent(&a, in.Step)] = a.Status() == checkpoint.AttemptFailed && a.Class == string(handoff.ClassAuth)
	}
	return open, loggedOut, nil
}

// fallBack commits the instance's move from entry from to entry to: its
// next attempt runs there, at once, in a fresh session.
func (r *Runner) fallBack(ctx context.Context, in *Instance, from, to string) error {
	now := r.now()
	err := r.Store.Update(ctx, func(tx *checkpoint.Tx) error {
		s, err := tx.Unit(in.Unit())
		if err != nil {
			return err
		}
		return tx.StepFellBack(s, to, now)
	})
	if err != nil {
		return fmt.Errorf("move %s to agent %s: %w", in.Label(), to, err)
	}
	r.Failpoint.Hit(FailAfterFallback)
	r.Log.Info("agent cannot serve, the step moves to a fallback", "step", in.Step.ID, "item", in.ItemKey(), "from", from, "to", to)
	r.Sink.Emit(history.Event{Time: now, Type: history.EventFallback, RunID: in.Run.ID, Step: in.StepPath(), Item: in.ItemKey(),
		Agent: to, Message: "agent " + from + " cannot serve; the next attempt runs on " + to})
	return nil
}

// diagnosisSoFar is what went wrong with the instance's work so far: the
// diagnosis of its latest attempt that failed on the work itself (a bad
// or missing handoff, a failed check), "" when none did. A usage limit, a
// login or an outage says nothing about the work.
func diagnosisSoFar(list []checkpoint.Attempt) string {
	for i := len(list) - 1; i >= 0; i-- {
		a := list[i]
		if a.Kind == checkpoint.KindHelp || a.Status() != checkpoint.AttemptFailed {
			continue
		}
		if handoff.Class(a.Class).IsAnswerFailure() {
			return a.Error
		}
	}
	return ""
}

// fallbackPrompt is the prompt of the first attempt on a fallback entry:
// the original task, and the diagnosis so far, since the new session
// knows nothing of the attempts before it.
func fallbackPrompt(task, diag string) string {
	if diag == "" {
		return task
	}
	return task + "\n\nAn earlier attempt at this task, by another agent, did not succeed: " + diag +
		"\nAvoid that mistake."
}

// canFallBack reports whether the committed state moves the instance to a
// fallback entry next: the decision Run takes next, taken now.
func (r *Runner) canFallBack(ctx context.Context, in *Instance) (bool, error) {
	s, err := r.readState(ctx, in)
	if err != nil {
		return false, err
	}
	return nextAction(in.Step, s, r.now()).kind == nextFallback, nil
}
