package handoff

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const planTask = `Read TASKS.md and split the work into small tasks.
Reply with a JSON object {"tasks": [{"id": ..., "title": ...}], "success": true}.`

func TestBuildFollowupGolden(t *testing.T) {
	plan := mustSchema(t, "plan.json")
	result := mustSchema(t, "agent_result.json")
	large := mustSchema(t, "large.json")
	check := func(name string, s *Schema, opts Options) *Diagnosis {
		r := Check(output(t, name), s, opts)
		if r.OK {
			t.Fatalf("%s: accepted", name)
		}
		return r.Diagnosis
	}
	handoffPath := ".cadence/out/implement.json"
	tests := []struct {
		golden string
		in     FollowupInput
	}{
		{"schema_first_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 2, MaxAttempts: 3,
			Diagnosis: check("wrong_type.txt", plan, Options{Repair: true})}},
		{"schema_missing_middle_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 3, MaxAttempts: 5,
			HandoffPath: handoffPath, Diagnosis: check("schema_then_repairable.txt", plan, Options{})}},
		{"schema_last_attempt.txt", FollowupInput{Task: planTask, Schema: result, Attempt: 3, MaxAttempts: 3,
			Diagnosis: CheckFile(writeTemp(t, `{"success": "yes", "status": "finished"}`), result, Options{}).Diagnosis}},
		{"invalid_json_first_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 2, MaxAttempts: 3,
			HandoffPath: handoffPath, Diagnosis: check("unrepairable.txt", plan, Options{Repair: true})}},
		{"truncated_middle_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 3, MaxAttempts: 4,
			Diagnosis: check("truncated.txt", plan, Options{Repair: true})}},
		{"missing_first_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 2, MaxAttempts: 3,
			HandoffPath: "testdata/no-such-dir/implement.json", Diagnosis: CheckFile("testdata/no-such-dir/implement.json", plan, Options{}).Diagnosis}},
		{"empty_large_schema.txt", FollowupInput{Task: strings.Repeat("Describe every field of the report in detail. ", 120),
			Schema: large, Attempt: 2, MaxAttempts: 3, Diagnosis: check("prose_only.txt", large, Options{Repair: true})}},
		{"empty_last_attempt_no_schema.txt", FollowupInput{Task: planTask, Attempt: 2, MaxAttempts: 2,
			Diagnosis: check("prose_only.txt", nil, Options{Repair: true})}},
		{"interrupted_first_retry.txt", FollowupInput{Task: planTask, Schema: plan, Attempt: 2, MaxAttempts: 3,
			Diagnosis: Diagnose(ClassInterrupted, "Cadence was stopped while the agent was running.")}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := BuildFollowup(tt.in)
			if again := BuildFollowup(tt.in); again != got {
				t.Fatal("BuildFollowup is not deterministic")
			}
			path := filepath.Join("testdata", "golden", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("prompt differs from %s:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
			}
		})
	}
}

// writeTemp writes content to a new temporary handoff file.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	return write(t, t.TempDir(), "handoff.json", content)
}
