package handoff

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// feedStream writes output to a Stream in random pieces and judges it.
func feedStream(t *testing.T, output []byte, schema *Schema, opts Options, window int, seed uint64) Result {
	t.Helper()
	s := NewStream(schema, opts, window)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b9))
	for len(output) > 0 {
		n := min(len(output), 1+r.IntN(4096))
		if got, err := s.Write(output[:n]); got != n || err != nil {
			t.Fatalf("Write = %d, %v", got, err)
		}
		output = output[n:]
	}
	return s.Result()
}

// TestStreamSmallOutputIsCheck: output that fits in the window is judged
// exactly as Check judges it, whatever the pieces it arrives in.
func TestStreamSmallOutputIsCheck(t *testing.T) {
	schema := mustSchema(t, "plan.json")
	files, err := filepath.Glob("testdata/outputs/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no outputs: %v", err)
	}
	for _, f := range files {
		output, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{Repair: true}, {Repair: false}, {Repair: true, AcceptTruncated: true}, {Repair: true, Coerce: true}} {
			want := Check(output, schema, opts)
			for seed := range uint64(3) {
				got := feedStream(t, output, schema, opts, DefaultWindow, seed)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %+v seed %d:\nstream %+v\ncheck  %+v", filepath.Base(f), opts, seed, got, want)
				}
			}
		}
	}
}

// TestStreamLongOutput: past the window, the values of the whole output are
// still found, repair and diagnosis look at the end of the output, and
// diagnoses speak of the whole output.
func TestStreamLongOutput(t *testing.T) {
	schema := mustSchema(t, "plan.json")
	const window = 4 << 10
	logLines := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("[INFO] building package ")
			b.WriteString(strings.Repeat("x", i%50))
			b.WriteString(" {see below}\n")
		}
		return b.String()
	}
	good := `{"tasks": [{"id": "1", "title": "parse"}], "success": true}`
	other := `{"tasks": [{"id": "2", "title": "lex"}], "success": false}`
	coercible := `{"tasks": {"id": "1", "title": "parse"}, "success": "true"}`
	tests := []struct {
		name    string
		output  string
		opts    Options
		ok      bool
		json    string
		repairs []string
		class   Class
		line    int
	}{
		{name: "answer after a long log", output: logLines(2000) + good + "\n", opts: Options{Repair: true},
			ok: true, json: compact(t, good)},
		{name: "answer early, then a long log", output: good + "\n" + logLines(2000), opts: Options{Repair: true},
			ok: true, json: compact(t, good)},
		{name: "the last of two valid answers", output: good + "\n" + logLines(2000) + other + "\n" + logLines(10), opts: Options{Repair: true},
			ok: true, json: compact(t, other)},
		{name: "a valid answer beats a later one that fails the schema", output: good + "\n" + logLines(2000) + `{"tasks": []}` + "\n",
			opts: Options{Repair: true}, ok: true, json: compact(t, good)},
		{name: "a broken answer at the end is repaired", output: logLines(2000) + `{'tasks': [{'id': '1', 'title': 'parse',}], 'success': True}`,
			opts: Options{Repair: true}, ok: true, json: compact(t, good), repairs: []string{"prose", "single_quotes", "trailing_comma", "python_literals"}},
		{name: "no JSON at all", output: logLines(3000), opts: Options{Repair: true}, class: ClassEmpty},
		{name: "cut off at the end", output: logLines(2000) + `{"tasks": [{"id": "1", "title": "pa`, opts: Options{Repair: true},
			class: ClassTruncated, line: 2001},
		{name: "an early value that fails the schema, nothing after", output: `{"tasks": []}` + "\n" + logLines(2000),
			opts: Options{Repair: true}, class: ClassSchema},
		{name: "over max_bytes", output: logLines(2000), opts: Options{MaxBytes: 10000}, class: ClassTooLarge},
		{name: "an early value coerced, nothing after", output: coercible + "\n" + logLines(2000), opts: Options{Repair: true, Coerce: true},
			ok: true, json: compact(t, good), repairs: []string{"coerce_wrap_array@/tasks", "coerce_string_to_boolean@/success"}},
		{name: "a value at the end coerced", output: logLines(2000) + coercible + "\n", opts: Options{Repair: true, Coerce: true},
			ok: true, json: compact(t, good), repairs: []string{"coerce_wrap_array@/tasks", "coerce_string_to_boolean@/success"}},
		{name: "an early value not coerced when coercion is off", output: coercible + "\n" + logLines(2000), opts: Options{Repair: true},
			class: ClassSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.output) <= 2*window {
				t.Fatalf("output of %d bytes does not outgrow the window", len(tt.output))
			}
			r := feedStream(t, []byte(tt.output), schema, tt.opts, window, 7)
			if r.OK != tt.ok {
				t.Fatalf("OK = %v, diagnosis %+v", r.OK, r.Diagnosis)
			}
			if tt.ok {
				if string(r.JSON) != tt.json {
					t.Errorf("JSON = %s, want %s", r.JSON, tt.json)
				}
				if tt.repairs != nil && !sameSet(r.Repairs, tt.repairs) {
					t.Errorf("Repairs = %v, want %v", r.Repairs, tt.repairs)
				}
				return
			}
			d := r.Diagnosis
			if d.Class != tt.class {
				t.Fatalf("class %s, want %s: %s", d.Class, tt.class, d.Details)
			}
			if tt.line > 0 && d.Line != tt.line {
				t.Errorf("Line = %d, want %d (counted from the start of the output)", d.Line, tt.line)
			}
			if tt.class != ClassTooLarge {
				if d.OutputSize != int64(len(tt.output)) {
					t.Errorf("OutputSize = %d, want %d", d.OutputSize, len(tt.output))
				}
				if want := tt.output[:sampleLen]; d.OutputSample != want {
					t.Errorf("OutputSample = %q, want the first %d bytes %q", d.OutputSample, sampleLen, want)
				}
			}
			if tt.class == ClassEmpty && !strings.Contains(d.Details, "in the "+strconv.Itoa(len(tt.output))+" bytes") {
				t.Errorf("Details = %q", d.Details)
			}
		})
	}
}

// TestStreamMemoryIsBounded: what a Stream holds stays within a window and
// a half plus one piece (64 KiB at least), however much is written, and its
// buffer is allocated once it is a quarter of the window long, not grown
// again and again.
func TestStreamMemoryIsBounded(t *testing.T) {
	const window = 64 << 10
	s := NewStream(nil, Options{Repair: true}, window)
	line := []byte("[INFO] compiling a package of the project, nothing to see {here}\n")
	piece := bytes.Repeat(line, 512)
	bound := window + window/2 + max(len(piece), 64<<10)
	buffers := 0
	for range 2000 {
		before := cap(s.buf)
		_, _ = s.Write(piece)
		if cap(s.buf) != before && cap(s.buf) > window/4 {
			buffers++
		}
		if cap(s.buf) > bound {
			t.Fatalf("holds a buffer of %d bytes after %d written, bound %d", cap(s.buf), s.Len(), bound)
		}
	}
	if buffers != 1 {
		t.Errorf("%d buffers bigger than a quarter of the window, want 1", buffers)
	}
	_, _ = s.Write([]byte(`{"done": true}`))
	r := s.Result()
	if !r.OK || string(r.JSON) != `{"done":true}` {
		t.Fatalf("Result = %+v", r)
	}
}

// TestStreamPieceBiggerThanTheWindow: a single piece longer than the
// window, before and after the output outgrew it, is taken whole.
func TestStreamPieceBiggerThanTheWindow(t *testing.T) {
	const window = 4 << 10
	log := bytes.Repeat([]byte("[INFO] a line of log {x}\n"), 2000) // 50 KB
	for _, tc := range []struct {
		name   string
		pieces [][]byte
		want   string
	}{
		{"the first piece", [][]byte{log, []byte(`{"done": 1}`)}, `{"done":1}`},
		{"after a small one", [][]byte{[]byte("hi\n"), log, []byte(`{"done": 2}`)}, `{"done":2}`},
		{"after the output outgrew the window", [][]byte{log[:3*window], log, append(log, `{"done": 3}`...)}, `{"done":3}`},
		{"the answer inside the big piece", [][]byte{log[:100], append(append(log[:len(log):len(log)], `{"done": 4}`+"\n"...), log...)}, `{"done":4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(nil, Options{Repair: true}, window)
			for _, p := range tc.pieces {
				if n, err := s.Write(p); n != len(p) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if r := s.Result(); !r.OK || string(r.JSON) != tc.want {
				t.Fatalf("Result = %+v, want %s", r, tc.want)
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
