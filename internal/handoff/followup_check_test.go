package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFollowupAfterAFailedCheck renders the follow-up after a failed check
// at the first retry, a middle one and the last one, and compares each
// with a golden file read line by line when it was written
// (CADENCE_UPDATE_GOLDEN=1 rewrites them).
func TestFollowupAfterAFailedCheck(t *testing.T) {
	code := 1
	failing := CheckDiagnosis(CheckFailure{
		Name: "tests", Command: "go test ./...", ExitCode: &code, DurationMS: 2345,
		Output:     "=== RUN   TestAdd\n    calc_test.go:9: Add(2, 2) = 0, want 4\n--- FAIL: TestAdd (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s",
		OutputFile: ".cadence/attempts/r/implement/1.check-tests.out",
	})
	timedOut := CheckDiagnosis(CheckFailure{Name: "e2e", Command: "npm run e2e", TimedOut: true, Timeout: "10m0s", DurationMS: 600000})
	schema := mustSchema(t, "plan.json")
	tests := []struct {
		golden string
		in     FollowupInput
	}{
		{"check_first_retry.txt", FollowupInput{Task: "Implement Add in calc.go and answer {\"tasks\": [...], \"success\": true}.",
			Diagnosis: failing, Schema: schema, Attempt: 2, MaxAttempts: 4}},
		{"check_timeout_middle_retry.txt", FollowupInput{Task: "Make the e2e suite pass.", Diagnosis: timedOut,
			HandoffPath: ".cadence/out/e2e.json", Attempt: 3, MaxAttempts: 4}},
		{"check_last_attempt.txt", FollowupInput{Task: "Implement Add.", Diagnosis: failing, Schema: schema, Attempt: 4, MaxAttempts: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := BuildFollowup(tt.in)
			path := filepath.Join("testdata", "golden", tt.golden)
			if os.Getenv("CADENCE_UPDATE_GOLDEN") != "" {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("follow-up:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	if !strings.Contains(BuildFollowup(tests[0].in), "calc_test.go:9: Add(2, 2) = 0, want 4") {
		t.Error("the follow-up does not quote the failing test")
	}
}
