package handoff

import (
	"slices"
	"strings"
	"testing"
)

// TestCheckNeverHandsOverFragment checks that a strictly valid value that
// is only part of a larger value the agent wrote is never the handoff:
// with repair on, the whole value is repaired; with repair off, or when
// the whole cannot be repaired, the output is refused.
func TestCheckNeverHandsOverFragment(t *testing.T) {
	tests := []struct {
		name, output string
		repair       bool
		want         string // accepted JSON; "" when the output must be refused
		repairs      []string
	}{
		{"stray closer in an array", `[{"key":"value"}},{"key":"value"}]`, true,
			`[{"key":"value"},{"key":"value"}]`, []string{"redundant_closer"}},
		{"stray closer, repair off", `[{"key":"value"}},{"key":"value"}]`, false, "", nil},
		{"premature object closer", `{"key": "value"}, "key2": "value2"}`, true,
			`{"key":"value","key2":"value2"}`, []string{"redundant_closer"}},
		{"premature object closer, repair off", `{"key": "value"}, "key2": "value2"}`, false, "", nil},
		{"inner object of a broken value", `{"a": @, "b": {"c": 1}}`, true, "", nil},
		{"inner object of a broken value, repair off", `{"a": @, "b": {"c": 1}}`, false, "", nil},
		// Not fragments: prose brackets before a value, a broken value
		// that ends before the next one.
		{"log prefix then value", "[INFO] done\n{\"a\": 1}", false, `{"a":1}`, nil},
		{"placeholder then value", "Use {name: value} form. {\"a\": 1}", false, `{"a":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check([]byte(tt.output), nil, Options{Repair: tt.repair})
			if tt.want == "" {
				if r.OK {
					t.Fatalf("accepted %s, want a refusal", r.JSON)
				}
				return
			}
			wantOK(t, r, tt.want)
			for _, name := range tt.repairs {
				if !slices.Contains(r.Repairs, name) {
					t.Errorf("repairs %q lack %s", r.Repairs, name)
				}
			}
		})
	}
}

// TestInvalidJSONNamesCharacter checks that the diagnosis of output that
// is not JSON names the character at fault, not its first byte.
func TestInvalidJSONNamesCharacter(t *testing.T) {
	r := Check([]byte("{\"a\":\u00a01}"), nil, Options{})
	d := wantClass(t, r, ClassInvalidJSON)
	if want := "'\u00a0' (U+00A0)"; !strings.Contains(d.Details, want) {
		t.Errorf("Details %q do not name %s", d.Details, want)
	}
	if strings.Contains(d.Details, "0xc2") || strings.Contains(d.Details, "Â") {
		t.Errorf("Details %q name a byte, not the character", d.Details)
	}
}
