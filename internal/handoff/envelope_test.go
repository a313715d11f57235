package handoff

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestEnvelopeJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 3, 5, 0, time.FixedZone("EST", -5*3600))
	tests := []struct {
		golden string
		env    Envelope
	}{
		{"envelope.json", NewEnvelope("implement", "5b1e7c2a-1111-4c3d-9e8f-000000000001",
			[]byte(planJSON), EnvelopeMetadata{
				Attempts:       2,
				Repairs:        []string{"single_quotes"},
				PreviousErrors: []string{"schema: /success: expected boolean, got string"},
				CostUSD:        0.41,
				Turns:          12,
			}, at)},
		{"envelope_first_try.json", NewEnvelope("plan", "", []byte(`[1,2]`), EnvelopeMetadata{Attempts: 1}, at)},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got, err := json.Marshal(tt.env)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, got, tt.golden)

			back, err := ParseEnvelope(got)
			if err != nil {
				t.Fatalf("ParseEnvelope: %v", err)
			}
			if back.Component != tt.env.Component || !back.Timestamp.Equal(at) || string(back.Data) != string(tt.env.Data) {
				t.Errorf("round trip: got %+v, want %+v", back, tt.env)
			}
		})
	}
}

func TestParseEnvelopeRejects(t *testing.T) {
	tests := []struct{ name, text string }{
		{"not JSON", `{"component": `},
		{"no component", `{"status": "success", "data": {}}`},
		{"no data", `{"component": "plan", "status": "success"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseEnvelope([]byte(tt.text)); !errors.Is(err, ErrBadEnvelope) {
				t.Errorf("ParseEnvelope(%s) error = %v, want ErrBadEnvelope", tt.text, err)
			}
		})
	}
}

func TestEnvelopeWithoutDataIsNull(t *testing.T) {
	got, err := json.Marshal(Envelope{Component: "plan", Status: StatusSuccess})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"component":"plan","session_id":"","timestamp":"0001-01-01T00:00:00Z","status":"success","data":null,"metadata":{"attempts":0,"repairs":[],"previous_errors":[],"cost_usd":0,"turns":0}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
