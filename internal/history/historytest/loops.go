// Package historytest writes runs into a real state database through the
// checkpoint API, moving each row along the transitions the run loop uses,
// for the tests of the packages that read runs back (history, report,
// the inspect command).
package historytest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
)

// T0 is when LoopRun starts; its times are seconds after it.
var T0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// LoopRunID is the id of the run LoopRun writes.
const LoopRunID = "loop1"

// LoopRun writes into DIR/.cadence/state.db one run of the workflow
//
//	plan → implement (loop: code → docs, until review approves) → signoff (gate) → merge-gate (gate)
//
// as the engine stores it: plan succeeds at once (0-2 s). implement runs 3
// iterations: in iteration 1 code fails its first attempt (schema, 2.5-4 s)
// and succeeds on a follow-up (5-8 s), docs is skipped by its when, and
// until is false; iteration 2: code succeeds (10-12 s), docs skipped,
// until false; iteration 3: code succeeds (14-15 s), docs skipped, until
// true at 16 s; the loop succeeds with 3 iterations. Gate signoff is
// reached at 17 s and approved by alice@ci at 30 s with a comment; gate
// merge-gate is reached at 31 s and waits (timeout at 1 h). The run is
// interrupted at 32 s, waiting for the approval.
func LoopRun(t testing.TB, dir string) {
	t.Helper()
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, filepath.Join(dir, checkpoint.CadenceDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	at := func(sec float64) time.Time { return T0.Add(time.Duration(sec * float64(time.Second))) }
	const runID = LoopRunID
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		run := checkpoint.NewRun(checkpoint.Run{ID: runID, WorkflowPath: ".cadence/workflow.yaml",
			WorkflowSHA256: "0", WorkflowYAML: []byte("version: 1\n")}, T0)
		top := []checkpoint.Step{
			{RunID: runID, ID: "plan", Idx: 0, Agent: "sim", MaxAttempts: 3},
			{RunID: runID, ID: "implement", Idx: 1},
			{RunID: runID, ID: "signoff", Idx: 2},
			{RunID: runID, ID: "merge-gate", Idx: 3},
		}
		for i := range top {
			top[i] = checkpoint.NewStep(top[i], T0)
			top[i].CostKnown = true
		}
		if err := tx.CreateRun(run, top); err != nil {
			return err
		}
		w := writer{tx: tx, runID: runID, at: at}
		if err := w.attempts(&top[0], []attempt{{kind: "initial", status: "succeeded", start: 0, end: 2, cost: 0.01}}, checkpoint.StepSucceeded, 2); err != nil {
			return err
		}

		loop := &top[1]
		if err := tx.StepRunning(loop, at(2)); err != nil {
			return err
		}
		type iteration struct {
			code  []attempt
			until bool
			at    float64
		}
		iters := []iteration{
			{code: []attempt{
				{kind: "initial", status: "failed", class: "schema", err: `schema: /: missing required field "done"`, start: 2.5, end: 4, cost: 0.02},
				{kind: "followup", status: "succeeded", start: 5, end: 8, cost: 0.03},
			}, until: false, at: 9},
			{code: []attempt{{kind: "initial", status: "succeeded", start: 10, end: 12, cost: 0.02}}, until: false, at: 13},
			{code: []attempt{{kind: "initial", status: "succeeded", start: 14, end: 15, cost: 0.01}}, until: true, at: 16},
		}
		for n, it := range iters {
			prefix := "implement/" + strconv.Itoa(n+1)
			idx, err := tx.NextIdx(runID)
			if err != nil {
				return err
			}
			start := it.code[0].start
			row := checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: prefix, Idx: idx, CostKnown: true}, at(start))
			code := checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: prefix + "/code", Idx: idx + 1, Agent: "sim", MaxAttempts: 2, CostKnown: true}, at(start))
			docs := checkpoint.NewStep(checkpoint.Step{RunID: runID, ID: prefix + "/docs", Idx: idx + 2, Agent: "sim", MaxAttempts: 2, CostKnown: true}, at(start))
			for _, s := range []checkpoint.Step{row, code, docs} {
				if err := tx.InsertStep(s); err != nil {
					return err
				}
			}
			if err := tx.StepRunning(&row, at(start)); err != nil {
				return err
			}
			if err := w.attempts(&code, it.code, checkpoint.StepSucceeded, it.code[len(it.code)-1].end); err != nil {
				return err
			}
			skip, _ := json.Marshal(map[string]any{"when": "steps.code.output.docs_changed", "value": false,
				"read": map[string]any{"steps.code.output.docs_changed": false}, "at": at(it.code[len(it.code)-1].end)})
			if err := tx.StepSkipped(&docs, skip, at(it.code[len(it.code)-1].end)); err != nil {
				return err
			}
			until, _ := json.Marshal(map[string]any{"until": `steps.code.output.approved`, "value": it.until,
				"read": map[string]any{"steps.code.output.approved": it.until}, "at": at(it.at)})
			if err := tx.StepDecided(&row, until, at(it.at)); err != nil {
				return err
			}
			if err := tx.StepSucceeded(&row, nil, at(it.at)); err != nil {
				return err
			}
		}
		if err := tx.StepSucceeded(loop, envelope("implement", `{"iterations":3,"steps":{"code":{"approved":true},"docs":null}}`, at(16)), at(16)); err != nil {
			return err
		}

		signoff := &top[2]
		if err := tx.GateWaiting(signoff, checkpoint.Approval{Unit: signoff.Unit(), Prompt: "Review the plan and the diff.\nApprove to continue.",
			RequestedAt: at(17)}, at(17)); err != nil {
			return err
		}
		decided := at(30)
		if err := tx.DecideApproval(checkpoint.Approval{Unit: signoff.Unit(), Decision: checkpoint.Approved,
			Comment: "looks good; ship it", By: "alice@ci", DecidedAt: &decided}); err != nil {
			return err
		}
		if err := tx.StepSucceeded(signoff, envelope("signoff", `{"approved":true,"comment":"looks good; ship it","by":"alice@ci","at":"2026-11-02T09:00:30Z"}`, decided), decided); err != nil {
			return err
		}

		gate := &top[3]
		timeout := at(31 + 3600)
		if err := tx.GateWaiting(gate, checkpoint.Approval{Unit: gate.Unit(), Prompt: "Merge the branch into main?",
			RequestedAt: at(31), TimeoutAt: &timeout}, at(31)); err != nil {
			return err
		}
		return tx.RunEnded(&run, checkpoint.RunInterrupted, at(32))
	})
	if err != nil {
		t.Fatalf("write run %s: %v", runID, err)
	}
}

// attempt is one attempt of a fixture step: times in seconds from T0.
type attempt struct {
	kind, class, err string
	status           checkpoint.AttemptStatus
	start, end       float64
	cost             float64
}

type writer struct {
	tx    *checkpoint.Tx
	runID string
	at    func(float64) time.Time
}

// attempts runs the attempts of step s, then ends it as status at end.
func (w *writer) attempts(s *checkpoint.Step, list []attempt, status checkpoint.StepStatus, end float64) error {
	if err := w.tx.StepRunning(s, w.at(list[0].start)); err != nil {
		return err
	}
	for i, fa := range list {
		a := checkpoint.Attempt{RunID: w.runID, StepID: s.ID, N: i + 1, Kind: fa.kind, StartedAt: w.at(fa.start)}
		if err := w.tx.StartAttempt(&a); err != nil {
			return err
		}
		fin := w.at(fa.end)
		cost := fa.cost
		a.FinishedAt, a.CostUSD, a.Class, a.Error = &fin, &cost, fa.class, fa.err
		s.CostUSD += cost
		var err error
		if fa.status == checkpoint.AttemptSucceeded {
			err = w.tx.AttemptSucceeded(&a, false)
		} else {
			err = w.tx.AttemptFailed(&a)
		}
		if err != nil {
			return err
		}
	}
	if status == checkpoint.StepSucceeded {
		return w.tx.StepSucceeded(s, envelope(s.ID, `{"done":true}`, w.at(end)), w.at(end))
	}
	return w.tx.StepFailed(s, w.at(end))
}

// envelope is the envelope of an accepted handoff of data.
func envelope(step, data string, at time.Time) []byte {
	b, _ := json.Marshal(handoff.NewEnvelope(step, "", []byte(data), handoff.EnvelopeMetadata{}, at)) // plain values: cannot fail
	return b
}
