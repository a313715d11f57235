package handoff

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sameJSON compares got with the hand-written golden file, both compacted,
// so that field order matters but layout does not.
func sameJSON(t *testing.T, got []byte, golden string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "golden", golden))
	if err != nil {
		t.Fatal(err)
	}
	var w, g bytes.Buffer
	if err := json.Compact(&w, want); err != nil {
		t.Fatalf("golden %s: %v", golden, err)
	}
	if err := json.Compact(&g, got); err != nil {
		t.Fatalf("output: %v", err)
	}
	if w.String() != g.String() {
		t.Errorf("JSON differs from %s:\n got %s\nwant %s", golden, g.String(), w.String())
	}
}

func TestFailedRecordJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		golden string
		rec    FailedRecord
	}{
		{"failed_record.json", NewFailedRecord(
			AttemptRef{RunID: "r-20261122-01", StepID: "implement", Attempt: 2, Agent: "claude", SessionID: "5b1e7c2a-1111-4c3d-9e8f-000000000001"},
			&Diagnosis{
				Class:        ClassSchema,
				Details:      "The JSON does not match the schema: 1 violation: /success: expected boolean, got string.",
				Violations:   []Violation{{Pointer: "/success", Keyword: "type", Expected: "boolean", Actual: "string", Message: "expected boolean, but got string"}},
				OutputSample: "{'success': 'yes',}",
			},
			Result{Repairs: []string{"single_quotes", "trailing_comma"}},
			".cadence/attempts/r-20261122-01/implement/2.out", "Fix it.",
			time.Date(2026, 11, 22, 15, 3, 5, 0, paris),
		)},
		{"failed_record_empty.json", NewFailedRecord(
			AttemptRef{RunID: "r1", StepID: "plan", Attempt: 1, Agent: "lint"},
			Diagnose(ClassTimeout, "killed after 30m0s"),
			Result{},
			".cadence/attempts/r1/plan/1.out", "",
			time.Date(2026, 11, 22, 14, 3, 5, 250_000_000, time.UTC),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got, err := json.Marshal(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, got, tt.golden)

			var back FailedRecord
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if !back.CreatedAt.Equal(tt.rec.CreatedAt) || back.Class != tt.rec.Class || back.Attempt != tt.rec.Attempt {
				t.Errorf("round trip: got %+v, want %+v", back, tt.rec)
			}
		})
	}
}
