package circuit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRandomHistories drives breakers through long random histories, with a
// wall clock that mostly moves forwards but sometimes jumps back, and checks
// after every step the properties the run loop relies on:
//
//   - Generation never decreases; it grows by one exactly when the state
//     changes or on Reset.
//   - Every change of state is allowed by Transition.
//   - OpenUntil never moves earlier, except through Reset.
//   - Field invariants of each state hold.
func TestRandomHistories(t *testing.T) {
	configs := []Config{
		{Failures: 1, OpenFor: time.Second, HalfOpenCalls: 1},
		{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1},
		{Failures: 2, OpenFor: 30 * time.Second, HalfOpenCalls: 3},
	}
	seen := map[[2]State]int{} // state changes observed, to show the histories reach them all
	for seed := range uint64(6) {
		cfg := configs[seed%uint64(len(configs))]
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		b := New("claude")
		now := t0
		var admitted []int64 // generations of attempts admitted and not yet recorded

		for i := range 5000 {
			switch rng.IntN(10) {
			case 0:
				now = now.Add(-time.Duration(rng.IntN(600)) * time.Second) // wall clock jumps back
			default:
				now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
			}

			prev := b
			var op string
			switch r := rng.IntN(100); {
			case r < 35:
				op = "acquire"
				next, gen, ok, wait := Acquire(b, cfg, now)
				if ok {
					admitted = append(admitted, gen)
				} else if !wait.After(now) {
					t.Fatalf("seed %d step %d: refused with wait %v not after now %v", seed, i, wait, now)
				}
				b = next
			case r < 85 && len(admitted) > 0:
				op = "record"
				k := rng.IntN(len(admitted))
				gen := admitted[k]
				admitted = append(admitted[:k], admitted[k+1:]...)
				b = Record(b, cfg, gen, Outcome(1+rng.IntN(3)), now)
			case r < 92:
				op = "stale"
				b = Record(b, cfg, b.Generation-1-int64(rng.IntN(3)), Outcome(1+rng.IntN(3)), now)
				if b != prev {
					t.Fatalf("seed %d step %d: stale result changed %+v into %+v", seed, i, prev, b)
				}
			case r < 97:
				op = "force-open"
				b = OpenUntilTime(b, now.Add(time.Duration(rng.IntN(3600)-600)*time.Second), now)
			default:
				op = "reset"
				b = Reset(b, now)
				admitted = admitted[:0]
			}

			if prev.State != b.State {
				seen[[2]State{prev.State, b.State}]++
			}
			checkStep(t, cfg, prev, b, op == "reset")
			if t.Failed() {
				t.Fatalf("seed %d step %d (%s): %+v -> %+v", seed, i, op, prev, b)
			}
		}
	}
	for _, pair := range [][2]State{{Closed, Open}, {Open, HalfOpen}, {Open, Closed}, {HalfOpen, Open}, {HalfOpen, Closed}} {
		if seen[pair] == 0 {
			t.Errorf("random histories never went from %s to %s; the generator needs adjusting", pair[0], pair[1])
		}
	}
}

func checkStep(t *testing.T, cfg Config, prev, next Breaker, reset bool) {
	t.Helper()
	changed := prev.State != next.State
	wantGen := prev.Generation
	if changed || reset {
		wantGen++
	}
	if next.Generation != wantGen {
		t.Errorf("generation %d -> %d, want %d", prev.Generation, next.Generation, wantGen)
	}
	if changed {
		if err := Transition(prev.State, next.State); err != nil {
			t.Errorf("state change not in the table: %v", err)
		}
	}
	if !reset && next.OpenUntil.Before(prev.OpenUntil) {
		t.Errorf("OpenUntil moved earlier: %v -> %v", prev.OpenUntil, next.OpenUntil)
	}
	if next.Agent != prev.Agent {
		t.Errorf("agent changed: %q -> %q", prev.Agent, next.Agent)
	}
	switch next.State {
	case Closed:
		if !next.OpenedAt.IsZero() || next.Trials != 0 || next.Successes != 0 || next.Failures < 0 || next.Failures >= cfg.Failures {
			t.Errorf("closed breaker with bad fields: %+v", next)
		}
	case Open:
		if next.OpenUntil.IsZero() || next.OpenedAt.IsZero() || next.Trials != 0 || next.Successes != 0 {
			t.Errorf("open breaker with bad fields: %+v", next)
		}
	case HalfOpen:
		if next.Trials > cfg.HalfOpenCalls || next.Successes > next.Trials || next.Successes >= cfg.HalfOpenCalls || next.Failures != 0 {
			t.Errorf("half-open breaker with bad fields: %+v", next)
		}
	default:
		t.Errorf("invalid state %q", next.State)
	}
}
