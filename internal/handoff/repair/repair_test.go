package repair

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRepairCases(t *testing.T) {
	if len(repairCases)+len(errorCases)+len(noJSONCases) < 150 {
		t.Fatalf("only %d hand-written cases", len(repairCases)+len(errorCases)+len(noJSONCases))
	}
	for _, tc := range repairCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Repair([]byte(tc.in), Options{})
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Repair(%q) = %s %v, want an error", tc.in, r.JSON, r.Repairs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Repair(%q): %v", tc.in, err)
			}
			if string(r.JSON) != tc.want {
				t.Errorf("Repair(%q)\n got  %s\n want %s", tc.in, r.JSON, tc.want)
			}
			if !json.Valid(r.JSON) {
				t.Errorf("output %s is not valid JSON", r.JSON)
			}
			if got := strings.Join(r.Repairs, " "); got != tc.repairs {
				t.Errorf("repairs = %q, want %q", got, tc.repairs)
			}
			if r.Truncated != tc.trunc {
				t.Errorf("truncated = %v, want %v", r.Truncated, tc.trunc)
			}
		})
	}
}

func TestRepairErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Repair([]byte(tc.in), Options{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Repair(%q) error = %v, want *Error", tc.in, err)
			}
			if e.Line != tc.line || e.Column != tc.col {
				t.Errorf("at line %d column %d (%s), want line %d column %d", e.Line, e.Column, e.Msg, tc.line, tc.col)
			}
			if !strings.Contains(e.Excerpt, excerptMarker) || e.Msg == "" {
				t.Errorf("excerpt %q / message %q lack the marker or text", e.Excerpt, e.Msg)
			}
			if !strings.Contains(e.Error(), e.Msg) {
				t.Errorf("Error() = %q does not carry the message", e.Error())
			}
		})
	}
}

// TestRefusalMessages checks that a refusal names what it refuses as the
// agent wrote it: the escape, or the control character by its code point.
func TestRefusalMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"p": "C:\apps"}`, `\a is no JSON escape`},
		{`"\v"`, `write \\v for a backslash`},
		{`["x\u26"]`, `unicode escape \u26 ends at the quote`},
		{"{\"a\": \"b\x00\"}", "raw control character U+0000"},
		{"['\x1f']", "raw control character U+001F"},
	}
	for _, tc := range tests {
		_, err := Repair([]byte(tc.in), Options{})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Repair(%q) error = %v, want *Error", tc.in, err)
		}
		if !strings.Contains(e.Msg, tc.want) {
			t.Errorf("Repair(%q) message %q lacks %q", tc.in, e.Msg, tc.want)
		}
	}
}

var noJSONCases = []string{
	"",
	"   \n\t ",
	"I could not complete the task.",
	"It's 5 o'clock and None of it worked",
	"She said: no way",
	"hello world",
	"```json\n```",
	"\ufeff",
}

func TestRepairNoJSON(t *testing.T) {
	for _, in := range noJSONCases {
		_, err := Repair([]byte(in), Options{})
		if !errors.Is(err, ErrNoJSON) {
			t.Errorf("Repair(%q) error = %v, want ErrNoJSON", in, err)
		}
		if _, err := RepairAll([]byte(in), Options{}); !errors.Is(err, ErrNoJSON) {
			t.Errorf("RepairAll(%q) error = %v, want ErrNoJSON", in, err)
		}
	}
}

func TestMaxDepth(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		depth int
		ok    bool
		col   int
	}{
		{"default limit valid", deep(10000, "1"), 0, true, 0},
		{"deep broken within the default", deep(5000, "True"), 0, true, 0},
		{"over default valid", deep(10001, "1"), 0, false, 10001},
		{"over default broken", deep(10001, "True"), 0, false, 10001},
		{"over default cut", deep(10100, "")[:10100], 0, false, 10001},
		{"custom limit", deep(3, "1"), 3, true, 0},
		{"over custom limit", "{\"a\": " + deep(3, "1") + "}", 3, false, 9},
		{"over custom limit in prose", "see: " + deep(4, "1,"), 3, false, 9},
		{"very deep", deep(100000, "1"), 0, false, 10001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Repair([]byte(tc.in), Options{MaxDepth: tc.depth})
			if tc.ok {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if !json.Valid(r.JSON) {
					t.Fatalf("invalid output %s", r.JSON)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v, want *Error", err)
			}
			if e.Column != tc.col {
				t.Errorf("column = %d, want %d", e.Column, tc.col)
			}
		})
	}
}

func TestRepairAll(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		reps [][]string
	}{
		{"valid", `{"a": 1}`, []string{`{"a":1}`}, [][]string{nil}},
		{"ndjson", "{\"a\": 1}\n{'a': 2}\n", []string{`{"a":1}`, `{"a":2}`}, [][]string{nil, {SingleQuotes}}},
		{"prose", `first [1] then {"b": True} and {"c": 3`, []string{`[1]`, `{"b":true}`, `{"c":3}`},
			[][]string{{Prose}, {Prose, PythonLiterals}, {Prose, Truncated}}},
		{"fences", "```json\n{\"a\": 1}\n```\ntext\n```\n[2]\n```", []string{`{"a":1}`, `[2]`},
			[][]string{{CodeFence, Prose}, {CodeFence, Prose}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := RepairAll([]byte(tc.in), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var reps [][]string
			for _, r := range rs {
				got = append(got, string(r.JSON))
				reps = append(reps, r.Repairs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(reps, tc.reps) {
				t.Errorf("repairs = %q, want %q", reps, tc.reps)
			}
		})
	}
}

// TestDeterministic repairs the same broken inputs repeatedly.
func TestDeterministic(t *testing.T) {
	for _, tc := range repairCases[:40] {
		first, err1 := Repair([]byte(tc.in), Options{})
		for range 3 {
			again, err2 := Repair([]byte(tc.in), Options{})
			if !reflect.DeepEqual(first, again) || (err1 == nil) != (err2 == nil) {
				t.Fatalf("Repair(%q) differs between runs", tc.in)
			}
		}
	}
}

// TestErrorShowsCharacter checks that an error names the character found,
// not the first byte of its UTF-8 encoding ('Â' for a no-break space).
func TestErrorShowsCharacter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[1, 2 \u00bb]", "found '»'"},
		{"{\"a\" \u00bb 1}", "found '»'"},
	} {
		_, err := Repair([]byte(tc.in), Options{})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Repair(%q) error = %v, want *Error", tc.in, err)
		}
		if !strings.Contains(e.Msg, tc.want) {
			t.Errorf("Repair(%q) message %q lacks %q", tc.in, e.Msg, tc.want)
		}
	}
}
