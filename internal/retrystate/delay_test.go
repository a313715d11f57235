package retrystate

import (
	"fmt"
	"math"
	"testing"
	"time"
)

const sec = time.Second

// constant returns an rnd that always draws r.
func constant(r float64) func() float64 { return func() float64 { return r } }

func TestDelayBackoffByJitter(t *testing.T) {
	// Initial 2s, multiplier 3, no cap; rnd always draws 0.25, so full
	// jitter yields d/4 and equal jitter d/2 + d/8 = 5d/8.
	tests := []struct {
		backoff Backoff
		jitter  Jitter
		want    [4]time.Duration // after 1, 2, 3, 4 failures
	}{
		{Fixed, NoJitter, [4]time.Duration{2 * sec, 2 * sec, 2 * sec, 2 * sec}},
		{Fixed, FullJitter, [4]time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{Fixed, EqualJitter, [4]time.Duration{1250 * time.Millisecond, 1250 * time.Millisecond, 1250 * time.Millisecond, 1250 * time.Millisecond}},
		{Linear, NoJitter, [4]time.Duration{2 * sec, 4 * sec, 6 * sec, 8 * sec}},
		{Linear, FullJitter, [4]time.Duration{500 * time.Millisecond, 1 * sec, 1500 * time.Millisecond, 2 * sec}},
		{Linear, EqualJitter, [4]time.Duration{1250 * time.Millisecond, 2500 * time.Millisecond, 3750 * time.Millisecond, 5 * sec}},
		{Exponential, NoJitter, [4]time.Duration{2 * sec, 6 * sec, 18 * sec, 54 * sec}},
		{Exponential, FullJitter, [4]time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 4500 * time.Millisecond, 13500 * time.Millisecond}},
		{Exponential, EqualJitter, [4]time.Duration{1250 * time.Millisecond, 3750 * time.Millisecond, 11250 * time.Millisecond, 33750 * time.Millisecond}},
		{"", "", [4]time.Duration{2 * sec, 2 * sec, 2 * sec, 2 * sec}}, // zero values: fixed, no jitter
	}
	for _, tt := range tests {
		p := Policy{MaxAttempts: 5, Backoff: tt.backoff, Initial: 2 * sec, Multiplier: 3, Jitter: tt.jitter}
		for i, want := range tt.want {
			n := i + 1
			t.Run(fmt.Sprintf("%s/%s/n=%d", tt.backoff, tt.jitter, n), func(t *testing.T) {
				if got := p.Delay(n, constant(0.25)); got != want {
					t.Errorf("Delay(%d) = %v, want %v", n, got, want)
				}
			})
		}
	}
}

func TestDelayJitterBounds(t *testing.T) {
	p := Policy{Backoff: Fixed, Initial: 8 * sec}
	tests := []struct {
		jitter Jitter
		r      float64
		want   time.Duration
	}{
		{FullJitter, 0, 0},
		{FullJitter, 0.5, 4 * sec},
		{FullJitter, 1, 8 * sec}, // the closed upper bound of [0, d]
		{FullJitter, -3, 0},      // out-of-range draws are clamped
		{FullJitter, 7, 8 * sec},
		{FullJitter, math.NaN(), 0},
		{EqualJitter, 0, 4 * sec},
		{EqualJitter, 0.5, 6 * sec},
		{EqualJitter, 1, 8 * sec},
		{NoJitter, 0.5, 8 * sec},
	}
	for _, tt := range tests {
		p.Jitter = tt.jitter
		if got := p.Delay(1, constant(tt.r)); got != tt.want {
			t.Errorf("%s jitter, draw %v: Delay = %v, want %v", tt.jitter, tt.r, got, tt.want)
		}
	}
}

func TestDelayNilRandStaysInRange(t *testing.T) {
	p := Policy{Backoff: Fixed, Initial: 10 * sec, Jitter: EqualJitter}
	for range 100 {
		if d := p.Delay(1, nil); d < 5*sec || d > 10*sec {
			t.Fatalf("equal jitter of 10s drew %v, want within [5s, 10s]", d)
		}
	}
}

func TestBaseDelayCapsAndOverflow(t *testing.T) {
	longest := time.Duration(math.MaxInt64)
	tests := []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"exponential below cap", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 3, Max: 10 * sec}, 2, 6 * sec},
		{"exponential reaches cap", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 3, Max: 10 * sec}, 3, 10 * sec},
		{"linear reaches cap", Policy{Backoff: Linear, Initial: 2 * sec, Max: 5 * sec}, 3, 5 * sec},
		{"fixed above cap", Policy{Backoff: Fixed, Initial: 2 * sec, Max: sec}, 1, sec},
		{"multiplier one stays flat", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 1}, 50, 2 * sec},
		{"exponential n=1000 capped", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 2, Max: time.Minute}, 1000, time.Minute},
		{"exponential n=1000 uncapped saturates", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 2}, 1000, longest},
		{"linear n=1000", Policy{Backoff: Linear, Initial: 2 * sec}, 1000, 2000 * sec},
		{"linear huge n saturates", Policy{Backoff: Linear, Initial: 2 * sec}, math.MaxInt, longest},
		{"linear huge n capped", Policy{Backoff: Linear, Initial: 2 * sec, Max: time.Hour}, math.MaxInt, time.Hour},
		{"n=0 taken as 1", Policy{Backoff: Linear, Initial: 2 * sec}, 0, 2 * sec},
		{"negative n taken as 1", Policy{Backoff: Exponential, Initial: 2 * sec, Multiplier: 2}, -5, 2 * sec},
		{"zero initial", Policy{Backoff: Exponential, Multiplier: 2}, 1000, 0},
		{"invalid negative initial gives 0", Policy{Backoff: Fixed, Initial: -sec}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.BaseDelay(tt.n); got != tt.want {
				t.Errorf("BaseDelay(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestDelayJitterOnSaturatedBase(t *testing.T) {
	p := Policy{Backoff: Exponential, Initial: sec, Multiplier: 10, Jitter: FullJitter}
	for _, r := range []float64{0.5, 0.999999} {
		got := p.Delay(1000, constant(r))
		if got <= 0 {
			t.Errorf("full jitter %v of a saturated delay = %v, want positive", r, got)
		}
	}
	p.Jitter = EqualJitter
	if got := p.Delay(1000, constant(0.999999)); got < time.Duration(math.MaxInt64)/2 {
		t.Errorf("equal jitter of a saturated delay = %v, want at least half the maximum", got)
	}
}
