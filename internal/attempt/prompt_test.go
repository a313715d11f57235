package attempt

import (
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/checkpoint/checkpointtest"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// TestPlanRefusesAStoredFlagSessionID: a step whose stored session id is
// not a plain token (a state written before ids were checked) is not
// continued: the next attempt starts a fresh session, and says why. A
// plain id is continued.
func TestPlanRefusesAStoredFlagSessionID(t *testing.T) {
	r := &Runner{Workflow: &workflow.Workflow{Agents: map[string]*workflow.Agent{"a": {Name: "a", Preset: agent.PresetCodex}}}}
	ws := &workflow.Step{ID: "one", Agent: "a"}
	last := new(checkpointtest.New(t).Attempt(checkpoint.Attempt{N: 1, Class: string(handoff.ClassSchema), Error: "schema"}, checkpoint.AttemptFailed))
	for _, tt := range []struct {
		stored string
		resume bool
	}{
		{"--dangerously-bypass-approvals-and-sandbox", false},
		{"thread 1", false},
		{"0199a213-81c0-7800-8aa1-bbab2a035a53", true},
	} {
		st := &checkpoint.Step{SessionID: tt.stored}
		plan, err := r.plan(ws, st, last, "task", "task", 2, true)
		if err != nil {
			t.Fatalf("%q: %v", tt.stored, err)
		}
		if plan.resume != tt.resume {
			t.Fatalf("%q: plan %+v, want resume %v", tt.stored, plan, tt.resume)
		}
		if tt.resume {
			if plan.sessionID != tt.stored || plan.note != "" {
				t.Errorf("%q: plan %+v, want the stored session continued", tt.stored, plan)
			}
			continue
		}
		if plan.kind != checkpoint.KindFresh || agent.CheckSessionID(plan.sessionID) != nil || !strings.Contains(plan.note, "not a plain session id") {
			t.Errorf("%q: plan %+v, want a fresh session and a note", tt.stored, plan)
		}
	}
}

// TestPlanOnAFallback: the first attempt on an entry other than the one
// that ran the last attempt starts a fresh session with the task, however
// the last attempt ended; the next attempt on the same entry continues
// its session as usual. A row recorded before attempts named their entry
// ran on the step's own agent.
func TestPlanOnAFallback(t *testing.T) {
	r := &Runner{Workflow: &workflow.Workflow{Agents: map[string]*workflow.Agent{
		"a": {Name: "a", Preset: agent.PresetClaude, Fallback: []string{"b"}},
		"b": {Name: "b", Preset: agent.PresetCodex},
	}}}
	ws := &workflow.Step{ID: "one", Agent: "a"}
	const sess = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	states := checkpointtest.New(t)
	failed := func(agentName string, class handoff.Class) *checkpoint.Attempt {
		return new(states.Attempt(checkpoint.Attempt{N: 1, Agent: agentName, Class: string(class), Error: string(class)}, checkpoint.AttemptFailed))
	}
	for _, tt := range []struct {
		name    string
		current string
		last    *checkpoint.Attempt
		kind    string
	}{
		{"a usage limit on a, the step on b", "b", failed("a", handoff.ClassTransient), checkpoint.KindFallback},
		{"a schema failure on a, the step on b", "b", failed("a", handoff.ClassSchema), checkpoint.KindFallback},
		{"an old row, the step on b", "b", failed("", handoff.ClassAuth), checkpoint.KindFallback},
		{"back to a from b", "a", failed("b", handoff.ClassTransient), checkpoint.KindFallback},
		{"a schema failure on b, the step on b", "b", failed("b", handoff.ClassSchema), checkpoint.KindFollowup},
		{"an old row, the step on a", "a", failed("", handoff.ClassSchema), checkpoint.KindFollowup},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &checkpoint.Step{Agent: tt.current, SessionID: sess}
			plan, err := r.plan(ws, st, tt.last, "task", "task", 2, true)
			if err != nil {
				t.Fatal(err)
			}
			if plan.kind != tt.kind {
				t.Fatalf("plan %+v, want kind %s", plan, tt.kind)
			}
			if tt.kind == checkpoint.KindFallback && (plan.resume || plan.sessionID == sess || plan.prompt != "task") {
				t.Errorf("plan %+v, want a fresh session with the task", plan)
			}
		})
	}
}

// TestFallbackPrompt: the first prompt on a fallback is the task and the
// diagnosis of the latest attempt that failed on the work itself; a usage
// limit, a login or an outage adds nothing.
func TestFallbackPrompt(t *testing.T) {
	states := checkpointtest.New(t)
	att := func(kind string, status checkpoint.AttemptStatus, class handoff.Class, errText string) checkpoint.Attempt {
		return states.Attempt(checkpoint.Attempt{Kind: kind, Class: string(class), Error: errText}, status)
	}
	for _, tt := range []struct {
		name string
		list []checkpoint.Attempt
		want string
	}{
		{"nothing failed on the work", []checkpoint.Attempt{
			att(checkpoint.KindInitial, checkpoint.AttemptFailed, handoff.ClassTransient, "usage limit reached"),
		}, "task"},
		{"a schema failure, then a limit", []checkpoint.Attempt{
			att(checkpoint.KindInitial, checkpoint.AttemptFailed, handoff.ClassSchema, "schema: /ok: want boolean"),
			att(checkpoint.KindFollowup, checkpoint.AttemptFailed, handoff.ClassAuth, "login failed"),
		}, "task\n\nAn earlier attempt at this task, by another agent, did not succeed: schema: /ok: want boolean\nAvoid that mistake."},
		{"the latest work failure wins", []checkpoint.Attempt{
			att(checkpoint.KindInitial, checkpoint.AttemptFailed, handoff.ClassSchema, "first"),
			att(checkpoint.KindFollowup, checkpoint.AttemptFailed, handoff.ClassCheck, "check tests failed"),
			att(checkpoint.KindHelp, checkpoint.AttemptFailed, handoff.ClassSchema, "an advisor's"),
		}, "task\n\nAn earlier attempt at this task, by another agent, did not succeed: check tests failed\nAvoid that mistake."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fallbackPrompt("task", diagnosisSoFar(tt.list)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
