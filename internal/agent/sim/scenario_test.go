package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadScenario(t *testing.T) {
	sc, err := LoadScenario("testdata/full.yaml")
	if err != nil {
		t.Fatalf("LoadScenario: %v", err)
	}
	tests := []struct {
		step    string
		attempt int
		check   func(e Entry) bool
	}{
		{"plan", 1, func(e Entry) bool {
			return e.Answer == "Here you go: {'tasks': ['a', 'b',],}\n" && e.CostUSD == 0.01 && e.Turns == 3
		}},
		{"plan", 2, func(e Entry) bool { return e.Answer == `{"tasks": ["a"]}` }},
		{"plan", 9, func(e Entry) bool { return e.Answer == `{"tasks": ["a"]}` }},
		{"plan", 0, func(e Entry) bool { return e.Turns == 3 }},
		{"implement", 1, func(e Entry) bool { return e.RateLimit != nil && e.RateLimit.RetryAfter == Duration(2*time.Second) }},
		{"implement", 2, func(e Entry) bool { return e.WriteFile != nil && *e.WriteFile == `{"ok": true}` }},
		{"review", 1, func(e Entry) bool {
			ctx, err := jsonContext(e.Help.Context)
			return err == nil && ctx == `{"question":"which db?"}`
		}},
		{"review", 2, func(e Entry) bool { return e.Overloaded }},
		{"review", 3, func(e Entry) bool { return e.Hang }},
		{"review", 4, func(e Entry) bool { return e.Sleep == Duration(time.Second) && e.Answer == `{"late": true}` }},
		{"review", 5, func(e Entry) bool { return e.Crash != nil && e.Crash.AfterBytes == 20 && e.Crash.ExitCode == 137 }},
		{"review", 6, func(e Entry) bool { return e.ExitCode == 2 }},
		{"review", 7, func(e Entry) bool { return e.SessionNotFound }},
		{"review", 8, func(e Entry) bool { return e.StdoutBytes == 100000000 }},
	}
	for _, tt := range tests {
		e, err := sc.Entry(tt.step, tt.attempt)
		if err != nil {
			t.Errorf("Entry(%s, %d): %v", tt.step, tt.attempt, err)
			continue
		}
		if !tt.check(e) {
			t.Errorf("Entry(%s, %d) = %+v", tt.step, tt.attempt, e)
		}
	}
	if _, err := sc.Entry("deploy", 1); !errors.Is(err, ErrNoEntry) || err.Error() != "no scenario entry for step deploy" {
		t.Errorf("Entry(deploy) error = %v", err)
	}
}

func TestLoadScenarioErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string // every fragment must appear in the error
	}{
		{"testdata/unknown_key.yaml", []string{"testdata/unknown_key.yaml", "[3:7]", `unknown field "anwser"`}},
		{"testdata/wrong_type.yaml", []string{"[4:14]", "turns"}},
		{"testdata/bad_duration.yaml", []string{"[3:14]", "sleep", `invalid duration "soon"`}},
		{"testdata/negative_sleep.yaml", []string{"steps.review[1]", "sleep: negative duration"}},
		{"testdata/negative_linger.yaml", []string{"steps.review[1]", "linger: negative duration"}},
		{"testdata/negative_reset.yaml", []string{"steps.review[1]", "usage_limit.reset_after: negative duration"}},
		{"testdata/missing.yaml", []string{"read scenario", "no such file"}},
		{"testdata/edit_outside.yaml", []string{"steps.fix[1]", `edit: "../outside.go" is not a path inside the project`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadScenario(tt.file)
			if err == nil {
				t.Fatal("LoadScenario succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
