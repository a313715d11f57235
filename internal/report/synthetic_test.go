package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
)

// epoch is the start of every synthetic run.
var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := epoch.Add(d); return &t }
func ptr[T any](v T) *T             { return &v }

// syntheticRun builds the history of a long run with n attempts: two plain
// steps, then a map step whose items use the rest, eight at a time. One
// item in every failEvery fails its first attempt with a schema error
// (diagnosis, follow-up prompt) and succeeds on a follow-up after a
// backoff; one in every 50 of those exhausts three attempts and is dead.
// failEvery 1 makes every item fail. Each text is as long as a real one:
// a diagnosis of ~600 bytes, a prompt of ~1.5 KB.
func syntheticRun(n, failEvery int) *history.Report {
	diag := `{"Class":"schema","Details":"` + strings.Repeat("The JSON does not match the schema: /files/0: expected string, got number. ", 8) + `"}`
	prompt := strings.Repeat("Your previous answer did not match the schema. Rewrite the complete, corrected JSON. ", 18)
	rep := &history.Report{Run: history.RunReport{ID: "20260301-090000-abcdef", Status: "failed",
		Workflow: ".cadence/workflow.yaml", StartedAt: epoch}}
	rep.Steps = append(rep.Steps, history.StepReport{ID: "plan", Status: "succeeded", Agent: "claude", AttemptsUsed: 1, MaxAttempts: 3,
		CostUSD: 0.05, Turns: 3, InputTokens: 1200, OutputTokens: 300,
		Attempts: []history.AttemptReport{{N: 1, Status: "succeeded", Kind: "initial", StartedAt: epoch, FinishedAt: at(40 * time.Second),
			CostUSD: ptr(0.05), Turns: 3, Repairs: []string{"prose", "code_fence"}}}})
	impl := history.StepReport{ID: "implement", Status: "succeeded", Agent: "claude", AttemptsUsed: 2, MaxAttempts: 3, CostUSD: 0.4, Turns: 20}
	impl.Attempts = []history.AttemptReport{
		{N: 1, Status: "failed", Kind: "initial", Class: "check", Error: "check: tests failed (exit 1)", Details: diag,
			StartedAt: *at(time.Minute), FinishedAt: at(6 * time.Minute), DelayMS: ptr(int64(2000)), NextRetryAt: at(6*time.Minute + 2*time.Second),
			Checks: []history.CheckReport{{Name: "tests", Status: "failed", ExitCode: ptr(1), StartedAt: *at(5 * time.Minute), DurationMS: 60000}}},
		{N: 2, Status: "succeeded", Kind: "followup", StartedAt: *at(6*time.Minute + 2*time.Second), FinishedAt: at(9 * time.Minute), Prompt: prompt,
			Checks: []history.CheckReport{{Name: "tests", Status: "passed", ExitCode: ptr(0), StartedAt: *at(8 * time.Minute), DurationMS: 60000}}},
	}
	rep.Steps = append(rep.Steps, impl)

	fix := history.StepReport{ID: "fix", Status: "failed", Agent: "claude", MaxAttempts: 3, ItemCounts: map[checkpoint.StepStatus]int{}}
	left := n - 3
	slot := make([]time.Time, 8) // when each of the 8 parallel slots is free
	for i := range slot {
		slot[i] = epoch.Add(10 * time.Minute)
	}
	for i := 0; left > 0; i++ {
		it := history.ItemReport{Key: fmt.Sprintf("finding-%05d", i), Status: "succeeded", MaxAttempts: 3}
		s := i % len(slot)
		t := slot[s]
		var plan []checkpoint.AttemptStatus // statuses of the item's attempts
		switch {
		case i%failEvery != 0:
			plan = []checkpoint.AttemptStatus{"succeeded"}
		case (i/failEvery)%50 == 49:
			plan = []checkpoint.AttemptStatus{"failed", "failed", "failed"}
		default:
			plan = []checkpoint.AttemptStatus{"failed", "succeeded"}
		}
		if len(plan) > left {
			plan = plan[:left]
		}
		for k, st := range plan {
			a := history.AttemptReport{N: k + 1, Status: st, Kind: "initial", StartedAt: t, CostUSD: ptr(0.01), Turns: 2}
			if k > 0 {
				a.Kind, a.Prompt = "followup", prompt
			}
			t = t.Add(40*time.Second + time.Duration(i%7)*time.Second)
			a.FinishedAt = ptr(t)
			if st == "failed" {
				a.Class, a.Error, a.Details = "schema", `schema: /files/0: expected string, got number`, diag
				a.FailedHandoff = fmt.Sprintf(".cadence/failed_handoffs/%s/fix/%s/%d.json", rep.Run.ID, it.Key, k+1)
				if k < 2 {
					a.DelayMS, a.NextRetryAt = ptr(int64(4000)), ptr(t.Add(4*time.Second))
					t = t.Add(4 * time.Second)
				}
			}
			it.Attempts = append(it.Attempts, a)
			it.CostUSD += 0.01
			it.Turns += 2
		}
		it.AttemptsUsed = len(it.Attempts)
		if it.Attempts[len(it.Attempts)-1].Status == "failed" {
			it.Status = "failed"
			fix.Dead = append(fix.Dead, history.DeadReport{Step: "fix", Key: it.Key, Class: "schema",
				Error: "schema: /files/0: expected string, got number", Signature: "schema: /files/#: expected string, got number",
				Attempts: 3, FirstAt: it.Attempts[0].StartedAt, LastAt: t, DeadAt: t})
		}
		fix.ItemCounts[it.Status]++
		fix.CostUSD += it.CostUSD
		fix.Turns += it.Turns
		fix.Items = append(fix.Items, it)
		slot[s] = t.Add(time.Second)
		left -= len(it.Attempts)
	}
	end := epoch
	for _, t := range slot {
		end = later(end, t)
	}
	rep.Run.FinishedAt = &end
	for _, s := range rep.Steps {
		rep.Run.CostUSD += s.CostUSD
	}
	rep.Steps = append(rep.Steps, fix)
	rep.Run.CostUSD += fix.CostUSD
	rep.Circuits = []history.CircuitReport{{Agent: "claude", State: "closed"}}
	return rep
}

// attemptCount counts every attempt of a report.
func attemptCount(rep *history.Report) int {
	n := 0
	for i := range rep.Steps {
		for _, u := range units(&rep.Steps[i]) {
			n += len(u.atts)
		}
	}
	return n
}

// writeRecords writes, under dir, the failed-handoff record of every failed
// attempt of rep that names one, as cadence does: a diagnosis, an output
// sample and the follow-up prompt sent next.
func writeRecords(t testing.TB, dir string, rep *history.Report) {
	t.Helper()
	sample := strings.Repeat(`{"files": [1, 2, 3], "summary": "done"} `, 14)
	followup := strings.Repeat("The JSON you returned does not match the schema at /files/0: expected string, got number. ", 16)
	for i := range rep.Steps {
		for _, u := range units(&rep.Steps[i]) {
			for _, a := range u.atts {
				if a.FailedHandoff == "" {
					continue
				}
				rec := handoff.FailedRecord{RunID: rep.Run.ID, StepID: rep.Steps[i].ID, Item: u.key, Attempt: a.N, Class: handoff.Class(a.Class),
					Details:      "The JSON does not match the schema: 1 violation: /files/0: expected string, got number.",
					Violations:   []handoff.Violation{{Pointer: "/files/0", Keyword: "type", Expected: "string", Actual: "number"}},
					OutputSample: sample[:500], FollowupPrompt: followup}
				b, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, filepath.FromSlash(a.FailedHandoff))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
