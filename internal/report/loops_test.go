package report

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/history/historytest"
)

// loopRunReport writes historytest.LoopRun to a fresh project and reads it
// back as the report does.
func loopRunReport(t testing.TB) (string, *history.Report) {
	t.Helper()
	dir := t.TempDir()
	historytest.LoopRun(t, dir)
	rep, err := history.Inspect(context.Background(), dir, "", "", true)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep
}

// TestRenderLoopsAndGates: the report of a run with a loop of 3
// iterations and two gates draws one lane group per iteration, labelled
// with its loop, number and until, holding that iteration's inner steps;
// the loop's lane says how many iterations it ran; a decided gate shows
// its decision, who and the comment, a waiting one since when and the
// commands that answer it.
func TestRenderLoopsAndGates(t *testing.T) {
	dir, rep := loopRunReport(t)
	out := render(t, rep, Options{Dir: dir, Now: historytest.T0.Add(40 * time.Second)})
	timeline := out[strings.Index(out, `id="timeline"`):strings.Index(out, `id="totals"`)]

	groups := regexp.MustCompile(`(?s)<div class="iteration" data-loop="implement" data-iteration="(\d)"><div class="iterlbl">([^<]*)</div>(.*?)</div>\n`).FindAllStringSubmatch(timeline, -1)
	if len(groups) != 3 {
		t.Fatalf("%d iteration groups in the timeline, want 3:\n%s", len(groups), timeline)
	}
	lane := regexp.MustCompile(`<g class="lane"[^>]*><text x="4" y="14">([^<]*)<`)
	for i, tc := range []struct {
		label string
		lanes string
		bars  int
	}{
		{"implement · iteration 1 · until steps.code.output.approved was false", "implement/1/code implement/1/docs", 2},
		{"implement · iteration 2 · until steps.code.output.approved was false", "implement/2/code implement/2/docs", 1},
		{"implement · iteration 3 · until steps.code.output.approved was true", "implement/3/code implement/3/docs", 1},
	} {
		g := groups[i]
		if g[1] != string(rune('1'+i)) || g[2] != tc.label {
			t.Errorf("group %d: iteration %s labelled %q, want %d %q", i+1, g[1], g[2], i+1, tc.label)
		}
		var names []string
		for _, m := range lane.FindAllStringSubmatch(g[3], -1) {
			names = append(names, m[1])
		}
		if got := strings.Join(names, " "); got != tc.lanes {
			t.Errorf("group %d lanes %q, want %q", i+1, got, tc.lanes)
		}
		if got := strings.Count(g[3], `class="bar `); got != tc.bars {
			t.Errorf("group %d has %d attempt bars, want %d", i+1, got, tc.bars)
		}
		if !strings.Contains(g[3], "skipped · when steps.code.output.docs_changed was false") {
			t.Errorf("group %d does not say why docs was skipped", i+1)
		}
	}
	for _, want := range []string{
		`loop · 3 iterations · succeeded`,
		`class="wait approval"`,
		`approved by alice@ci: looks good; ship it`,
		`waiting for approval since 2026-11-02 09:00:31Z`,
	} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if got := strings.Count(timeline, `class="wait approval"`); got != 2 {
		t.Errorf("%d approval waits drawn, want 2 (one per gate)", got)
	}

	sections := out[strings.Index(out, "<h2>Steps</h2>"):]
	section := func(step string) string {
		i := strings.Index(sections, `data-step="`+step+`"`)
		if i < 0 {
			t.Fatalf("no section for step %s", step)
		}
		s := sections[i:]
		return s[:strings.Index(s, "</section>")]
	}
	for _, tc := range []struct {
		step  string
		wants []string
		nots  []string
	}{
		{"implement", []string{"<dt>iterations</dt><dd>3</dd>"}, nil},
		{"implement/1/code", []string{"schema", "--step implement/1/code --attempt 1"}, nil},
		{"signoff", []string{`<dd class="gate-decision">approved</dd>`, `<span class="gate-by">alice@ci</span>`, "2026-11-02 09:00:30Z",
			`<pre class="gate-comment">looks good; ship it</pre>`, "<dt>waited</dt><dd>13s</dd>",
			"<pre class=\"gate-prompt\">Review the plan and the diff.\nApprove to continue.</pre>"}, []string{"cadence approve"}},
		{"merge-gate", []string{`<dd class="gate-decision">waiting</dd>`, "<dt>reached</dt><dd>2026-11-02 09:00:31Z</dd>",
			"<dt>times out</dt><dd>2026-11-02 10:00:31Z</dd>", "<code>cadence approve merge-gate --comment TEXT</code>",
			"<code>cadence reject merge-gate --comment TEXT</code>", "9.0s so far"}, []string{"gate-comment"}},
	} {
		s := section(tc.step)
		for _, want := range tc.wants {
			if !strings.Contains(s, want) {
				t.Errorf("section %s lacks %q:\n%s", tc.step, want, s)
			}
		}
		for _, not := range tc.nots {
			if strings.Contains(s, not) {
				t.Errorf("section %s shows %q", tc.step, not)
			}
		}
	}
	// Totals: the loop's share of cost is its inner steps', not counted twice.
	if !regexp.MustCompile(`<a href="#s2">implement</a>.*?\$0\.0800.*?88\.9%`).MatchString(out) {
		t.Errorf("the totals row of implement does not show $0.0800 as 88.9%% of the cost")
	}
}
