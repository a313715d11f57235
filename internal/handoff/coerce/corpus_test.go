package coerce_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// corpusCase is one schema miss of testdata/corpus: an agent's output
// that parses (with repair) but fails its schema, and either the value
// coercion must turn it into, with the repairs the handoff then records,
// or the statement that it must not be coerced, and why.
type corpusCase struct {
	name    string
	schema  *handoff.Schema
	input   []byte
	want    []byte   // nil: must not be coerced
	repairs []string // with want
}

// loadCorpus reads every case of testdata/corpus.
func loadCorpus(tb testing.TB) []corpusCase {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	var cases []corpusCase
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		c := corpusCase{name: strings.TrimSuffix(filepath.Base(f), ".txtar")}
		sections := map[string][]byte{}
		for _, file := range ar.Files {
			sections[file.Name] = file.Data
		}
		if c.schema, err = handoff.CompileSchemaBytes(c.name+".schema.json", sections["schema.json"]); err != nil {
			tb.Fatalf("%s: %v", c.name, err)
		}
		c.input = sections["input"]
		_, notCoerced := sections["not_coerced"]
		c.want = sections["coerced.json"]
		if notCoerced == (c.want != nil) || c.input == nil {
			tb.Fatalf("%s: want input and exactly one of coerced.json and not_coerced", c.name)
		}
		c.repairs = strings.Fields(string(sections["repairs"]))
		cases = append(cases, c)
	}
	return cases
}

// corpusFigures are what the corpus measures.
type corpusFigures struct {
	misses   int // cases that fail without coercion: each would cost a retry
	saves    int // of those, cases coercion turns into the expected value
	wrong    int // accepted values that are not the expected one
	refused  int // must-not cases left failing, as they should be
	mustNots int
}

// runCorpus judges every case with coercion off and on, and checks each
// against its expectation; errors go to tb when check is set.
func runCorpus(tb testing.TB, cases []corpusCase, check bool) corpusFigures {
	var f corpusFigures
	fail := func(format string, args ...any) {
		if check {
			tb.Errorf(format, args...)
		}
	}
	for _, c := range cases {
		off := handoff.Check(c.input, c.schema, handoff.Options{Repair: true})
		if off.OK || off.Diagnosis.Class != handoff.ClassSchema {
			fail("%s: without coercion the case is not a schema miss: ok=%v %+v", c.name, off.OK, off.Diagnosis)
			continue
		}
		f.misses++
		on := handoff.Check(c.input, c.schema, handoff.Options{Repair: true, Coerce: true})
		if c.want == nil {
			f.mustNots++
			if on.OK {
				f.wrong++
				fail("%s: coerced to %s (repairs %q), but must not be", c.name, on.JSON, on.Repairs)
				continue
			}
			f.refused++
			if on.Diagnosis.Class != handoff.ClassSchema {
				fail("%s: class %s, want schema", c.name, on.Diagnosis.Class)
			}
			continue
		}
		if !on.OK {
			fail("%s: not coerced: %s", c.name, on.Diagnosis.Summary())
			continue
		}
		if !sameJSON(tb, on.JSON, c.want) {
			f.wrong++
			fail("%s: coerced to %s, want %s", c.name, on.JSON, bytes.TrimSpace(c.want))
			continue
		}
		if !reflect.DeepEqual(on.Repairs, c.repairs) {
			fail("%s: repairs %q, want %q", c.name, on.Repairs, c.repairs)
			continue
		}
		f.saves++
	}
	return f
}

// TestCorpus runs the corpus of schema misses and reports how many of the
// retries they would cost coercion saves, and that it accepts no wrong
// value.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 60 {
		t.Fatalf("the corpus has %d cases, want at least 60", len(cases))
	}
	f := runCorpus(t, cases, true)
	t.Logf("corpus: %d schema misses (each a retry); coercion saves %d (%.0f%%); %d of %d must-not cases refused; wrong values accepted: %d",
		f.misses, f.saves, 100*float64(f.saves)/float64(f.misses), f.refused, f.mustNots, f.wrong)
	if f.wrong != 0 {
		t.Errorf("coercion accepted %d wrong values", f.wrong)
	}
}

// BenchmarkCorpus measures the time to judge the whole corpus with
// coercion on, and reports the corpus figures as metrics: the retries
// saved, the misses, and the wrong values accepted (which must be 0).
func BenchmarkCorpus(b *testing.B) {
	cases := loadCorpus(b)
	var f corpusFigures
	for b.Loop() {
		f = runCorpus(b, cases, false)
	}
	b.ReportMetric(float64(f.saves), "saved_retries")
	b.ReportMetric(float64(f.misses), "misses")
	b.ReportMetric(float64(f.wrong), "wrong_accepts")
}

// sameJSON reports whether two JSON texts hold the same value, numbers
// compared by value (7.0 is 7, -2.5e1 is -25).
func sameJSON(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	return reflect.DeepEqual(normalise(tb, a), normalise(tb, b))
}

func normalise(tb testing.TB, data []byte) any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("%s: %v", data, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(string(x))
			if !ok {
				tb.Fatalf("number %s", x)
			}
			return r.RatString()
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	return walk(v)
}
