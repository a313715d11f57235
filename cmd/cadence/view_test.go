package main

import (
	"encoding/json"
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
		// A map item's key and an item's errors are the agent's.
		{"hostile item key", history.Event{Type: history.EventAttemptStarted, Step: "fix", Item: "\x1b]0;pwned\x07a\u009b2J", Attempt: 1,
			Kind: "initial", Counted: 1, MaxAttempts: 1, Agent: "sim"},
			"fix[a2J]     attempt 1 started (initial, 1 of 1, agent sim)"},
		{"hostile dead item", history.Event{Type: history.EventItemDead, Step: "fix", Item: "b\x07", Message: "sent to the dead-letter queue",
			Error: "schema: \x1b[2Jgot: \x1b]8;;http://e\x1b\\x\x1b]8;;\x1b\\"},
			"fix[b]       DEAD: sent to the dead-letter queue: schema: got: x"},
		{"hostile step failure", history.Event{Type: history.EventStepFailed, Step: "fix", Message: "1 dead item: \x1bc\u0085k"},
			"fix          FAILED: 1 dead item: k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := humanLine(tc.ev); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCleanLinesKeepsIndentation: a diagnosis or a prompt keeps its lines
// and their indentation, each line cleaned.
func TestCleanLinesKeepsIndentation(t *testing.T) {
	in := "violations:\n  /a: \x1b[31mbad\x1b[0m\n\t/b:\x07 worse\n"
	want := "violations:\n  /a: bad\n /b: worse"
	if got := cleanLines(in); got != want {
		t.Errorf("cleanLines(%q) = %q, want %q", in, got, want)
	}
}

// TestJSONSafe: JSON written for a terminal has DEL and the C1 controls as
// \u escapes, and decodes to the same value.
func TestJSONSafe(t *testing.T) {
	for _, v := range []string{"plain", "csi \u009b2J", "nel \u0085 del \x7f", "é ü \u00a0 €", "esc \x1b bel \x07"} {
		var b strings.Builder
		if err := json.NewEncoder(jsonSafe{&b}).Encode(v); err != nil {
			t.Fatal(err)
		}
		if at, r, ok := terminalUnsafe(strings.TrimSuffix(b.String(), "\n")); !ok {
			t.Errorf("%q written as %q: %U at %d", v, b.String(), r, at)
		}
		var back string
		if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back != v {
			t.Errorf("%q written as %q reads back as %q (%v)", v, b.String(), back, err)
		}
	}
}
