package supervise

import (
	"reflect"
	"syscall"
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
		n, text, ok := unframe(b)
		if !ok || n != len(text) {
			t.Fatalf("order %q: length %d, %d bytes of text, %v", b, n, len(text), ok)
		}
		o, ok := parseOrder(text)
		if !ok || o.dir != tc.dir || !reflect.DeepEqual(o.argv, tc.argv) || !reflect.DeepEqual(o.env, tc.env) {
			t.Errorf("order %q %q %q came back as %+v, %v", tc.dir, tc.argv, tc.env, o, ok)
		}
		for cut := 0; cut < len(text); cut++ {
			if o, ok := parseOrder(text[:cut]); ok {
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

// An order's length comes first: one that is missing, not a number, out
// of bounds, or shorter than what came with it is refused.
func TestUnframe(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		rest string
		ok   bool
	}{
		{in: "5\x00abc", n: 5, rest: "abc", ok: true},
		{in: "3\x00abc", n: 3, rest: "abc", ok: true},
		{in: "2\x00abc"},
		{in: "abc"},
		{in: "\x00abc"},
		{in: "-1\x00"},
		{in: "0\x00"},
		{in: "x1\x00a"},
		{in: "4194305\x00a"},
		{in: "999999999\x00a"},
	} {
		n, rest, ok := unframe([]byte(tc.in))
		if ok != tc.ok || n != tc.n || string(rest) != tc.rest {
			t.Errorf("unframe(%q) = %d, %q, %v; want %d, %q, %v", tc.in, n, rest, ok, tc.n, tc.rest, tc.ok)
		}
	}
}

// The report of a program's end carries its wait status whole, and
// anything else is not one.
func TestEndRoundTrip(t *testing.T) {
	for _, ws := range []syscall.WaitStatus{0, 3 << 8, 127 << 8, syscall.WaitStatus(syscall.SIGKILL), syscall.WaitStatus(syscall.SIGSEGV) | 0x80} {
		for _, reusable := range []bool{true, false} {
			got, r, ok := DecodeEnd(EncodeEnd(ws, reusable))
			if !ok || got != ws || r != reusable {
				t.Errorf("%#x, %v came back as %#x, %v, %v", uint32(ws), reusable, uint32(got), r, ok)
			}
		}
	}
	for _, bad := range [][]byte{nil, {endTag}, {1, 0, 0, 0, 0, 0}, {endTag, 2, 0, 0, 0, 0}, append(EncodeEnd(0, true), 0)} {
		if _, _, ok := DecodeEnd(bad); ok {
			t.Errorf("DecodeEnd(%v) was read as a report", bad)
		}
	}
}
