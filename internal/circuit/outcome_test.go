package circuit

import (
	"testing"
	"time"
)

func TestOutcomeFor(t *testing.T) {
	tests := []struct {
		class string
		want  Outcome
	}{
		{"transient", Failure},
		{"exit_nonzero", Failure},
		{"timeout", Failure},
		{"stuck", Failure},
		{"", Success},
		{"missing", Success},
		{"empty", Success},
		{"invalid_json", Success},
		{"truncated", Success},
		{"schema", Success},
		{"check", Success},
		{"interrupted", Neutral},
		{"budget", Neutral},
		{"help", Neutral},
		{"too_large", Neutral},
		{"config", Neutral},
		{"not_a_class", Neutral},
	}
	for _, tt := range tests {
		if got := OutcomeFor(tt.class); got != tt.want {
			t.Errorf("OutcomeFor(%q) = %s, want %s", tt.class, got, tt.want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Success: "success", Failure: "failure", Neutral: "neutral", 0: "invalid", 9: "invalid"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestInvalidOutcomeChangesNothing(t *testing.T) {
	for _, b := range []Breaker{closedB, openB, halfB} {
		if got := Record(b, cfg, b.Generation, Outcome(0), t0); got != b {
			t.Errorf("zero Outcome changed %+v into %+v", b, got)
		}
	}
}

func TestConfigNormalize(t *testing.T) {
	tests := []struct {
		in, want Config
	}{
		{Config{}, Config{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1}},
		{Config{Failures: -1, OpenFor: -time.Second, HalfOpenCalls: -2}, Config{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1}},
		{Config{Failures: 5, OpenFor: time.Hour, HalfOpenCalls: 2}, Config{Failures: 5, OpenFor: time.Hour, HalfOpenCalls: 2}},
		{Config{Failures: 1}, Config{Failures: 1, OpenFor: 2 * time.Minute, HalfOpenCalls: 1}},
	}
	for _, tt := range tests {
		if got := tt.in.Normalize(); got != tt.want {
			t.Errorf("%+v.Normalize() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
