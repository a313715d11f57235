package handoff

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusChunk is one chunk of a provenance corpus: real prose and code
// that holds no handoff (testdata/corpora/README.md).
type corpusChunk struct {
	Src  string `json:"src"`
	Text string `json:"text"`
}

// loadCorpora reads testdata/corpora/*.jsonl.gz, by corpus name.
func loadCorpora(t testing.TB) map[string][]corpusChunk {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "corpora", "*.jsonl.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpora in testdata/corpora (%v)", err)
	}
	out := map[string][]corpusChunk{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl.gz")
		for sc.Scan() {
			var c corpusChunk
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out[name] = append(out[name], c)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.Close()
	}
	return out
}

// corpusVerdict is what the pipeline made of one chunk under each schema:
// the JSON it accepted as the handoff, "" for none, and whether that was
// invented (see invented).
type corpusVerdict struct {
	Corpus     string `json:"corpus"`
	Index      int    `json:"index"`
	Src        string `json:"src"`
	None       string `json:"none"`
	Object     string `json:"object"`
	Required   string `json:"required"`
	Provenance string `json:"provenance,omitempty"`
	Repairs    string `json:"repairs,omitempty"`
	Invented   bool   `json:"invented"`
}

// invented reports whether an accepted handoff says something the text
// did not: it needed a repair beyond being cut out of its place (prose
// around it, a fence), or it was taken from prose. A JSON document written
// whole in a json or unlabelled fence (a tsconfig.json, a package.json in
// a book's sample) is what the text holds, verbatim, and is counted apart.
func invented(r Result) bool {
	if r.Provenance == ProvenanceProse {
		return true
	}
	for _, x := range r.Repairs {
		if x != "code_fence" && x != "prose" && x != "bom" {
			return true
		}
	}
	return false
}

// TestCorpusInventions runs the handoff pipeline, as a step runs it (repair
// and coercion on), over chunks of real documentation and agent messages
// that hold no handoff, and counts the handoffs it takes from them, and
// among them the invented ones (invented). The goals of SPEC §18: at most
// 1 in 100 invented against no schema or {"type": "object"}, none at all
// against a schema with required keys. With CADENCE_CORPUS_VERDICTS=FILE
// it writes every verdict to FILE, for scripts/provenance-table.py.
func TestCorpusInventions(t *testing.T) {
	schemas := policySchemas(t)
	opts := Options{Repair: true, Coerce: true}
	corpora := loadCorpora(t)
	names := make([]string, 0, len(corpora))
	for n := range corpora {
		names = append(names, n)
	}
	sort.Strings(names)
	var verdicts []corpusVerdict
	var table strings.Builder
	fmt.Fprintf(&table, "%-11s %6s %14s %16s %9s\n", "corpus", "chunks", "none (invented)", "object (invented)", "required")
	for _, name := range names {
		chunks := corpora[name]
		var none, object, required, noneInv, objectInv int
		for i, c := range chunks {
			v := corpusVerdict{Corpus: name, Index: i, Src: c.Src}
			out := []byte(c.Text)
			if r := Check(out, nil, opts); r.OK {
				none++
				v.None, v.Provenance, v.Repairs, v.Invented = string(r.JSON), string(r.Provenance), strings.Join(r.Repairs, ","), invented(r)
				if v.Invented {
					noneInv++
					t.Logf("%s #%d (%s): invented %s from %s (%s)", name, i, c.Src, r.JSON, r.Provenance, v.Repairs)
				}
			}
			if r := Check(out, schemas["object"], opts); r.OK {
				object++
				v.Object = string(r.JSON)
				if invented(r) {
					objectInv++
				}
			}
			if r := Check(out, schemas["required"], opts); r.OK {
				required++
				v.Required = string(r.JSON)
				t.Errorf("%s #%d (%s): a handoff with the required keys was invented: %s", name, i, c.Src, r.JSON)
			}
			verdicts = append(verdicts, v)
		}
		fmt.Fprintf(&table, "%-11s %6d %9d (%2d) %11d (%2d) %9d\n", name, len(chunks), none, noneInv, object, objectInv, required)
		for what, n := range map[string]int{"no schema": noneInv, `{"type": "object"}`: objectInv} {
			if n*100 > len(chunks) {
				t.Errorf("%s: %d of %d chunks became an invented handoff against %s: over 1 in 100", name, n, len(chunks), what)
			}
		}
	}
	t.Logf("handoffs taken from chunks that hold none (invented ones in brackets):\n%s", table.String())
	if path := os.Getenv("CADENCE_CORPUS_VERDICTS"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		enc := json.NewEncoder(f)
		for _, v := range verdicts {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
	}
}
