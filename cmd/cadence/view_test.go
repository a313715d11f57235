package main

import (
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/history"
)

// TestClean shows what the view makes of hostile agent text before it
// quotes it on a terminal.
func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"plain", "unknown field", "unknown field", 160},
		{"colour", "\x1b[1;31merror\x1b[0m: x", "error: x", 160},
		{"osc title with BEL", "a\x1b]0;pwned\x07b", "ab", 160},
		{"osc link with ST", "\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\", "link", 160},
		{"cursor moves and clear", "\x1b[2J\x1b[Hx\x1b[10;10Hy", "xy", 160},
		{"lone escape", "a\x1bcb", "ab", 160},
		{"controls", "a\rb\x00c\x08d\x7f", "abcd", 160},
		{"c1 control", "a\u009bb", "ab", 160},
		{"bidi override", "a\u202eb", "ab", 160},
		{"invalid utf-8", "a\xffb", "ab", 160},
		{"tab", "a\tb", "a b", 160},
		{"cut", strings.Repeat("é", 10), strings.Repeat("é", 4) + "…", 4},
		{"exactly n", "abcd", "abcd", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clean(tc.in, tc.n); got != tc.want {
				t.Errorf("clean(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}

// TestHumanLine shows lines a newcomer met with noise in them: no "pid 0"
// for an agent without a process of its own, no "interrupted:
// interrupted", no empty "()" after a run without a name.
func TestHumanLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   history.Event
		want string
	}{
		{"no pid", history.Event{Type: history.EventAttemptStarted, Step: "ask", Attempt: 1, Kind: "initial", Counted: 1, MaxAttempts: 3, Agent: "gpt"},
			"ask          attempt 1 started (initial, 1 of 3, agent gpt)"},
		{"pid", history.Event{Type: history.EventAttemptStarted, Step: "ask", Attempt: 1, Kind: "initial", Counted: 1, MaxAttempts: 3, Agent: "sim", PID: 42},
			"ask          attempt 1 started (initial, 1 of 3, agent sim, pid 42)"},
		{"help round without pid", history.Event{Type: history.EventAttemptStarted, Step: "ask", Attempt: 2, Kind: "help", HelpRound: 1, Agent: "gpt"},
			"ask          attempt 2 started (help round 1, advisor gpt)"},
		{"interrupted", history.Event{Type: history.EventRunInterrupted, RunID: "r1", Message: "interrupted"},
			"run r1 interrupted"},
		{"interrupted with a reason", history.Event{Type: history.EventRunInterrupted, RunID: "r1", Message: "step one waits until 10:00"},
			"run r1 interrupted: step one waits until 10:00"},
		{"run without a name", history.Event{Type: history.EventRunStarted, RunID: "r1"}, "run r1 started"},
		{"run with a name", history.Event{Type: history.EventRunResumed, RunID: "r1", Message: "calc"}, "run r1 resumed (calc)"},
		{"iteration started", history.Event{Type: history.EventIterationStarted, Step: "implement", Attempt: 2},
			"implement    iteration 2 started"},
		{"iteration ended", history.Event{Type: history.EventIterationEnded, Step: "implement", Attempt: 2,
			Message: "until steps.review.output.approved is false"},
			"implement    iteration 2: until steps.review.output.approved is false"},
		{"gate waiting", history.Event{Type: history.EventGateWaiting, Step: "implement/2/gate", Message: "Ship it?\x1b[31m\nanswer with: …"},
			"implement/2/gate WAITING FOR APPROVAL\n    Ship it?\n    answer with: …"},
		{"gate decided", history.Event{Type: history.EventGateDecided, Step: "merge-gate", Status: "rejected",
			Message: "by bob@laptop: tests \x1b[31mred\x1b[0m\nsee CI"}, "merge-gate   rejected (by bob@laptop: tests red see CI)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := humanLine(tc.ev); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
