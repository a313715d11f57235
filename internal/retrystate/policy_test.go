package retrystate

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := Policy{MaxAttempts: 3, Backoff: Exponential, Initial: 2 * time.Second, Multiplier: 2, Max: time.Minute, Jitter: FullJitter}
	tests := []struct {
		name   string
		change func(*Policy)
		field  string // "" when the policy is valid
	}{
		{"valid", func(*Policy) {}, ""},
		{"zero backoff and jitter", func(p *Policy) { p.Backoff, p.Jitter = "", "" }, ""},
		{"single attempt", func(p *Policy) { p.MaxAttempts = 1 }, ""},
		{"known classes", func(p *Policy) { p.On, p.Never = []string{"schema", "too_large"}, []string{"budget"} }, ""},
		{"check, as the workflow file names it", func(p *Policy) { p.On, p.Never = []string{"check"}, []string{"check", "auth"} }, ""},
		{"fixed ignores multiplier", func(p *Policy) { p.Backoff, p.Multiplier = Fixed, 0 }, ""},
		{"no attempts", func(p *Policy) { p.MaxAttempts = 0 }, "max_attempts"},
		{"negative initial", func(p *Policy) { p.Initial = -time.Second }, "initial"},
		{"negative max", func(p *Policy) { p.Max = -1 }, "max"},
		{"unknown backoff", func(p *Policy) { p.Backoff = "quadratic" }, "backoff"},
		{"multiplier below one", func(p *Policy) { p.Multiplier = 0.5 }, "multiplier"},
		{"multiplier NaN", func(p *Policy) { p.Multiplier = math.NaN() }, "multiplier"},
		{"multiplier infinite", func(p *Policy) { p.Multiplier = math.Inf(1) }, "multiplier"},
		{"unknown jitter", func(p *Policy) { p.Jitter = "half" }, "jitter"},
		{"misspelt on", func(p *Policy) { p.On = []string{"timout"} }, "on"},
		{"terminal on", func(p *Policy) { p.On = []string{"help"} }, "on"},
		{"misspelt never", func(p *Policy) { p.Never = []string{"Schema"} }, "never"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid
			tt.change(&p)
			err := p.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate() = %v, want an error matching ErrInvalidPolicy", err)
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Field != tt.field {
				t.Fatalf("Validate() = %v, want a PolicyError for field %q", err, tt.field)
			}
			if prefix := "retry." + tt.field + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %q", err.Error(), prefix)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	defaults := Policy{MaxAttempts: 3}
	onlySchema := Policy{MaxAttempts: 3, On: []string{"schema", "too_large"}}
	never := Policy{MaxAttempts: 3, Never: []string{"timeout"}}
	both := Policy{MaxAttempts: 3, On: []string{"schema", "timeout"}, Never: []string{"timeout"}}
	terminalOn := Policy{MaxAttempts: 3, On: []string{"budget", "help"}}
	configOn := Policy{MaxAttempts: 3, On: []string{"config"}}
	tests := []struct {
		name  string
		p     Policy
		class string
		want  bool
	}{
		{"default schema", defaults, "schema", true},
		{"default transient", defaults, "transient", true},
		{"default interrupted", defaults, "interrupted", true},
		{"default unknown class", defaults, "some_new_class", true},
		{"default too_large", defaults, "too_large", false},
		{"default budget", defaults, "budget", false},
		{"default config", defaults, "config", false},
		{"default help", defaults, "help", false},
		{"success is not retried", defaults, "", false},
		{"on listed", onlySchema, "schema", true},
		{"on lifts too_large", onlySchema, "too_large", true},
		{"on unlisted", onlySchema, "transient", false},
		{"never listed", never, "timeout", false},
		{"never others default", never, "stuck", true},
		{"never others still skip too_large", never, "too_large", false},
		{"never wins over on", both, "timeout", false},
		{"on with never", both, "schema", true},
		{"budget terminal despite on", terminalOn, "budget", false},
		{"help terminal despite on", terminalOn, "help", false},
		{"config terminal despite on", configOn, "config", false},
		{"default auth", defaults, "auth", false},
		{"auth terminal despite on", Policy{MaxAttempts: 3, On: []string{"auth"}}, "auth", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Retryable(tt.class); got != tt.want {
				t.Errorf("Retryable(%q) = %v, want %v", tt.class, got, tt.want)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	p := Policy{MaxAttempts: 3}
	for used, want := range []bool{false, false, false, true, true} {
		if got := p.Exhausted(used); got != want {
			t.Errorf("MaxAttempts 3: Exhausted(%d) = %v, want %v", used, got, want)
		}
	}
}
