package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cadence-dev/cadence/internal/history"
)

// hostileKeys are the keys an agent gives the items of a map step: a
// window title (OSC ended by BEL), a screen clear and cursor move (CSI)
// with a C1 CSI, a bell, a C1 control and a terminal reset.
var hostileKeys = []string{"\x1b]0;pwned\x07one", "two\x1b[2J\x1b[H\u009b31m", "three\x07\u0085\x1bc"}

// shownKeys are what is left of hostileKeys on a terminal.
var shownKeys = []string{"one", "two31m", "three"}

// hostileProject is a run whose agent (an exec script) names the items of
// a map step with hostileKeys and then, per item, answers text full of
// escape sequences with more on stderr, a JSON object whose unexpected
// key is an escape sequence, and an exit 3 with escapes on stderr: every
// item is dead-lettered with a diagnosis that quotes the agent.
func hostileProject(t *testing.T) *project {
	items := `{"items": [{"id": ` + mustJSON(t, hostileKeys[0]) + `, "n": 1}, {"id": ` + mustJSON(t, hostileKeys[1]) +
		`, "n": 2}, {"id": ` + mustJSON(t, hostileKeys[2]) + `, "n": 3}]}`
	return newProject(t, `version: 1
agents:
  a: {preset: exec, command: [sh, agent.sh]}
defaults: {agent: a, retry: {max_attempts: 1}}
steps:
  - {id: plan, prompt: plan}
  - id: fix
    prompt: 'fix {{ .Item.n }} {{ .Item.Key }}'
    handoff: {schema: fix.json}
    map: {items: {step: plan, pointer: /items}, key: /id, max_failures: 3}
`, map[string]string{
		"items.json": items,
		"fix.json":   `{"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}, "additionalProperties": false}`,
		"agent.sh": `prompt=$(cat)
case "$prompt" in
plan*) cat items.json ;;
"fix 1"*) printf 'not json \033[31mred\033]0;title\007 {"summary": "\033[2J \302\233'
   printf 'warn \033[41mbad\033[0m \302\23331m \007\n' >&2 ;;
"fix 2"*) printf '%s' '{"\u001b[31mevil\u0007": 1, "summary": ["\u009b2J"]}' ;;
"fix 3"*) printf 'boom \033]8;;http://evil.example\033\\link\033]8;;\033\\ \007\302\205\n' >&2; exit 3 ;;
esac
`})
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// terminalUnsafe returns the first rune of s a terminal would act on
// rather than show (a C0 control but newline and tab, DEL, a C1 control)
// or an invalid byte, and where it is; ok is true when there is none.
func terminalUnsafe(s string) (at int, r rune, ok bool) {
	for i, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			return i, r, false
		}
	}
	return 0, 0, true
}

// TestAgentTextNeverReachesTheTerminalRaw: every command that prints what
// an agent wrote (a map item's key, a bad-JSON excerpt, a stderr tail, a
// schema violation's key, a dead item's signature) prints it cleaned, as
// the live line does: no escape sequence, BEL or C1 control reaches the
// terminal. JSON output keeps the raw values, escaped by JSON.
func TestAgentTextNeverReachesTheTerminalRaw(t *testing.T) {
	p := hostileProject(t)
	run := p.cadence(nil, "run")
	run.exits(t, 0)

	human := [][]string{
		{"inspect"},
		{"inspect", "--step", "fix"},
		{"inspect", "--follow"},
		{"inspect", "--stats"},
		{"dlq", "list"},
		{"runs"},
	}
	for _, key := range hostileKeys {
		human = append(human,
			[]string{"inspect", "--step", "fix", "--item", key},
			[]string{"inspect", "--step", "fix", "--item", key, "--attempt", "1"},
			[]string{"dlq", "show", key})
	}
	check := func(name, out string) {
		t.Helper()
		if at, r, ok := terminalUnsafe(out); !ok {
			t.Errorf("%s prints %U at byte %d: %q", name, r, at, out[max(0, at-40):min(len(out), at+40)])
		}
	}
	check("run's stdout", run.stdout)
	check("run's stderr", run.stderr)
	for _, args := range human {
		name := strings.Join(args, " ")
		r := p.cadence(nil, args...)
		if !slices.Contains(args, "--follow") { // follow exits 1 for a run with dead items
			r.exits(t, 0)
		}
		check(name+" (stdout)", r.stdout)
		check(name+" (stderr)", r.stderr)
	}

	// What is left of each key is shown, where a key is shown.
	for _, args := range [][]string{{"inspect", "--step", "fix"}, {"dlq", "list"}, {"inspect", "--follow"}} {
		out := p.cadence(nil, args...).stdout
		for _, k := range shownKeys {
			if !strings.Contains(out, k) {
				t.Errorf("%s does not show key %q:\n%s", strings.Join(args, " "), k, out)
			}
		}
	}
	// The diagnoses are quoted, cleaned.
	for i, want := range []string{`{"summary"`, "got: evil, summary", "exit_nonzero"} {
		out := p.cadence(nil, "inspect", "--step", "fix", "--item", hostileKeys[i], "--attempt", "1").stdout
		if !strings.Contains(out, want) {
			t.Errorf("inspect --attempt of item %q does not quote %q:\n%s", shownKeys[i], want, out)
		}
	}

	// JSON keeps the raw values, which JSON escapes.
	r := p.cadence(nil, "inspect", "--json")
	r.exits(t, 0)
	check("inspect --json", r.stdout)
	var rep history.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	fix := step(rep, "fix")
	if len(fix.Items) != len(hostileKeys) {
		t.Fatalf("inspect --json: %d items, want %d", len(fix.Items), len(hostileKeys))
	}
	for i, it := range fix.Items {
		if it.Key != hostileKeys[i] {
			t.Errorf("inspect --json: item %d has key %q, want the raw %q", i, it.Key, hostileKeys[i])
		}
	}
	r = p.cadence(nil, "dlq", "list", "--json")
	r.exits(t, 0)
	check("dlq list --json", r.stdout)
	var dead []history.DeadReport
	if err := json.Unmarshal([]byte(r.stdout), &dead); err != nil || len(dead) != len(hostileKeys) {
		t.Fatalf("dlq list --json = %+v, %v; want the dead items", dead, err)
	}
	for _, d := range dead {
		if !slices.Contains(hostileKeys, d.Key) {
			t.Errorf("dlq list --json: key %q, not one of the raw keys", d.Key)
		}
	}
	for _, args := range [][]string{
		{"dlq", "show", hostileKeys[0], "--json"},
		{"inspect", "--step", "fix", "--item", hostileKeys[1], "--attempt", "1", "--json"},
		{"inspect", "--follow", "--json"},
		{"run", "--json", "--new"},
	} {
		r := p.cadence(nil, args...)
		check(strings.Join(args, " "), r.stdout)
		check(strings.Join(args, " ")+" (stderr)", r.stderr)
	}
}
