package handoff

import "testing"

func TestDiagnosisSummary(t *testing.T) {
	typeViolation := Violation{Pointer: "/success", Keyword: "type", Expected: "boolean", Actual: "string"}
	tests := []struct {
		name string
		d    *Diagnosis
		want string
	}{
		{"nil", nil, ""},
		{"one violation", &Diagnosis{Class: ClassSchema, Violations: []Violation{typeViolation}},
			"schema: /success: expected boolean, got string"},
		{"three violations", &Diagnosis{Class: ClassSchema, Violations: []Violation{
			{Pointer: "/", Keyword: "required", Expected: "tasks", Actual: "missing"}, typeViolation, typeViolation}},
			`schema: /: missing required field "tasks" (and 2 more violations)`},
		{"invalid JSON", invalidDiagnosis([]byte(`{"a": @}`), 1, 7, "expected a value, found '@'", `{"a": >>>@}`),
			"invalid_json: line 1, column 7: expected a value, found '@'"},
		{"truncated", truncatedDiagnosis([]byte(`{"a": [1,`), 1, 10, `{"a": [1,`),
			"truncated: the value is cut off at line 1, column 10"},
		{"empty", emptyDiagnosis([]byte("no json here")), "empty: No JSON value was found in the 12 bytes of output"},
		{"too large", tooLargeDiagnosis(2048, 1024), "too_large: The output is 2048 bytes, over the limit of 1024 bytes: raise handoff.max_bytes, or have the agent write its handoff to a file (handoff: {from: file, path: ...})"},
		{"missing", missingDiagnosis(".cadence/out/x.json", "does not exist"), "missing: The handoff file .cadence/out/x.json does not exist"},
		{"outside the pipeline", Diagnose(ClassExitNonzero, "exit status 2\nstderr: boom"), "exit_nonzero: exit status 2"},
		{"no details", Diagnose(ClassInterrupted, ""), "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.Summary(); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiagnoseKeepsClassAndDetails(t *testing.T) {
	d := Diagnose(ClassTransient, "rate limited; retry after 30s")
	if d.Class != ClassTransient || d.Details != "rate limited; retry after 30s" {
		t.Errorf("Diagnose = %+v", d)
	}
}
