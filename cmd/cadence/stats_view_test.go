package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/history"
)

// statsSample is a hand-built Stats value: three steps on two agents, one of
// them with no finished execution, and two warnings.
func statsSample() *history.Stats {
	review := history.Counts{
		Steps: 1, Skipped: 2, Attempts: 1, SuccessRate: 0,
		FailureClasses: map[string]int{"schema": 1}, Repairs: map[string]int{},
		CostUnknownAttempts: 1, RunningSeconds: 1.5, WaitingSeconds: 2,
	}
	return &history.Stats{
		Scope: "all runs",
		Runs:  3,
		Steps: []history.StepStats{
			{Step: "plan", Counts: history.Counts{
				Steps: 3, Succeeded: 2, Failed: 1, Attempts: 4,
				SuccessRate: 0.5, MeanAttemptsToSuccess: 1.5,
				FailureClasses: map[string]int{"schema": 1, "exit_nonzero": 1},
				Repairs:        map[string]int{"prose": 1, "code_fence": 2},
				CostUSD:        0.04, CostPerAttemptUSD: 0.01,
				RunningSeconds: 24, WaitingSeconds: 2,
			}},
			{Step: "implement", Counts: history.Counts{
				Steps: 2, Succeeded: 1, Exhausted: 1, Attempts: 4,
				SuccessRate: 0.25, MeanAttemptsToSuccess: 2, ExhaustionRate: 0.5,
				FailureClasses: map[string]int{"transient": 1, "invalid_json": 2},
				Repairs:        map[string]int{},
				CostUSD:        0.1, CostPerAttemptUSD: 0.025, CostUnknownAttempts: 1,
				RunningSeconds: 72, WaitingSeconds: 8,
			}},
			{Step: "review", Counts: review},
		},
		Agents: []history.AgentStats{
			{Agent: "claude", Counts: history.Counts{
				Steps: 5, Succeeded: 3, Exhausted: 1, Failed: 1, Attempts: 8,
				SuccessRate: 0.375, MeanAttemptsToSuccess: 5.0 / 3, ExhaustionRate: 0.2,
				FailureClasses: map[string]int{"schema": 1, "exit_nonzero": 1, "invalid_json": 2, "transient": 1},
				Repairs:        map[string]int{"prose": 1, "code_fence": 2},
				CostUSD:        0.14, CostPerAttemptUSD: 0.0175, CostUnknownAttempts: 1,
				RunningSeconds: 96, WaitingSeconds: 10,
			}},
			{Agent: "lint", Counts: review},
		},
		Warnings: []string{
			"step implement: exhaustion rate 50.0% (1 of 2 finished executions), over 5%",
			"agent claude: exhaustion rate 20.0% (1 of 5 finished executions), over 5%",
		},
	}
}

func TestPrintStatsGolden(t *testing.T) {
	var buf bytes.Buffer
	printStats(&buf, statsSample())
	want, err := os.ReadFile(filepath.Join("testdata", "stats.golden"))
	if err != nil {
		t.Fatal(err)
	}
	compareLines(t, buf.String(), string(want))
}

// compareLines reports the first line where got and want differ, and a
// difference in line count.
func compareLines(t *testing.T, got, want string) {
	t.Helper()
	g := bufio.NewScanner(strings.NewReader(got))
	w := bufio.NewScanner(strings.NewReader(want))
	for line := 1; ; line++ {
		gok, wok := g.Scan(), w.Scan()
		if !gok && !wok {
			return
		}
		if gok != wok {
			t.Fatalf("line %d: got %q, want %q (one output ends early)\nfull output:\n%s", line, g.Text(), w.Text(), got)
		}
		if g.Text() != w.Text() {
			t.Fatalf("line %d:\n got %q\nwant %q\nfull output:\n%s", line, g.Text(), w.Text(), got)
		}
	}
}

func TestPrintStatsNoWarnings(t *testing.T) {
	s := &history.Stats{Scope: "run 20261122-150405-3fa2c1", Runs: 1,
		Steps:  []history.StepStats{{Step: "plan", Counts: history.Counts{Steps: 1, Succeeded: 1, Attempts: 1, SuccessRate: 1, MeanAttemptsToSuccess: 1}}},
		Agents: []history.AgentStats{{Agent: "sim", Counts: history.Counts{Steps: 1, Succeeded: 1, Attempts: 1, SuccessRate: 1, MeanAttemptsToSuccess: 1}}}}
	var buf bytes.Buffer
	printStats(&buf, s)
	out := buf.String()
	for _, want := range []string{
		"stats of run 20261122-150405-3fa2c1 (1 run)\n",
		"\nplan  1           1   0          0       0        1         100.0%      1.00           0.0%  ",
		"\nno warnings\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warnings:") {
		t.Errorf("output lists warnings when there are none:\n%s", out)
	}
}

func TestStatsJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := statsJSON(&buf, statsSample()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scope    string                       `json:"scope"`
		Runs     int                          `json:"runs"`
		Steps    []map[string]json.RawMessage `json:"steps"`
		Agents   []map[string]json.RawMessage `json:"agents"`
		Warnings []string                     `json:"warnings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("statsJSON wrote invalid JSON: %v\n%s", err, buf.String())
	}
	if doc.Scope != "all runs" || doc.Runs != 3 || len(doc.Steps) != 3 || len(doc.Agents) != 2 || len(doc.Warnings) != 2 {
		t.Fatalf("decoded %+v", doc)
	}
	// Every figure is a snake_case key of the step object itself (Counts is
	// embedded, not nested).
	implement := doc.Steps[1]
	want := map[string]string{
		"step":                     `"implement"`,
		"steps":                    `2`,
		"succeeded":                `1`,
		"exhausted":                `1`,
		"failed":                   `0`,
		"skipped":                  `0`,
		"attempts":                 `4`,
		"handoff_success_rate":     `0.25`,
		"mean_attempts_to_success": `2`,
		"exhaustion_rate":          `0.5`,
		"failure_classes":          `{"invalid_json":2,"transient":1}`,
		"repairs":                  `{}`,
		"cost_usd":                 `0.1`,
		"cost_per_attempt_usd":     `0.025`,
		"cost_unknown_attempts":    `1`,
		"running_seconds":          `72`,
		"waiting_seconds":          `8`,
	}
	for key, v := range want {
		raw, ok := implement[key]
		if !ok {
			t.Errorf("step object lacks key %q", key)
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatal(err)
		}
		if compact.String() != v {
			t.Errorf("%s = %s, want %s", key, compact.String(), v)
		}
	}
	if len(implement) != len(want) {
		t.Errorf("step object has %d keys, want %d: %v", len(implement), len(want), implement)
	}
	if _, ok := doc.Agents[0]["agent"]; !ok {
		t.Errorf("agent object lacks key \"agent\": %v", doc.Agents[0])
	}
}
