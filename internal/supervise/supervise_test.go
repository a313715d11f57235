package supervise

import (
	"reflect"
	"testing"
)

func TestParseSupervise(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		parent int
		gate   bool
		argv   []string
		bad    bool
	}{
		{args: []string{"--parent", "42", "--gate", "--", "codex", "exec"}, parent: 42, gate: true, argv: []string{"codex", "exec"}},
		{args: []string{"--parent", "42", "--", "codex", "exec", "-"}, parent: 42, argv: []string{"codex", "exec", "-"}},
		{args: []string{"--parent", "42", "claude", "-p"}, parent: 42, argv: []string{"claude", "-p"}},
		{args: []string{"--parent", "42", "--", "--", "x"}, parent: 42, argv: []string{"--", "x"}},
		{args: []string{"--parent", "42", "--"}, bad: true},
		{args: []string{"--parent", "x", "--", "a"}, bad: true},
		{args: []string{"--parent", "0", "--", "a"}, bad: true},
		{args: []string{"codex"}, bad: true},
		{args: nil, bad: true},
	} {
		parent, gate, argv, err := parseSupervise(tc.args)
		if (err != nil) != tc.bad || parent != tc.parent || gate != tc.gate || !reflect.DeepEqual(argv, tc.argv) {
			t.Errorf("parseSupervise(%q) = %d, %v, %q, %v", tc.args, parent, gate, argv, err)
		}
	}
}
