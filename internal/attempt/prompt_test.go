package attempt

import (
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
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
	last := &checkpoint.Attempt{N: 1, Status: checkpoint.AttemptFailed, Class: string(handoff.ClassSchema), Error: "schema"}
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
