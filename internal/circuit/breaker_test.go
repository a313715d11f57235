package circuit

import (
	"fmt"
	"testing"
	"time"
)

var (
	t0  = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	cfg = Config{Failures: 3, OpenFor: 2 * time.Minute, HalfOpenCalls: 1}
)

// at returns t0 shifted by d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// result is everything an operation on a breaker returns.
type result struct {
	b    Breaker
	gen  int64
	ok   bool
	wait time.Time
}

// event is one thing that can happen to a breaker at t0.
type event struct {
	name string
	do   func(Breaker) result
}

func record(o Outcome) func(Breaker) result {
	return func(b Breaker) result { return result{b: Record(b, cfg, b.Generation, o, t0)} }
}

func acquireAt(now time.Time) func(Breaker) result {
	return func(b Breaker) result {
		next, gen, ok, wait := Acquire(b, cfg, now)
		return result{next, gen, ok, wait}
	}
}

var events = map[string]event{
	"success":               {"success", record(Success)},
	"failure":               {"failure", record(Failure)},
	"neutral":               {"neutral", record(Neutral)},
	"acquire-before-expiry": {"acquire-before-expiry", acquireAt(t0)},
	"acquire-after-expiry":  {"acquire-after-expiry", acquireAt(at(5 * time.Minute))},
	"stale-generation": {"stale-generation", func(b Breaker) result {
		return result{b: Record(b, cfg, b.Generation-1, Failure, t0)}
	}},
	"reset":      {"reset", func(b Breaker) result { return result{b: Reset(b, t0)} }},
	"force-open": {"force-open", func(b Breaker) result { return result{b: OpenUntilTime(b, at(time.Hour), t0)} }},
}

// Fixtures: one breaker in each state. The closed one is one failure short
// of opening; the open one expires a minute after t0; the half-open one has
// its single trial in flight.
var (
	closedB = Breaker{Agent: "claude", State: Closed, Failures: 2, Generation: 4}
	openB   = Breaker{Agent: "claude", State: Open, Failures: 3, Generation: 5,
		OpenedAt: at(-time.Minute), OpenUntil: at(time.Minute)}
	halfB = Breaker{Agent: "claude", State: HalfOpen, Generation: 6,
		OpenedAt: at(-3 * time.Minute), OpenUntil: at(-time.Minute), Trials: 1}
)

func TestEveryStateAndEvent(t *testing.T) {
	admitted := func(b Breaker) result { return result{b: b, gen: b.Generation, ok: true} }
	unchanged := func(b Breaker) result { return result{b: b} }
	tests := []struct {
		from  Breaker
		event string
		want  result
	}{
		// closed
		{closedB, "success", unchanged(Breaker{Agent: "claude", State: Closed, Failures: 0, Generation: 4})},
		{closedB, "failure", unchanged(Breaker{Agent: "claude", State: Open, Failures: 3, Generation: 5, OpenedAt: t0, OpenUntil: at(2 * time.Minute)})},
		{closedB, "neutral", unchanged(closedB)},
		{closedB, "acquire-before-expiry", admitted(closedB)},
		{closedB, "acquire-after-expiry", admitted(closedB)},
		{closedB, "stale-generation", unchanged(closedB)},
		{closedB, "reset", unchanged(Breaker{Agent: "claude", State: Closed, Generation: 5})},
		{closedB, "force-open", unchanged(Breaker{Agent: "claude", State: Open, Failures: 2, Generation: 5, OpenedAt: t0, OpenUntil: at(time.Hour)})},

		// open: nothing is admitted, so every result is stale
		{openB, "success", unchanged(openB)},
		{openB, "failure", unchanged(openB)},
		{openB, "neutral", unchanged(openB)},
		{openB, "acquire-before-expiry", result{b: openB, gen: 5, ok: false, wait: at(time.Minute)}},
		{openB, "acquire-after-expiry", result{b: Breaker{Agent: "claude", State: HalfOpen, Generation: 6, OpenedAt: at(-time.Minute), OpenUntil: at(time.Minute), Trials: 1}, gen: 6, ok: true}},
		{openB, "stale-generation", unchanged(openB)},
		{openB, "reset", unchanged(Breaker{Agent: "claude", State: Closed, Generation: 6})},
		{openB, "force-open", unchanged(Breaker{Agent: "claude", State: Open, Failures: 3, Generation: 5, OpenedAt: at(-time.Minute), OpenUntil: at(time.Hour)})},

		// half-open with its one trial in flight
		{halfB, "success", unchanged(Breaker{Agent: "claude", State: Closed, Generation: 7, OpenUntil: at(-time.Minute)})},
		{halfB, "failure", unchanged(Breaker{Agent: "claude", State: Open, Failures: 1, Generation: 7, OpenedAt: t0, OpenUntil: at(2 * time.Minute)})},
		{halfB, "neutral", unchanged(Breaker{Agent: "claude", State: HalfOpen, Generation: 6, OpenedAt: at(-3 * time.Minute), OpenUntil: at(-time.Minute), Trials: 0})},
		{halfB, "acquire-before-expiry", result{b: halfB, gen: 6, ok: false, wait: at(BusyRetry)}},
		{halfB, "acquire-after-expiry", result{b: halfB, gen: 6, ok: false, wait: at(5*time.Minute + BusyRetry)}},
		{halfB, "stale-generation", unchanged(halfB)},
		{halfB, "reset", unchanged(Breaker{Agent: "claude", State: Closed, Generation: 7})},
		{halfB, "force-open", unchanged(Breaker{Agent: "claude", State: Open, Generation: 7, OpenedAt: t0, OpenUntil: at(time.Hour)})},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		ev, found := events[tt.event]
		if !found {
			t.Fatalf("no event %q", tt.event)
		}
		name := fmt.Sprintf("%s/%s", tt.from.State, ev.name)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			got := ev.do(tt.from)
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if want := 3 * len(events); len(seen) != want {
		t.Errorf("table covers %d (state, event) pairs, want all %d", len(seen), want)
	}
}

func TestClosedOpensAfterConsecutiveFailures(t *testing.T) {
	classes := []struct {
		class    string
		failures int // Failures after recording it
		state    State
	}{
		{"transient", 1, Closed},
		{"timeout", 2, Closed},
		{"schema", 0, Closed}, // a handoff failure: the provider answered
		{"exit_nonzero", 1, Closed},
		{"too_large", 1, Closed}, // neutral: neither counts nor resets
		{"interrupted", 1, Closed},
		{"stuck", 2, Closed},
		{"transient", 3, Open},
	}
	b := New("codex")
	for i, c := range classes {
		next, gen, ok, _ := Acquire(b, cfg, at(time.Duration(i)*time.Second))
		if !ok {
			t.Fatalf("attempt %d refused by %+v", i+1, b)
		}
		b = Record(next, cfg, gen, OutcomeFor(c.class), at(time.Duration(i)*time.Second))
		if b.Failures != c.failures || b.State != c.state {
			t.Fatalf("after %s: state %s, failures %d; want %s, %d", c.class, b.State, b.Failures, c.state, c.failures)
		}
	}
	if want := at(7*time.Second + cfg.OpenFor); !b.OpenUntil.Equal(want) {
		t.Errorf("OpenUntil = %v, want %v (failure time + OpenFor)", b.OpenUntil, want)
	}
}

func TestHalfOpenNeedsEveryTrialToSucceed(t *testing.T) {
	cfg := Config{Failures: 1, OpenFor: time.Minute, HalfOpenCalls: 2}
	b := Record(New("gemini"), cfg, 0, Failure, t0)
	if b.State != Open {
		t.Fatalf("one failure with Failures 1: state %s, want open", b.State)
	}
	later := at(2 * time.Minute)

	b, g1, ok1, _ := Acquire(b, cfg, later)
	b, g2, ok2, _ := Acquire(b, cfg, later)
	_, _, ok3, wait := Acquire(b, cfg, later)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("trials admitted = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if !wait.Equal(later.Add(BusyRetry)) {
		t.Errorf("busy wait until %v, want %v", wait, later.Add(BusyRetry))
	}
	if g1 != g2 || b.Trials != 2 {
		t.Fatalf("trials ran under generations %d and %d with Trials %d; want one generation, 2 trials", g1, g2, b.Trials)
	}

	b = Record(b, cfg, g1, Success, later)
	if b.State != HalfOpen || b.Successes != 1 {
		t.Fatalf("after one of two successes: %+v, want half-open with 1 success", b)
	}
	b = Record(b, cfg, g2, Success, later)
	if b.State != Closed || b.Generation != g1+1 {
		t.Fatalf("after two of two successes: %+v, want closed in generation %d", b, g1+1)
	}
}

func TestHalfOpenNeutralReturnsTrialSlot(t *testing.T) {
	b, gen, _, _ := Acquire(openB, cfg, at(time.Hour))
	b = Record(b, cfg, gen, OutcomeFor("budget"), at(time.Hour))
	next, gen2, ok, _ := Acquire(b, cfg, at(time.Hour))
	if !ok || gen2 != gen || next.State != HalfOpen {
		t.Fatalf("after a neutral trial: ok %v, gen %d, %+v; want another trial in generation %d", ok, gen2, next, gen)
	}
}

// A crash during a half-open trial: the breaker committed with the attempt
// row says half-open with one trial in flight. Resume settles the attempt as
// interrupted and records a Failure under its generation.
func TestCrashDuringHalfOpenTrial(t *testing.T) {
	stored, gen, ok, _ := Acquire(openB, cfg, at(2*time.Minute))
	if !ok || stored.State != HalfOpen {
		t.Fatalf("trial not admitted: %+v", stored)
	}

	// After restart the slot is still taken: no second trial.
	if _, _, ok, _ := Acquire(stored, cfg, at(10*time.Minute)); ok {
		t.Fatal("a second trial was admitted while the crashed one was unsettled")
	}

	resumedAt := at(10 * time.Minute)
	settled := Record(stored, cfg, gen, Failure, resumedAt)
	if settled.State != Open || settled.Generation != gen+1 || !settled.OpenUntil.Equal(resumedAt.Add(cfg.OpenFor)) {
		t.Fatalf("settled crash: %+v; want open in generation %d until %v", settled, gen+1, resumedAt.Add(cfg.OpenFor))
	}
	// The crashed trial's result, if it turned up late, is stale.
	if late := Record(settled, cfg, gen, Success, resumedAt); late != settled {
		t.Errorf("late success of the crashed trial changed %+v into %+v", settled, late)
	}
	if _, _, ok, wait := Acquire(settled, cfg, resumedAt.Add(time.Minute)); ok || !wait.Equal(settled.OpenUntil) {
		t.Errorf("Acquire after re-opening: ok %v, wait %v; want refused until %v", ok, wait, settled.OpenUntil)
	}
}

// A result from an attempt admitted before the breaker changed state does
// not count in the new state.
func TestResultFromOlderGenerationIsIgnored(t *testing.T) {
	b, gen, _, _ := Acquire(New("claude"), cfg, t0)
	b = Reset(b, t0)
	for _, o := range []Outcome{Success, Failure, Neutral} {
		if got := Record(b, cfg, gen, o, t0); got != b {
			t.Errorf("%s from before a reset changed %+v into %+v", o, b, got)
		}
	}
}

func TestBackwardsClockNeverShortensOpening(t *testing.T) {
	// Open now until t0+2m; the wall clock then jumps an hour back.
	b := Record(closedB, cfg, closedB.Generation, Failure, t0)
	back := at(-time.Hour)
	if _, _, ok, wait := Acquire(b, cfg, back.Add(5*time.Minute)); ok || !wait.Equal(at(2*time.Minute)) {
		t.Errorf("after a backwards jump: ok %v, wait %v; want refused until %v", ok, wait, at(2*time.Minute))
	}

	// Closed again by a trial, then re-opened under the earlier clock: the
	// stored OpenUntil is later than back+OpenFor and stays.
	b, gen, _, _ := Acquire(b, cfg, at(3*time.Minute))
	b = Record(b, cfg, gen, Success, at(3*time.Minute))
	for range cfg.Failures {
		b = Record(b, cfg, b.Generation, Failure, back)
	}
	if b.State != Open || !b.OpenUntil.Equal(at(2*time.Minute)) {
		t.Errorf("re-opened under an earlier clock: %+v; want open until %v", b, at(2*time.Minute))
	}

	// A usage limit that resets earlier than the stored deadline keeps it.
	if got := OpenUntilTime(b, back, back); !got.OpenUntil.Equal(at(2 * time.Minute)) {
		t.Errorf("OpenUntilTime moved OpenUntil from %v to %v", b.OpenUntil, got.OpenUntil)
	}
}

func TestZeroAndUnknownStateReadAsClosed(t *testing.T) {
	for _, s := range []State{"", "melted"} {
		b := Breaker{Agent: "x", State: s, Generation: 2}
		next, gen, ok, _ := Acquire(b, Config{}, t0)
		if !ok || gen != 2 || next.State != Closed {
			t.Errorf("state %q: Acquire = %+v, %d, %v; want admitted as closed", s, next, gen, ok)
		}
		if got := Record(b, Config{}, 2, Failure, t0); got.State != Closed || got.Failures != 1 {
			t.Errorf("state %q: Record(Failure) = %+v; want closed with 1 failure", s, got)
		}
	}
}

func TestTimesAreUTC(t *testing.T) {
	zone := time.FixedZone("X", 7*3600)
	b := OpenUntilTime(New("a"), at(time.Hour).In(zone), t0.In(zone))
	if b.OpenedAt.Location() != time.UTC || b.OpenUntil.Location() != time.UTC {
		t.Errorf("times not in UTC: opened %v, until %v", b.OpenedAt, b.OpenUntil)
	}
	b = Record(New("a"), Config{Failures: 1}, 0, Failure, t0.In(zone))
	if b.OpenedAt.Location() != time.UTC || b.OpenUntil.Location() != time.UTC {
		t.Errorf("times not in UTC: opened %v, until %v", b.OpenedAt, b.OpenUntil)
	}
}
