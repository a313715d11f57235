package handoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StatusSuccess is the status of an accepted handoff's envelope.
const StatusSuccess = "success"

// Envelope wraps an accepted handoff as stored in the database and in
// .cadence/handoffs/RUN/STEP.json (SPEC §5.6): the step that produced it,
// the session, when, the validated value, and how it was obtained.
type Envelope struct {
	Component string           `json:"component"`
	SessionID string           `json:"session_id"`
	Timestamp time.Time        `json:"timestamp"`
	Status    string           `json:"status"`
	Data      json.RawMessage  `json:"data"`
	Metadata  EnvelopeMetadata `json:"metadata"`
}

// EnvelopeMetadata says how an accepted handoff was obtained.
type EnvelopeMetadata struct {
	// Attempts is the number of attempts the step used, this one included.
	Attempts int `json:"attempts"`
	// Repairs names the repairs applied to the accepted value.
	Repairs []string `json:"repairs"`
	// Provenance is where the value was found: the whole output, a json
	// or unlabelled fence, a handoff file, or prose (SPEC §18); empty
	// for an envelope that no agent's output produced (a gate, a map's
	// or a loop's own) and in one written before it was recorded.
	Provenance Provenance `json:"provenance,omitempty"`
	// PreviousErrors holds the Summary of each earlier failed attempt.
	PreviousErrors []string `json:"previous_errors"`
	// CostUSD and Turns accumulate over all of the step's attempts.
	CostUSD float64 `json:"cost_usd"`
	Turns   int     `json:"turns"`
}

// NewEnvelope wraps the accepted value data (compact JSON, as in
// Result.JSON) of step stepID.
func NewEnvelope(stepID, sessionID string, data []byte, meta EnvelopeMetadata, at time.Time) Envelope {
	return Envelope{
		Component: stepID,
		SessionID: sessionID,
		Timestamp: at.UTC(),
		Status:    StatusSuccess,
		Data:      json.RawMessage(append([]byte(nil), data...)),
		Metadata:  meta,
	}
}

// MarshalJSON writes the envelope with empty lists as [], a missing value
// as null and the timestamp in UTC.
func (e Envelope) MarshalJSON() ([]byte, error) {
	type plain Envelope // no methods: avoids recursion
	p := plain(e)
	p.Timestamp = e.Timestamp.UTC()
	if len(bytes.TrimSpace(p.Data)) == 0 {
		p.Data = json.RawMessage("null")
	}
	if p.Metadata.Repairs == nil {
		p.Metadata.Repairs = []string{}
	}
	if p.Metadata.PreviousErrors == nil {
		p.Metadata.PreviousErrors = []string{}
	}
	return json.Marshal(p)
}

// ErrBadEnvelope reports a stored envelope that cannot be used.
var ErrBadEnvelope = errors.New("invalid handoff envelope")

// ParseEnvelope decodes a stored envelope, as when resume adopts a handoff
// written before an interruption. It requires a component and data;
// unknown fields are ignored, so newer envelopes stay readable.
func ParseEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&e); err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrBadEnvelope, err)
	}
	if e.Component == "" {
		return Envelope{}, fmt.Errorf("%w: no component", ErrBadEnvelope)
	}
	if len(e.Data) == 0 {
		return Envelope{}, fmt.Errorf("%w: no data", ErrBadEnvelope)
	}
	return e, nil
}
