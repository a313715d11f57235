package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var testCaptures = []capture{
	{path: []string{"type"}, limit: 64},
	{path: []string{"message", "content", "*", "type"}, limit: 64},
	{path: []string{"message", "content", "*", "text"}, limit: 32},
	{path: []string{"usage"}, limit: 1 << 10},
}

// scanLine feeds line to a fresh scanner in pieces cut at the given
// offsets and returns it.
func scanLine(line []byte, cuts ...int) *eventScanner {
	e := newEventScanner(testCaptures, 1<<20)
	prev := 0
	for _, c := range cuts {
		e.write(line[prev:c])
		prev = c
	}
	e.write(line[prev:])
	return e
}

type scanned struct {
	ok     bool
	fields [][]field
}

func snapshot(e *eventScanner) scanned {
	s := scanned{ok: e.ok()}
	for _, fs := range e.fields {
		s.fields = append(s.fields, append([]field{}, fs...))
	}
	return s
}

func TestEventScanner(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		ok    bool
		typ   string
		texts []string // captured text values, raw
		elems []int
		over  []bool
		usage string
	}{
		{name: "assistant", line: `{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","input":{"text":"no"}}]}}`,
			ok: true, typ: `"assistant"`, texts: []string{`"hi"`}, elems: []int{0}},
		{name: "blocks in any order, text cut at its limit", line: `{"message":{"content":[{"text":"a\"}]b","type":"text"},{"type":"text","text":"` + strings.Repeat("z", 40) + `"}]},"type":"assistant"}`,
			ok: true, typ: `"assistant"`, texts: []string{`"a\"}]b"`, `"` + strings.Repeat("z", 31)}, elems: []int{0, 1}, over: []bool{false, true}},
		{name: "a big skipped value", line: `{"type":"user","message":{"content":[{"type":"tool_result","content":"` + strings.Repeat(`x\"\\`, 1000) + `"}]},"usage":{"input_tokens":3}}`,
			ok: true, typ: `"user"`, usage: `{"input_tokens":3}`},
		{name: "nested keys of the same name are not captured", line: `{"x":{"type":"inner"},"type":"outer","y":[{"type":"no"}]}`,
			ok: true, typ: `"outer"`},
		{name: "white space everywhere", line: " { \"type\" : \"t\" , \"usage\" : [ 1 , 2 ] } \r",
			ok: true, typ: `"t"`, usage: `[ 1 , 2 ]`},
		{name: "scalars", line: `{"type":null,"usage":-12.5e3}`, ok: true, typ: `null`, usage: `-12.5e3`},
		{name: "empty object", line: `{}`, ok: true},
		{name: "not an object", line: `[1,2]`},
		{name: "prose", line: `warning: config has a trailing comma`},
		{name: "cut short, what came before is kept", line: `{"type":"result","result":"abc`, typ: `"result"`},
		{name: "missing colon", line: `{"type" "x"}`},
		{name: "missing comma", line: `{"type":"x" "usage":1}`, typ: `"x"`},
		{name: "closer of the wrong kind", line: `{"usage":[1}`},
		{name: "trailing garbage", line: `{"type":"x"} y`, typ: `"x"`},
		{name: "two objects", line: `{"type":"x"}{"type":"y"}`, typ: `"x"`},
		{name: "escaped key is not matched", line: `{"typ\u0065":"x"}`, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			whole := scanLine(line)
			if whole.ok() != tt.ok {
				t.Fatalf("ok = %v, want %v", whole.ok(), tt.ok)
			}
			if f, found := whole.get(0); string(f.raw) != tt.typ || found != (tt.typ != "") {
				t.Errorf("type = %q (found %v), want %q", f.raw, found, tt.typ)
			}
			var texts []string
			var elems []int
			var over []bool
			for _, f := range whole.all(2) {
				texts, elems, over = append(texts, string(f.raw)), append(elems, f.elem), append(over, f.over)
			}
			if !reflect.DeepEqual(texts, tt.texts) || !reflect.DeepEqual(elems, tt.elems) {
				t.Errorf("texts %q in elements %v, want %q in %v", texts, elems, tt.texts, tt.elems)
			}
			if tt.over != nil && !reflect.DeepEqual(over, tt.over) {
				t.Errorf("over = %v, want %v", over, tt.over)
			}
			if f, _ := whole.get(3); string(f.raw) != tt.usage {
				t.Errorf("usage = %q, want %q", f.raw, tt.usage)
			}
			// The same line split at every byte boundary, and into single
			// bytes, is read the same.
			want := snapshot(whole)
			for i := range line {
				if got := snapshot(scanLine(line, i)); !reflect.DeepEqual(got, want) {
					t.Fatalf("split at %d: %+v, want %+v", i, got, want)
				}
			}
			cuts := make([]int, len(line))
			for i := range cuts {
				cuts[i] = i
			}
			if got := snapshot(scanLine(line, cuts...)); !reflect.DeepEqual(got, want) {
				t.Fatalf("byte by byte: %+v, want %+v", got, want)
			}
		})
	}
}

// TestEventScannerReset: a scanner reused for the next line keeps nothing
// of the last one.
func TestEventScannerReset(t *testing.T) {
	e := newEventScanner(testCaptures, 1<<20)
	e.write([]byte(`{"type":"a","message":{"content":[{"type":"text","text":"one"}]}}`))
	e.reset()
	e.write([]byte(`{"usage":1}`))
	if !e.ok() || len(e.all(0)) != 0 || len(e.all(2)) != 0 || string(value(e, 3)) != "1" {
		t.Fatalf("after reset: ok %v fields %+v", e.ok(), e.fields)
	}
}

// TestEventScannerBudget: however many values a line holds, what it
// captures in all stays within the budget.
func TestEventScannerBudget(t *testing.T) {
	caps := []capture{{path: []string{"message", "content", "*", "text"}, limit: 1 << 20}}
	e := newEventScanner(caps, 4<<10)
	var b bytes.Buffer
	b.WriteString(`{"message":{"content":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"` + strings.Repeat("t", 1000) + `"}`)
	}
	b.WriteString(`]}}`)
	e.write(b.Bytes())
	kept := 0
	for _, f := range e.all(0) {
		kept += len(f.raw)
	}
	if !e.ok() || len(e.all(0)) != 100 || kept > 4<<10 {
		t.Fatalf("ok %v, %d values, %d bytes kept", e.ok(), len(e.all(0)), kept)
	}
}

// FuzzEventScanner: on any line that encoding/json finds to be one JSON
// object, the scanner agrees, and captures exactly the values at the
// captured paths, in order (the rest of a value past its limit cut off).
func FuzzEventScanner(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},"usage":{"a":[1,{"b":"}"}]}}`,
		`{"type":"x","message":{"content":"str"}}`,
		`{"message":{"content":[{"text":"\\\"","type":"text"}]},"type":"a","type":"b"}`,
		`{"type":1e5,"usage":[true,false,null]}`,
		`[{"type":"x"}]`,
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, line []byte, cut uint8) {
		if bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) || bytes.TrimSpace(line)[0] != '{' {
			return
		}
		e := scanLine(line, min(int(cut), len(line)))
		if !e.ok() {
			t.Fatalf("valid object %q not scanned as one", line)
		}
		want := valuesAt(t, line)
		for i, c := range testCaptures {
			key := strings.Join(c.path, ".")
			got := e.all(i)
			if len(got) != len(want[key]) {
				t.Fatalf("%s: captured %d values, encoding/json has %q", key, len(got), want[key])
			}
			for k, g := range got {
				w := want[key][k]
				switch {
				case g.size != int64(len(w)):
					t.Fatalf("%s[%d]: size %d, want %d (%q)", key, k, g.size, len(w), w)
				case g.over != (len(w) > c.limit):
					t.Fatalf("%s[%d]: over %v for %d bytes, limit %d", key, k, g.over, len(w), c.limit)
				case string(g.raw) != w[:min(len(w), c.limit)]:
					t.Fatalf("%s[%d] = %q, want %q", key, k, g.raw, w)
				}
			}
		}
	})
}

// valuesAt walks a JSON object with encoding/json's tokenizer and returns,
// for each captured path, the raw values found there in document order,
// duplicates included.
func valuesAt(t *testing.T, line []byte) map[string][]string {
	t.Helper()
	paths := map[string]bool{}
	for _, c := range testCaptures {
		paths[strings.Join(c.path, ".")] = true
	}
	out := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(line))
	var walk func(path []string)
	walk = func(path []string) {
		start := dec.InputOffset()
		if key := strings.Join(path, "."); paths[key] && len(path) > 0 {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			// The raw bytes as written, without leading white space.
			text := bytes.TrimLeft(line[start:dec.InputOffset()], " \t\r\n:,")
			out[key] = append(out[key], string(bytes.TrimSpace(text)))
			return
		}
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				walk(append(path, k.(string)))
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(append(path, "*"))
			}
			_, _ = dec.Token()
		}
	}
	walk(nil)
	return out
}

// TestEventScannerLongValue: a captured value longer than one block is
// kept whole, byte for byte, however its line is cut into writes, and one
// past its limit keeps exactly the limit; an answer sure to decode past
// its decoded bound is dropped as it streams, leaving nothing kept.
func TestEventScannerLongValue(t *testing.T) {
	body := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(' ')
		}
		return b.String()[:n]
	}
	for _, tc := range []struct {
		name    string
		size    int
		limit   int
		decoded int64
		piece   int
		want    int // bytes of the value kept (with its quotes); -1: dropped
	}{
		{"empty", 0, 8 << 20, 0, 64 << 10, 2},
		{"one byte under a block", capChunk - 3, 8 << 20, 0, 64 << 10, capChunk - 1},
		{"exactly a block", capChunk - 2, 8 << 20, 0, 7, capChunk},
		{"one byte over a block", capChunk - 1, 8 << 20, 0, 1 << 20, capChunk + 1},
		{"three and a half blocks in odd pieces", 7 << 19, 8 << 20, 0, 65521, 7<<19 + 2},
		{"in one write", 5 << 20, 8 << 20, 0, 1 << 30, 5<<20 + 2},
		{"cut at the limit", 3 << 20, 2<<20 + 5, 0, 65536, 2<<20 + 5},
		{"under the decoded bound", 3 << 20, 8 << 20, 3 << 20, 65536, 3<<20 + 2},
		{"past the decoded bound", 3 << 20, 8 << 20, 2 << 20, 65536, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := `"` + body(tc.size) + `"`
			line := []byte(`{"type":"result","result":` + value + `,"n":1}`)
			caps := []capture{{path: []string{"result"}, limit: tc.limit, decoded: tc.decoded}}
			e := newEventScanner(caps, 1<<30)
			for p := line; len(p) > 0; {
				k := min(tc.piece, len(p))
				e.write(p[:k])
				p = p[k:]
			}
			if !e.ok() {
				t.Fatal("the line was not read as one object")
			}
			f, ok := e.get(0)
			if !ok {
				t.Fatal("nothing captured")
			}
			if f.size != int64(len(value)) {
				t.Fatalf("size %d, want %d", f.size, len(value))
			}
			if tc.want < 0 {
				if len(f.raw) != 0 || !f.over || e.kept != 0 {
					t.Fatalf("kept %d bytes (over %v, line kept %d), want the value dropped", len(f.raw), f.over, e.kept)
				}
				return
			}
			if len(f.raw) != tc.want || string(f.raw) != value[:tc.want] {
				t.Fatalf("kept %d bytes, want the value's first %d", len(f.raw), tc.want)
			}
			if f.over != (tc.want < len(value)) {
				t.Fatalf("over %v with %d of %d bytes kept", f.over, tc.want, len(value))
			}
		})
	}
}
