package extract

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantErr is one expected error: its kind and where it failed.
type wantErr struct {
	kind ErrorKind
	off  int64
	line int
}

// wantValue is one expected value and the line it starts on. Its offset is
// where data first occurs in the input after the previous expected value.
type wantValue struct {
	data string
	line int
}

func TestScanner(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		opts   Options
		values []wantValue
		errs   []wantErr
		tail   string
	}{
		{name: "empty input"},
		{name: "prose only", input: "no JSON here, only prose) and ]closers} \"quotes\".\n"},
		{
			name:   "prose before and after",
			input:  `The handoff: {"success": true, "files": ["a.go"]} -- done.`,
			values: []wantValue{{`{"success": true, "files": ["a.go"]}`, 1}},
		},
		{
			name:   "markdown fence",
			input:  "Result:\n```json\n{\n  \"a\": [1, 2.5e3, -0.1],\n  \"b\": null\n}\n```\n",
			values: []wantValue{{"{\n  \"a\": [1, 2.5e3, -0.1],\n  \"b\": null\n}", 3}},
		},
		{
			name:   "log line prefix",
			input:  `[INFO] {"a":1}`,
			values: []wantValue{{`{"a":1}`, 1}},
			errs:   []wantErr{{ErrMalformed, 1, 1}},
		},
		{
			name:   "brackets and escaped quotes in strings",
			input:  `x {"s":"}{][\"\\","t":"[{"} y`,
			values: []wantValue{{`{"s":"}{][\"\\","t":"[{"}`, 1}},
		},
		{
			name:   "unicode escapes and surrogate pairs",
			input:  `{"e":"\u00e9 \ud83d\ude00 \uD83D\uDE00 \/\b\f\n\r\t","raw":"é😀"}`,
			values: []wantValue{{`{"e":"\u00e9 \ud83d\ude00 \uD83D\uDE00 \/\b\f\n\r\t","raw":"é😀"}`, 1}},
		},
		{
			name:   "nested objects and arrays",
			input:  `{"a":{"b":[{"c":[]},{}],"d":[[1],[2,[3]]]}}`,
			values: []wantValue{{`{"a":{"b":[{"c":[]},{}],"d":[[1],[2,[3]]]}}`, 1}},
		},
		{
			name:   "top-level array with every kind of value",
			input:  `[1, "two", null, true, false, {}, [], -0, 0.5, 1E+5, -2e-3, 0e1, 0E-2]`,
			values: []wantValue{{`[1, "two", null, true, false, {}, [], -0, 0.5, 1E+5, -2e-3, 0e1, 0E-2]`, 1}},
		},
		{
			name:   "two values in order",
			input:  "{\"a\":1}\n{\"b\":2}\n",
			values: []wantValue{{`{"a":1}`, 1}, {`{"b":2}`, 2}},
		},
		{
			name:   "malformed then valid",
			input:  `{see below} then {"ok":true}`,
			values: []wantValue{{`{"ok":true}`, 1}},
			errs:   []wantErr{{ErrMalformed, 1, 1}},
		},
		{
			name:   "valid value inside a malformed candidate",
			input:  `[see {"a":1}]`,
			values: []wantValue{{`{"a":1}`, 1}},
			errs:   []wantErr{{ErrMalformed, 1, 1}},
		},
		{
			name:   "closed element of a malformed array",
			input:  `[1, {"a":1}, x]`,
			values: []wantValue{{`{"a":1}`, 1}},
			errs:   []wantErr{{ErrMalformed, 13, 1}},
		},
		{
			name:   "brace inside quoted prose",
			input:  `He said "{" and then {"a":1}`,
			values: []wantValue{{`{"a":1}`, 1}},
			errs:   []wantErr{{ErrMalformed, 23, 1}},
		},
		{
			name:  "mismatched closer",
			input: `{"a":1]`,
			errs:  []wantErr{{ErrMalformed, 6, 1}},
		},
		{
			name:  "bad numbers",
			input: `[01] [-] [1.] [1e] [1e+] [.5] [+1]`,
			errs: []wantErr{
				{ErrMalformed, 2, 1}, {ErrMalformed, 7, 1}, {ErrMalformed, 12, 1},
				{ErrMalformed, 17, 1}, {ErrMalformed, 23, 1}, {ErrMalformed, 26, 1},
				{ErrMalformed, 31, 1},
			},
		},
		{
			name:  "bad literals and escapes",
			input: `[tru] [nul,] {"a":"\x"} {"a":"\u12G4"}`,
			errs: []wantErr{
				{ErrMalformed, 4, 1}, {ErrMalformed, 10, 1}, {ErrMalformed, 20, 1},
				{ErrMalformed, 34, 1},
			},
		},
		{
			name:  "raw control character in string",
			input: "{\"a\":\"x\ty\"}",
			errs:  []wantErr{{ErrMalformed, 7, 1}},
		},
		{
			name:  "structural errors",
			input: `{"a" 1} {"a":1,} [1,] {1:2} [1 2]`,
			errs: []wantErr{
				{ErrMalformed, 5, 1}, {ErrMalformed, 15, 1}, {ErrMalformed, 20, 1},
				{ErrMalformed, 23, 1}, {ErrMalformed, 31, 1},
			},
		},
		{
			name:   "error line in a multi-line candidate",
			input:  "ok\n{\n  \"a\": nope\n}\n{\"b\":2}",
			values: []wantValue{{`{"b":2}`, 5}},
			errs:   []wantErr{{ErrMalformed, 13, 3}},
		},
		{
			name:   "depth exactly at the limit",
			opts:   Options{MaxDepth: 3},
			input:  `[[[1]]]`,
			values: []wantValue{{`[[[1]]]`, 1}},
		},
		{
			name:   "too deep then a later value",
			opts:   Options{MaxDepth: 3},
			input:  "[[[[1]]]]\n{\"x\":1}",
			values: []wantValue{{`{"x":1}`, 2}},
			errs:   []wantErr{{ErrTooDeep, 3, 1}},
		},
		{
			name:   "too deep skips brackets in strings",
			opts:   Options{MaxDepth: 2},
			input:  `[{"k":["]]]\"{"]}] {"z":0}`,
			values: []wantValue{{`{"z":0}`, 1}},
			errs:   []wantErr{{ErrTooDeep, 6, 1}},
		},
		{
			name:   "size exactly at the limit",
			opts:   Options{MaxBytes: 7},
			input:  `{"a":1}`,
			values: []wantValue{{`{"a":1}`, 1}},
		},
		{
			name:   "too large then a later value",
			opts:   Options{MaxBytes: 10},
			input:  "{\"a\":\"0123456789\"}\n{\"b\":1}",
			values: []wantValue{{`{"b":1}`, 2}},
			errs:   []wantErr{{ErrTooLarge, 10, 1}},
		},
		{
			name:   "too large then too deep is reported once",
			opts:   Options{MaxBytes: 8, MaxDepth: 3},
			input:  `{"aaaaaaaa":[[[[1]]]]} {"b":1}`,
			values: []wantValue{{`{"b":1}`, 1}},
			errs:   []wantErr{{ErrTooLarge, 8, 1}},
		},
		{
			name:   "too large ends at its first syntax error",
			opts:   Options{MaxBytes: 8},
			input:  "{\"a\":\"0123456789\n{\"b\":1}",
			values: []wantValue{{`{"b":1}`, 2}},
			errs:   []wantErr{{ErrTooLarge, 8, 1}},
		},
		{
			name:  "too large and unterminated leaves no tail",
			opts:  Options{MaxBytes: 5},
			input: `{"a":"0123456789`,
			errs:  []wantErr{{ErrTooLarge, 5, 1}},
		},
		{
			name:  "unterminated value at end",
			input: `text {"a": [1, 2`,
			tail:  `{"a": [1, 2`,
		},
		{
			name:  "unterminated string at end",
			input: "```json\n{\"summary\": \"cut off mid-sent",
			tail:  `{"summary": "cut off mid-sent`,
		},
		{
			name:   "LF line numbers",
			input:  "one\ntwo\n{\"x\":1}\n\n[2]\n",
			values: []wantValue{{`{"x":1}`, 3}, {`[2]`, 5}},
		},
		{
			name:   "CRLF line numbers",
			input:  "one\r\ntwo\r\n{\"x\":\r\n1}\r\n\r\n[2]\r\n[x]\r\n",
			values: []wantValue{{"{\"x\":\r\n1}", 3}, {`[2]`, 6}},
			errs:   []wantErr{{ErrMalformed, 29, 7}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAllModes(t, []byte(tt.input), tt.opts)
			checkValues(t, tt.input, got.Values, tt.values)
			checkErrors(t, got.Errs, tt.errs)
			if string(got.Tail) != tt.tail || (tt.tail == "") != (got.Tail == nil) {
				t.Errorf("tail = %q, want %q", got.Tail, tt.tail)
			}
			checkStats(t, got, int64(len(tt.input)))
		})
	}
}

// checkValues compares values with want, locating each expected value in
// input after the end of the previous one to derive its offset.
func checkValues(t *testing.T, input string, got []Value, want []wantValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d values %s, want %d", len(got), valueList(got), len(want))
	}
	from := 0
	for i, w := range want {
		k := strings.Index(input[from:], w.data)
		if k < 0 {
			t.Fatalf("bad test: %q not in input after offset %d", w.data, from)
		}
		off := int64(from + k)
		from += k + len(w.data)
		g := got[i]
		if string(g.Data) != w.data || g.Offset != off || g.Line != w.line {
			t.Errorf("value %d = %q at offset %d line %d, want %q at offset %d line %d",
				i, g.Data, g.Offset, g.Line, w.data, off, w.line)
		}
	}
}

func checkErrors(t *testing.T, got []*Error, want []wantErr) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Offset != w.off || g.Line != w.line || g.Msg == "" {
			t.Errorf("error %d = %v, want %s at offset %d line %d", i, g, w.kind, w.off, w.line)
		}
	}
}

// checkStats checks the counters against the values and errors reported.
func checkStats(t *testing.T, r result, scanned int64) {
	t.Helper()
	want := Stats{Scanned: scanned, Values: int64(len(r.Values))}
	for _, v := range r.Values {
		want.ValueBytes += int64(len(v.Data))
	}
	for _, e := range r.Errs {
		if e.Kind == ErrMalformed {
			want.Errors++
		} else {
			want.Overflows++
		}
	}
	if r.Stats != want {
		t.Errorf("stats = %+v, want %+v", r.Stats, want)
	}
}

func valueList(vs []Value) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(string(v.Data))
		b.WriteByte(' ')
	}
	return b.String()
}

// TestClaudeTranscript scans a Claude stream-json transcript: every line is
// one object, including the result whose text embeds a fenced handoff.
func TestClaudeTranscript(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "claude_stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := scanAllModes(t, input, Options{})
	if len(got.Errs) != 0 || got.Tail != nil {
		t.Fatalf("errors %v, tail %q", got.Errs, got.Tail)
	}
	lines := bytes.Split(bytes.TrimRight(input, "\n"), []byte("\n"))
	if len(got.Values) != len(lines) {
		t.Fatalf("got %d values, want one per line (%d)", len(got.Values), len(lines))
	}
	off := int64(0)
	for i, line := range lines {
		v := got.Values[i]
		if !bytes.Equal(v.Data, line) || v.Line != i+1 || v.Offset != off {
			t.Errorf("value %d = %q at line %d offset %d, want line %d offset %d", i, v.Data, v.Line, v.Offset, i+1, off)
		}
		off += int64(len(line)) + 1
	}
}

// TestAgentOutput scans a fixture of prose, log lines and fences and
// checks the values found against the fixture's expectations.
func TestAgentOutput(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "agent_output.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := scanAllModes(t, input, Options{})
	want := []wantValue{
		{`{"step":"plan","ok":true}`, 3},
		{`{"path": "internal/x.go", "lines": [1, 2]}`, 4},
		{"{\n  \"success\": true,\n  \"summary\": \"Fixed the {flaky} test; see [notes].\",\n  \"files_changed\": [\"a.go\", \"b_test.go\"]\n}", 11},
	}
	checkValues(t, string(input), got.Values, want)
	checkErrors(t, got.Errs, []wantErr{
		{ErrMalformed, 1, 1},   // [INFO]
		{ErrMalformed, 27, 2},  // [WARN]
		{ErrMalformed, 207, 6}, // "{ in it"
		{ErrMalformed, 220, 7}, // [bracket]
	})
	if got.Tail != nil {
		t.Errorf("tail = %q, want none", got.Tail)
	}
}

func TestWriteAfterClose(t *testing.T) {
	var n int
	s := NewScanner(Options{}, func(Value) { n++ }, nil)
	s.Write([]byte(`{"a":1}`))
	if tail := s.Close(); tail != nil {
		t.Fatalf("tail = %q", tail)
	}
	if k, err := s.Write([]byte(`{"b":2}`)); k != 7 || err != nil {
		t.Fatalf("Write after Close = %d, %v", k, err)
	}
	if n != 1 || s.Stats().Scanned != 7 || s.Close() != nil {
		t.Errorf("values %d, stats %+v after writing past Close", n, s.Stats())
	}
}

func TestDataIsACopy(t *testing.T) {
	input := []byte(`{"a":1}`)
	values, _, _ := Scan(input, Options{})
	input[2] = 'X'
	if len(values) != 1 || string(values[0].Data) != `{"a":1}` {
		t.Fatalf("value changed with its input: %s", valueList(values))
	}
}

func TestErrorStrings(t *testing.T) {
	tests := []struct {
		kind ErrorKind
		want string
	}{
		{ErrMalformed, "malformed"},
		{ErrTooLarge, "too large"},
		{ErrTooDeep, "too deep"},
		{ErrorKind(9), "ErrorKind(9)"},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.want {
			t.Errorf("%d.String() = %q, want %q", int(tt.kind), got, tt.want)
		}
	}
	_, errs, _ := Scan([]byte("\n[\x01]"), Options{})
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	const want = "json malformed at line 2 (offset 2): invalid character 0x01 looking for beginning of value"
	if got := errs[0].Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestErrorNamesCharacter checks that a malformed candidate's message
// read against the whole output names the character at fault, not the
// first byte of its encoding, and that the error says where the
// candidate began.
func TestErrorNamesCharacter(t *testing.T) {
	_, errs, _ := Scan([]byte("x {\"a\":\u00a01}"), Options{})
	if len(errs) != 1 {
		t.Fatalf("errors = %v", errs)
	}
	in := []byte("x {\"a\":\u00a01}")
	if want := "invalid character '\u00a0' (U+00A0)"; !strings.Contains(errs[0].MsgIn(in), want) {
		t.Errorf("MsgIn = %q, want it to contain %q", errs[0].MsgIn(in), want)
	}
	if want := "invalid character 0xc2"; !strings.Contains(errs[0].Msg, want) {
		t.Errorf("Msg = %q, want it to contain %q (the byte: a chunk may not hold the rest)", errs[0].Msg, want)
	}
	if errs[0].Start != 2 || errs[0].Offset != 7 {
		t.Errorf("Start, Offset = %d, %d, want 2, 7", errs[0].Start, errs[0].Offset)
	}
}
