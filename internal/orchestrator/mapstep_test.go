package orchestrator

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

func TestSignatureGroupsAlikeFailures(t *testing.T) {
	tests := []struct {
		class, a, b string
		same        bool
	}{
		{"schema", `schema: /items/3: missing required field "summary"`, `schema: /items/12: missing required field "title"`, true},
		{"exit_nonzero", "the agent exited with code 1\nstderr: boom at 0x7ffe1234abcd", "the agent exited with code 2\nstderr: other", true},
		{"check", "check tests failed: exit 1 after 1.2s", "check tests failed: exit 1 after 33.7s", true},
		{"schema", "schema: /: missing required field", "parse: unexpected end of input", false},
		{"timeout", "killed after 10m0.01s (timeout 10m0s)", "killed after 10m0.2s (timeout 10m0s)", true},
	}
	for _, tt := range tests {
		sa, sb := signature(tt.class, tt.a), signature(tt.class, tt.b)
		if (sa == sb) != tt.same {
			t.Errorf("signature(%q) = %q, signature(%q) = %q; want same=%v", tt.a, sa, tt.b, sb, tt.same)
		}
		if !strings.HasPrefix(sa, tt.class) {
			t.Errorf("signature %q does not start with its class %s", sa, tt.class)
		}
	}
	long := signature("schema", strings.Repeat("é", 500))
	if len(long) > maxSignatureBytes+len("schema: ")+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("a long error gives a signature of %d bytes: %q", len(long), long)
	}
	if got := signature("stuck", ""); got != "stuck" {
		t.Errorf("signature of an empty error = %q, want the class", got)
	}
}

// Keys become file names: a plain key as it is, any other made safe and
// unique, never a path.
func TestSafeName(t *testing.T) {
	plain := []string{"a", "item-7", "pkg_x.y", "0"}
	for _, k := range plain {
		if got := checkpoint.SafeName(k); got != k {
			t.Errorf("checkpoint.SafeName(%q) = %q, want it unchanged", k, got)
		}
	}
	seen := map[string]string{}
	for _, k := range []string{"..", ".", "../../etc/passwd", "a/b", "a_b~", "a b", "", "é", strings.Repeat("x", 65), "a/b/",
		"x.lock", "a..b", "end.", "a^b", "a:b", "a@{1}"} {
		got := checkpoint.SafeName(k)
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, "/\\\x00") || len(got) > 60 {
			t.Errorf("checkpoint.SafeName(%q) = %q: not one safe file name", k, got)
		}
		// It is also part of a branch name: git must accept it as one.
		if out, err := exec.Command("git", "check-ref-format", "refs/heads/cadence/run/step/"+got).CombinedOutput(); err != nil {
			t.Errorf("checkpoint.SafeName(%q) = %q is not valid in a branch name: %v %s", k, got, err, out)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("keys %q and %q share the name %q", prev, k, got)
		}
		seen[got] = k
	}
}

// decodedItems decodes a JSON array of items the way a map step reads them.
func decodedItems(t *testing.T, text string) []any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		t.Fatalf("items %s: %v", text, err)
	}
	return v.(jsonvalue.Array)
}

func TestItemKeys(t *testing.T) {
	items := decodedItems(t, `[{"id": "a", "n": 1}, {"id": "b", "n": 2.0}]`)
	keys, err := itemKeys(items, "/id")
	if err != nil || strings.Join(keys, ",") != "a,b" {
		t.Errorf("keys by /id = %v, %v", keys, err)
	}
	keys, err = itemKeys(items, "/n")
	if err != nil || strings.Join(keys, ",") != "1,2" {
		t.Errorf("keys by /n = %v, %v", keys, err)
	}
	keys, err = itemKeys(items, "")
	if err != nil || strings.Join(keys, ",") != "0,1" {
		t.Errorf("keys by index = %v, %v", keys, err)
	}
	// Integers past 2^53 are keys as written: two keys, not one.
	keys, err = itemKeys(decodedItems(t, `[{"id": 9007199254740993}, {"id": 9007199254740992}, {"id": 1e3}]`), "/id")
	if err != nil || strings.Join(keys, ",") != "9007199254740993,9007199254740992,1000" {
		t.Errorf("big keys = %v, %v", keys, err)
	}
	for _, tt := range []struct {
		items   string
		pointer string
		want    string
	}{
		{`[{"id": "a"}, {"id": "a"}]`, "/id", `items 0 and 1 have the same key "a"`},
		{`[{"id": 7}, {"id": 7.0}]`, "/id", `items 0 and 1 have the same key "7"`},
		{`[{"id": "a"}, {"x": "a"}]`, "/id", `item 1 has no key at "/id"`},
		{`[{"id": true}]`, "/id", "is a boolean, not a string or a number"},
		{`[{"id": 1.5}]`, "/id", "not a whole number"},
		{`[{"id": 1e400}]`, "/id", "not a whole number"},
		{`[{"id": ""}]`, "/id", "is empty"},
		{`["scalar"]`, "/id", `item 0 has no key at "/id"`},
	} {
		if _, err := itemKeys(decodedItems(t, tt.items), tt.pointer); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("itemKeys(%s, %q) = %v, want an error containing %q", tt.items, tt.pointer, err, tt.want)
		}
	}
}

func TestJSONPointer(t *testing.T) {
	doc, err := jsonvalue.Decode([]byte(`{"a/b": {"m~n": ["x", "y"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonPointer(doc, "/a~1b/m~0n/1")
	if err != nil || v != "y" {
		t.Errorf("= %v, %v; want y", v, err)
	}
	for _, p := range []string{"/nope", "/a~1b/m~0n/2", "/a~1b/m~0n/x", "/a~1b/m~0n/0/deeper"} {
		if _, err := jsonPointer(doc, p); err == nil {
			t.Errorf("pointer %q resolved, want an error", p)
		}
	}
}
