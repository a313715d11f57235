package ghsummary

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

var update = flag.Bool("update", false, "rewrite the golden summaries in testdata")

// loadRun reads a history.Report fixture (the shape of inspect --json).
func loadRun(t *testing.T, name, outcome string) Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep history.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return Run{Report: &rep, Dir: "my project", Outcome: outcome, Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
}

// TestMarkdownGolden compares each fixture's summary with its golden file
// line by line.
func TestMarkdownGolden(t *testing.T) {
	for _, tc := range []struct{ fixture, outcome string }{
		{"hostile", OutcomeFailed},
		{"succeeded", OutcomeSucceeded},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			got := Markdown(loadRun(t, tc.fixture, tc.outcome))
			golden := filepath.Join("testdata", tc.fixture+".md")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (refresh with -update)", err)
			}
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := 0; i < max(len(gl), len(wl)); i++ {
				var g, w string
				if i < len(gl) {
					g = gl[i]
				}
				if i < len(wl) {
					w = wl[i]
				}
				if g != w {
					t.Errorf("line %d:\n got %q\nwant %q", i+1, g, w)
				}
			}
		})
	}
}

// TestMarkdownHostileStructure checks what hostile text must not do to
// the summary, independently of the golden: every table row keeps its
// seven cell separators, every code block that opens closes with the same
// fence, and no raw HTML tag or link survives outside code.
func TestMarkdownHostileStructure(t *testing.T) {
	md := Markdown(loadRun(t, "hostile", OutcomeFailed))
	inFence := ""
	rows := 0
	for i, line := range strings.Split(md, "\n") {
		switch {
		case inFence != "":
			if line == inFence {
				inFence = ""
			} else if strings.HasPrefix(line, "```") && strings.Trim(line, "`") == "" && len(line) >= len(inFence) {
				t.Errorf("line %d: %q closes the fence %q early", i+1, line, inFence)
			}
			continue
		case strings.HasPrefix(line, "```"):
			inFence = line
			continue
		case strings.HasPrefix(line, "|"):
			rows++
			if n := unescapedPipes(line); n != 7 {
				t.Errorf("line %d has %d cell separators, want 7: %q", i+1, n, line)
			}
		}
		for _, bad := range []string{"<", "](", "@org"} {
			if unescaped(line, bad) {
				t.Errorf("line %d holds an unescaped %q outside code: %q", i+1, bad, line)
			}
		}
		if strings.ContainsAny(line, "\r\x1b") {
			t.Errorf("line %d holds a control character: %q", i+1, line)
		}
	}
	if inFence != "" {
		t.Errorf("code block %q never closed", inFence)
	}
	// header, separator, plan, review, review/1/code, review/1/ok, fix, each, each[b|`x`]
	if rows != 9 {
		t.Errorf("table has %d rows, want 9", rows)
	}
}

// unescaped reports whether s occurs in line without a backslash before
// it.
func unescaped(line, s string) bool {
	for i := 0; i+len(s) <= len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(line[i:], s) {
			return true
		}
	}
	return false
}

// unescapedPipes counts the pipes of a table row that GFM splits cells at.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"a|b", `a\|b`},
		{"<b>x</b>", `\<b\>x\<\/b\>`},
		{"line\nbreak\r\nand\ttab", "line break  and tab"},
		{"[x](y)", `\[x\]\(y\)`},
		{"@team *bold* _it_", `\@team \*bold\* \_it\_`},
		{"\x1b[31mred\u202e", `\[31mred`},
		{"ünïcode ok", "ünïcode ok"},
	} {
		if got := text(tc.in, maxCell); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := text(strings.Repeat("a", 10), 4); got != "aaaa…" {
		t.Errorf("cut: %q", got)
	}
}

func TestCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plan", "`plan`"},
		{"a`b", "``a`b``"},
		{"`x`", "`` `x` ``"},
		{"a``b```c", "````a``b```c````"},
	} {
		if got := code(tc.in); got != tc.want {
			t.Errorf("code(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBlockCut(t *testing.T) {
	got := block(strings.Repeat("é", maxBlock))
	if !strings.HasSuffix(got, "(cut at 4000 bytes; see cadence inspect)") {
		t.Fatalf("not cut: ...%q", got[len(got)-50:])
	}
	body := strings.TrimSuffix(got, "\n… (cut at 4000 bytes; see cadence inspect)")
	if len(body) > maxBlock || !strings.HasPrefix(body, "é") || strings.ContainsRune(body, '\uFFFD') {
		t.Errorf("cut body: %d bytes", len(body))
	}
}

// TestLimits: a run with a thousand failed map items, each with a long
// hostile error, still gives a summary under GitHub's 1 MiB, at most ten
// annotations of a level and one that counts the rest.
func TestLimits(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	step := history.StepReport{ID: "fix", Status: "failed", ItemCounts: map[checkpoint.StepStatus]int{"failed": 1200}}
	for i := range 1200 {
		step.Items = append(step.Items, history.ItemReport{Key: fmt.Sprintf("item-%d", i), Status: "failed", AttemptsUsed: 1, MaxAttempts: 1,
			Attempts: []history.AttemptReport{{N: 1, Status: "failed", Class: "schema", StartedAt: t0, FinishedAt: &t1,
				Error: strings.Repeat("`|<x>\n", 1000), Details: `{"Details": "` + strings.Repeat("y", 5000) + `"}`}}})
	}
	rep := &history.Report{Run: history.RunReport{ID: "r", StartedAt: t0, FinishedAt: &t1}, Steps: []history.StepReport{step}}
	r := Run{Report: rep, Dir: ".", Outcome: OutcomeFailed, Now: t1}
	md := Markdown(r)
	if len(md) >= 1<<20 {
		t.Errorf("summary of %d bytes, GitHub takes at most 1 MiB", len(md))
	}
	for _, want := range []string{"701 more rows; see: `cadence inspect .`", "1170 more failed; see: `cadence inspect`"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	anns := Annotations(r)
	if len(anns) != 11 || anns[10].Message != "1190 more steps failed; see cadence inspect" {
		t.Errorf("%d annotations, last %+v", len(anns), anns[len(anns)-1])
	}
}

// TestDiagnosed: the attempts whose details the summary needs are the
// last of each failed unit, a map item's by its step and key, and the
// details read for them land on those attempts only.
func TestDiagnosed(t *testing.T) {
	r := loadRun(t, "hostile", OutcomeFailed)
	want := []history.AttemptRef{{Step: "fix", N: 2}, {Step: "each", Item: "b|`x`", N: 1}}
	got := Diagnosed(r.Report)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Diagnosed = %v, want %v", got, want)
	}
	SetDetails(r.Report, map[history.AttemptRef]string{{Step: "each", Item: "b|`x`", N: 1}: `{"Details": "item diagnosis"}`})
	var each history.StepReport
	for _, s := range r.Report.Steps {
		if s.ID == "each" {
			each = s
		}
	}
	if d := each.Items[1].Attempts[0].Details; d != `{"Details": "item diagnosis"}` {
		t.Errorf("item attempt details %q", d)
	}
	if d := each.Items[0].Attempts[0].Details; d != "" {
		t.Errorf("another item's attempt got details %q", d)
	}
	if !strings.Contains(Markdown(r), "exit 3\n\nitem diagnosis\n") {
		t.Errorf("summary lacks the item's diagnosis:\n%s", Markdown(r))
	}
}
