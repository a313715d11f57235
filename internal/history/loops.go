package history

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// IterationReport is one iteration of a loop step (SPEC §16.5): its row's
// status, the until decision taken after it, and its inner steps, each in
// the shape of a top-level step (id being the row's path, such as
// implement/3/code).
type IterationReport struct {
	Iteration int                   `json:"iteration"`
	ID        string                `json:"id"` // the iteration's row, such as implement/3
	Status    checkpoint.StepStatus `json:"status"`
	// Until is the decision taken after the iteration: the loop's until,
	// the value it had and what it read; absent until it is taken.
	Until json.RawMessage `json:"until,omitempty"`
	Steps []StepReport    `json:"steps"`
}

// ApprovalReport is the state of an approval gate reached (SPEC §16.6).
type ApprovalReport struct {
	// Decision is waiting, approved, rejected, or timed_out for a gate
	// that failed when its timeout passed with no answer.
	Decision    string     `json:"decision"`
	Comment     string     `json:"comment,omitempty"`
	By          string     `json:"by,omitempty"`
	At          *time.Time `json:"at"`
	Prompt      string     `json:"prompt"`
	RequestedAt time.Time  `json:"requested_at"`
	TimeoutAt   *time.Time `json:"timeout_at"`
}

// Approval decisions as ApprovalReport.Decision shows them, besides
// checkpoint.Approved and checkpoint.Rejected.
const (
	ApprovalWaiting  = "waiting"
	ApprovalTimedOut = "timed_out"
)

// WaitingReport is a gate the run waits on: the step to approve or reject.
type WaitingReport struct {
	Step      string     `json:"step"` // the gate's row, such as merge-gate or implement/2/gate
	Prompt    string     `json:"prompt"`
	Since     time.Time  `json:"since"`
	TimeoutAt *time.Time `json:"timeout_at"`
}

// nestLoops turns the flat rows of a run, in their order, into its
// top-level steps, each loop step holding its iterations and each
// iteration its inner steps. A loop step's usage is its inner steps'. A
// row whose parent is missing stays at the top level, so that nothing in
// the state is hidden.
func nestLoops(flat []StepReport) []StepReport {
	byID := make(map[string]bool, len(flat))
	for _, s := range flat {
		byID[s.ID] = true
	}
	children := map[string][]int{}
	var top []int
	for i, s := range flat {
		p := address.Of(s.ID).Parent().String()
		if p == "" || !byID[p] || address.Of(s.ID).IsIteration() && address.Of(s.ID).Number() == 0 {
			top = append(top, i)
			continue
		}
		children[p] = append(children[p], i)
	}
	var build func(i int) StepReport
	build = func(i int) StepReport {
		s := flat[i]
		its := children[s.ID]
		if len(its) == 0 {
			return s
		}
		sort.SliceStable(its, func(a, b int) bool {
			return address.Of(flat[its[a]].ID).Number() < address.Of(flat[its[b]].ID).Number()
		})
		s.Iterations = make([]IterationReport, 0, len(its))
		costKnown, tokensKnown, inners := false, false, false
		for _, j := range its {
			row := flat[j]
			it := IterationReport{Iteration: address.Of(row.ID).Number(), ID: row.ID, Status: row.Status, Until: row.Decision,
				Steps: []StepReport{}}
			for _, k := range children[row.ID] {
				inner := build(k)
				s.CostUSD += inner.CostUSD
				s.Turns += inner.Turns
				s.InputTokens += inner.InputTokens
				s.OutputTokens += inner.OutputTokens
				if len(inner.Attempts) > 0 || len(inner.Items) > 0 || len(inner.Iterations) > 0 {
					// Only a step that ran tells whether its agent reports usage.
					costKnown = costKnown || !inner.CostUnknown
					tokensKnown = tokensKnown || !inner.TokensUnknown
					inners = true
				}
				it.Steps = append(it.Steps, inner)
			}
			s.Iterations = append(s.Iterations, it)
		}
		if inners {
			s.CostUnknown, s.TokensUnknown = !costKnown, !tokensKnown
		}
		return s
	}
	out := make([]StepReport, 0, len(top))
	for _, i := range top {
		out = append(out, build(i))
	}
	return out
}

// approvalReport is the state of a gate from its approval row and its
// step's status.
func approvalReport(a checkpoint.Approval, status checkpoint.StepStatus) *ApprovalReport {
	r := &ApprovalReport{Decision: a.Decision, Comment: a.Comment, By: a.By, At: a.DecidedAt, Prompt: a.Prompt,
		RequestedAt: a.RequestedAt, TimeoutAt: a.TimeoutAt}
	if r.Decision == "" {
		r.Decision = ApprovalWaiting
		if status == checkpoint.StepFailed {
			r.Decision = ApprovalTimedOut
		}
	}
	return r
}

// Find returns the step or inner step whose row id is id, at any depth of
// loops; nil when the run has none.
func (r *Report) Find(id string) *StepReport {
	return findStep(r.Steps, id)
}

func findStep(steps []StepReport, id string) *StepReport {
	for i := range steps {
		if steps[i].ID == id {
			return &steps[i]
		}
		for j := range steps[i].Iterations {
			if s := findStep(steps[i].Iterations[j].Steps, id); s != nil {
				return s
			}
		}
	}
	return nil
}

// Instances returns every row of the workflow step name in the run, in
// the order they ran: the step itself at the top level, or each
// iteration's instance of an inner step.
func (r *Report) Instances(name string) []*StepReport {
	var out []*StepReport
	var walk func([]StepReport)
	walk = func(steps []StepReport) {
		for i := range steps {
			if address.Of(steps[i].ID).StepName() == name {
				out = append(out, &steps[i])
			}
			for j := range steps[i].Iterations {
				walk(steps[i].Iterations[j].Steps)
			}
		}
	}
	walk(r.Steps)
	return out
}

// Iteration returns iteration n of a loop step; nil when it has none.
func (s *StepReport) Iteration(n int) *IterationReport {
	for i := range s.Iterations {
		if s.Iterations[i].Iteration == n {
			return &s.Iterations[i]
		}
	}
	return nil
}
