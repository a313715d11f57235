package attempt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/template"

	"github.com/cadence-dev/cadence/internal/jsonvalue"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// instanceData is what prompts and agent argv templates of the instance
// see at attempt (SPEC §4).
func instanceData(in *Instance, attempt int) map[string]any {
	ws := in.Step
	data := map[string]any{
		"Run":         map[string]any{"ID": in.Run.ID},
		"Step":        map[string]any{"ID": ws.ID},
		"Attempt":     attempt,
		"HandoffPath": ws.Handoff.Path,
		"SchemaPath":  ws.Handoff.SchemaPath,
		"Steps":       in.Outputs,
		"Inputs":      in.Inputs,
		"Help":        map[string]any{"Context": "", "Advice": ""},
	}
	if in.Item != nil {
		data["Item"] = itemData(in.Item)
	}
	if in.Iteration > 0 {
		data["Loop"] = loopData(in)
	}
	return data
}

// loopData is what .Loop is in the templates of a step inside a loop
// (SPEC §16.5): the iteration, from 1, and the previous iteration's
// outputs (nil in the first, so that {{ if .Loop.Previous }} tells).
func loopData(in *Instance) map[string]any {
	d := map[string]any{"Iteration": in.Iteration, "Previous": nil}
	if in.Previous != nil {
		d["Previous"] = in.Previous
	}
	return d
}

// Render renders a template of the step, other than its prompt (an
// approval gate's prompt), with the data a prompt sees.
func (in *Instance) Render(t *template.Template) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, instanceData(in, 0)); err != nil {
		return "", fmt.Errorf("render the template of step %s: %w", in.Step.ID, err)
	}
	return b.String(), nil
}

// itemData is what .Item is in a map step's templates: the item's own
// fields and Key, for an object; Key and Value for any other item.
func itemData(it *Item) jsonvalue.Object {
	obj, ok := it.Value.(jsonvalue.Object)
	if !ok {
		return jsonvalue.Object{"Key": it.Key, "Value": it.Value}
	}
	out := make(jsonvalue.Object, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	out["Key"] = it.Key
	return out
}

// renderPrompt renders the step's task prompt for the given attempt.
func (r *Runner) renderPrompt(in *Instance, attempt int, advice string) (string, error) {
	ws := in.Step
	var b bytes.Buffer
	data := instanceData(in, attempt)
	data["Help"] = map[string]any{"Context": "", "Advice": advice}
	if err := ws.Template.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render the prompt of step %s: %w", ws.ID, err)
	}
	return b.String(), nil
}

// renderArgs renders argv templates (command, args, continue_args).
func renderArgs(name string, words []string, data map[string]any) ([]string, error) {
	out := make([]string, 0, len(words))
	for i, w := range words {
		t, err := template.New(name).Option("missingkey=error").Funcs(jsonvalue.Funcs()).Parse(w)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		out = append(out, b.String())
	}
	return out, nil
}

// attemptPlan is what the next attempt will do: its kind, prompt and session.
type attemptPlan struct {
	// agent is the agent entry the attempt runs on ("" for a command step).
	agent     string
	kind      string
	prompt    string
	sessionID string
	resume    bool
	// note says why the attempt does not continue the step's session
	// although it would have: recorded with the attempt's outcome.
	note string
	// snapshot is the commit recording the work tree before the attempt
	// ("" when not in a git repository), stored on its row.
	snapshot string
}

// plan decides the next attempt from the committed state: a first attempt
// starts a session cadence names; a retry after a handoff failure continues
// the session with a follow-up built from the stored diagnosis (the builder
// is deterministic, so a resumed process sends the very prompt the failed-
// handoff record shows; orig is the task of the session's first attempt);
// a retry after timeout or stuck, or when the agent
// lost the session, starts a fresh one with the original task.
func (r *Runner) plan(ws *workflow.Step, st *checkpoint.Step, last *checkpoint.Attempt, task, orig string, n int, answered bool) (attemptPlan, error) {
	if last == nil {
		if st.SessionID != "" && agent.CheckSessionID(st.SessionID) == nil {
			// A step inside a loop with session: continue, in an
			// iteration after the first: its session is the one its
			// previous iteration left, where the agent answered.
			return attemptPlan{kind: checkpoint.KindInitial, prompt: task, sessionID: st.SessionID, resume: true}, nil
		}
		return attemptPlan{kind: checkpoint.KindInitial, prompt: task, sessionID: agent.NewSessionID()}, nil
	}
	current := currentAgent(r.Workflow, ws, st)
	if current != "" && attemptAgent(last, ws) != current {
		// The step moved to another entry (SPEC §17): a session cannot
		// move between CLIs or accounts. planFor adds the diagnosis.
		return attemptPlan{kind: checkpoint.KindFallback, prompt: task, sessionID: agent.NewSessionID()}, nil
	}
	if st.FreshSession || st.SessionID == "" {
		return attemptPlan{kind: checkpoint.KindFresh, prompt: task, sessionID: agent.NewSessionID()}, nil
	}
	if err := agent.CheckSessionID(st.SessionID); err != nil {
		// A state written before session ids were checked: the id never
		// goes into argv.
		return attemptPlan{kind: checkpoint.KindFresh, prompt: task, sessionID: agent.NewSessionID(),
			note: "the step's session id was not used, a fresh session started: " + err.Error()}, nil
	}
	cls := handoff.Class(last.Class)
	switch {
	case last.Status() == checkpoint.AttemptFailed && cls.IsAnswerFailure():
		diag, err := storedDiagnosis(last)
		if err != nil {
			return attemptPlan{}, fmt.Errorf("attempt %d of step %s: %w", last.N, ws.ID, err)
		}
		prompt := handoff.BuildFollowup(r.followupInput(ws, orig, diag, n))
		return attemptPlan{kind: checkpoint.KindFollowup, prompt: prompt, sessionID: st.SessionID, resume: true}, nil
	case last.Status() == checkpoint.AttemptFailed && cls == handoff.ClassHelp:
		return attemptPlan{kind: checkpoint.KindFollowup, prompt: guidancePrompt(st.Advice, ws), sessionID: st.SessionID, resume: true}, nil
	case last.Status() == checkpoint.AttemptInterrupted && last.PID == nil && r.Workflow.Agents[current].Preset != agent.PresetOpenAI:
		// The agent never started: its session was never created.
		return attemptPlan{kind: checkpoint.KindFresh, prompt: task, sessionID: agent.NewSessionID()}, nil
	case !answered && !agent.UnansweredSessionResumable(r.Workflow.Agents[current].Preset):
		// The agent keeps a session only once it answered in it, and it
		// never did: a resume could only fail.
		return attemptPlan{kind: checkpoint.KindFresh, prompt: task, sessionID: agent.NewSessionID()}, nil
	}
	// Interrupted, transient or a non-zero exit: the session exists, so the
	// task is asked again in it.
	return attemptPlan{kind: checkpoint.KindFollowup, prompt: task, sessionID: st.SessionID, resume: true}, nil
}

func (r *Runner) followupInput(ws *workflow.Step, task string, diag *handoff.Diagnosis, n int) handoff.FollowupInput {
	in := handoff.FollowupInput{
		Task:        task,
		Diagnosis:   diag,
		Schema:      ws.Handoff.Schema,
		Attempt:     n,
		MaxAttempts: ws.Retry.MaxAttempts,
	}
	if ws.Handoff.From == "file" {
		in.HandoffPath = filepath.ToSlash(ws.Handoff.Path)
	}
	return in
}

func storedDiagnosis(a *checkpoint.Attempt) (*handoff.Diagnosis, error) {
	var d handoff.Diagnosis
	if len(a.DetailsJSON) == 0 {
		return handoff.Diagnose(handoff.Class(a.Class), a.Error), nil
	}
	if err := json.Unmarshal(a.DetailsJSON, &d); err != nil {
		return nil, fmt.Errorf("stored diagnosis: %w", err)
	}
	return &d, nil
}
