package shellquote

import (
	"os/exec"
	"testing"
)

// Each word, quoted, is read back by a real /bin/sh as exactly itself.
func TestQuoteRoundTrip(t *testing.T) {
	for _, tt := range []struct{ in, word string }{
		{"gate", "gate"},
		{"/tmp/my-project_2/.cadence", "/tmp/my-project_2/.cadence"},
		{"", "''"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"$(touch pwned)", "'$(touch pwned)'"},
		{"`id`; rm -rf ~", "'`id`; rm -rf ~'"},
		{"a\nb", "'a\nb'"},
		{"-n", "-n"},
		{"*", "'*'"},
		{`back\slash "dq"`, `'back\slash "dq"'`},
	} {
		if got := Word(tt.in); got != tt.word {
			t.Errorf("Word(%q) = %q, want %q", tt.in, got, tt.word)
		}
		for _, q := range []string{Word(tt.in), Quote(tt.in)} {
			out, err := exec.Command("/bin/sh", "-c", `printf '%s|' `+q).Output()
			if err != nil {
				t.Fatalf("sh -c with %s: %v", q, err)
			}
			if string(out) != tt.in+"|" {
				t.Errorf("sh read %s as %q, want %q", q, out, tt.in+"|")
			}
		}
	}
}
