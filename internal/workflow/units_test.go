package workflow

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2s", 2 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"250ms", 250 * time.Millisecond, true},
		{"0", 0, true},
		{"0s", 0, true},
		{"30", 0, false},
		{"-2s", 0, false},
		{"2 s", 0, false},
		{"two seconds", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true},
		{"8MiB", 8 * 1024 * 1024, true},
		{"512KiB", 512 * 1024, true},
		{"1MB", 1000 * 1000, true},
		{"2GiB", 2 * 1024 * 1024 * 1024, true},
		{"3KB", 3000, true},
		{"10B", 10, true},
		{"8 MiB", 0, false},
		{"8mib", 0, false},
		{"1.5MiB", 0, false},
		{"-1", 0, false},
		{"MiB", 0, false},
		{"", 0, false},
		{"99999999999999GiB", 0, false},
		{"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestRetryConsistency: keys merged from defaults and a step are checked
// against each other, and the error points at the key that was written.
func TestRetryConsistency(t *testing.T) {
	tests := []struct {
		name, retry, want string
	}{
		{"max below initial", "{initial: 10s, max: 5s}", "wf.yaml:4:61: steps[0].retry.max: max 5s is shorter than initial 10s"},
		{"initial above default max", "{initial: 2m}", "wf.yaml:4:51: steps[0].retry.initial: max 1m0s is shorter than initial 2m0s"},
		{"on and never overlap", "{on: [too_large], never: [too_large, budget]}", "wf.yaml:4:66: steps[0].retry.never: class too_large is in both retry.on and retry.never"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nagents: {x: {preset: claude}}\nsteps:\n  - {id: a, agent: x, prompt: a, retry: " + tt.retry + "}\n"
			_, errs := build([]byte(src), "wf.yaml", "")
			if errs.Error() != tt.want {
				t.Errorf("errors:\n%v\nwant:\n%s", errs, tt.want)
			}
		})
	}
}
