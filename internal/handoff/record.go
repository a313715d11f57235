package handoff

import (
	"encoding/json"
	"time"
)

// FailedRecord is the debug record of a failed handoff, written to
// .cadence/failed_handoffs/RUN/STEP/N.json (SPEC §5.5). Its JSON has the
// spec's field names in the spec's order; violations and repairs are
// always arrays, and created_at is RFC 3339 in UTC.
type FailedRecord struct {
	RunID      string      `json:"run_id"`
	StepID     string      `json:"step_id"`
	Item       string      `json:"item_key,omitempty"` // the map item's key, for an item's record
	Attempt    int         `json:"attempt"`
	Agent      string      `json:"agent"`
	SessionID  string      `json:"session_id"`
	Class      Class       `json:"class"`
	Details    string      `json:"details"`
	Violations []Violation `json:"violations"`
	Repairs    []string    `json:"repairs"`
	// Provenance is where the value the record is about was found (prose,
	// code_span, …); omitted when no value was found.
	Provenance     Provenance `json:"provenance,omitempty"`
	OutputSample   string     `json:"output_sample"`
	OutputFile     string     `json:"output_file"`
	FollowupPrompt string     `json:"followup_prompt"`
	CreatedAt      time.Time  `json:"created_at"`
	// Check is the failed check of a class check record.
	Check *CheckFailure `json:"check,omitempty"`
}

// AttemptRef identifies the attempt a failed-handoff record belongs to.
type AttemptRef struct {
	RunID     string
	StepID    string
	Attempt   int
	Agent     string
	SessionID string
}

// NewFailedRecord builds the record of a failed attempt from its
// diagnosis and the result that produced it (for the repairs applied).
// outputFile is the attempt's raw output file, followup the prompt sent
// for the next attempt ("" when there is none).
func NewFailedRecord(ref AttemptRef, d *Diagnosis, res Result, outputFile, followup string, createdAt time.Time) FailedRecord {
	r := FailedRecord{
		RunID:          ref.RunID,
		StepID:         ref.StepID,
		Attempt:        ref.Attempt,
		Agent:          ref.Agent,
		SessionID:      ref.SessionID,
		Repairs:        append([]string(nil), res.Repairs...),
		OutputFile:     outputFile,
		FollowupPrompt: followup,
		CreatedAt:      createdAt.UTC(),
	}
	if d != nil {
		r.Class = d.Class
		r.Details = d.Details
		r.Provenance = d.Provenance
		r.Violations = append([]Violation(nil), d.Violations...)
		r.OutputSample = d.OutputSample
		r.Check = d.Check
	}
	return r
}

// MarshalJSON writes the record with empty lists as [] and the time in
// UTC (RFC 3339, with fractional seconds only when present).
func (r FailedRecord) MarshalJSON() ([]byte, error) {
	type plain FailedRecord // no methods: avoids recursion
	p := plain(r)
	if p.Violations == nil {
		p.Violations = []Violation{}
	}
	if p.Repairs == nil {
		p.Repairs = []string{}
	}
	p.CreatedAt = r.CreatedAt.UTC()
	return json.Marshal(p)
}
