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

// An order survives its encoding whatever it holds, an empty environment
// included (which is not the supervisor's own), and a damaged one is
// refused, never half read.
func TestOrderRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dir       string
		argv, env []string
	}{
		{"/work", []string{"/bin/true"}, []string{"A=1", "B="}},
		{"", []string{"/usr/bin/env", "--", "-x", ""}, []string{}},
		{"/a b/c", []string{"/bin/sh", "-c", "echo 'x y'; exit 3"}, []string{"PATH=/bin", "LONG=" + string(make([]byte, 10000))[:0] + "v"}},
	} {
		b, err := EncodeOrder(tc.dir, tc.argv, tc.env)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := parseOrder(b)
		if !ok || o.dir != tc.dir || !reflect.DeepEqual(o.argv, tc.argv) || !reflect.DeepEqual(o.env, tc.env) {
			t.Errorf("order %q %q %q came back as %+v, %v", tc.dir, tc.argv, tc.env, o, ok)
		}
		for cut := 0; cut < len(b); cut++ {
			if o, ok := parseOrder(b[:cut]); ok {
				t.Errorf("the order %q cut at %d was read: %+v", b, cut, o)
			}
		}
	}
	for _, bad := range [][]string{{"a\x00b"}, {}} {
		if _, err := EncodeOrder("/", bad, nil); err == nil {
			t.Errorf("EncodeOrder(argv %q) was accepted", bad)
		}
	}
	if _, err := EncodeOrder("/", []string{"/bin/true"}, []string{"A=\x00"}); err == nil {
		t.Error("a NUL in the environment was accepted")
	}
}
