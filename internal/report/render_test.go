package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
)

func sec(s float64) *time.Time { return at(time.Duration(s * float64(time.Second))) }

// smallRun is a run of ten seconds: step implement fails its first
// attempt (0s-1s, schema), waits a 2s backoff, and succeeds on a follow-up
// (3s-4s) whose check passes; step review hits a usage limit (5s-5.5s)
// that lifts at 7s, then succeeds (7s-8s). The usage limit opened the
// agent's circuit (generation 0 to 1) and review #2 was its half-open
// trial (generation 2).
func smallRun() *history.Report {
	return &history.Report{
		Run: history.RunReport{ID: "r1", Status: "succeeded", Workflow: ".cadence/workflow.yaml", StartedAt: epoch, FinishedAt: sec(10), CostUSD: 0.04},
		Steps: []history.StepReport{
			{ID: "implement", Status: "succeeded", Agent: "sim", AttemptsUsed: 2, MaxAttempts: 3, CostUSD: 0.03, Turns: 6,
				InputTokens: 291, OutputTokens: 38, Attempts: []history.AttemptReport{
					{N: 1, Status: "failed", Kind: "initial", Class: "schema", Error: `schema: /: missing required field "success"`,
						StartedAt: epoch, FinishedAt: sec(1), DelayMS: ptr(int64(2000)), NextRetryAt: sec(3),
						FailedHandoff: ".cadence/failed_handoffs/r1/implement/1.json", Details: `{"Details": "stored diagnosis"}`},
					{N: 2, Status: "succeeded", Kind: "followup", StartedAt: *sec(3), FinishedAt: sec(4), Repairs: []string{"prose"},
						Checks: []history.CheckReport{{Name: "tests", Status: "passed", ExitCode: ptr(0), StartedAt: *sec(3.5), DurationMS: 500}}},
				}},
			{ID: "review", Status: "succeeded", Agent: "sim", AttemptsUsed: 1, MaxAttempts: 3, CostUSD: 0.01,
				Attempts: []history.AttemptReport{
					{N: 1, Status: "failed", Kind: "initial", Class: "transient", Error: "transient: API Error: 429", Uncounted: true,
						StartedAt: *sec(5), FinishedAt: sec(5.5), DelayMS: ptr(int64(1500)), RetryAfterMS: ptr(int64(1500)), NextRetryAt: sec(7),
						Details: `{"Details": "rate limited"}`},
					{N: 2, Status: "succeeded", Kind: "followup", StartedAt: *sec(7), FinishedAt: sec(8), Prompt: "Continue where you stopped.", CircuitGen: 2},
				}},
		},
		Circuits: []history.CircuitReport{{Agent: "sim", State: "closed"}},
	}
}

// writeRecord writes a failed-handoff record under dir.
func writeRecord(t testing.TB, dir, rel string, rec handoff.FailedRecord) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func render(t *testing.T, rep *history.Report, opts Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, rep, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestRenderFragments checks the markup of a small run piece by piece. The
// run lasts 10s and the plot is 1000px wide after a 190px label column, so
// one second is 100px and second s is at x = 190 + 100*s.
func TestRenderFragments(t *testing.T) {
	dir := t.TempDir()
	writeRecord(t, dir, ".cadence/failed_handoffs/r1/implement/1.json", handoff.FailedRecord{
		Class: "schema", Details: `The JSON does not match the schema: /: missing required field "success".`,
		Violations:     []handoff.Violation{{Pointer: "/", Keyword: "required", Expected: "success", Actual: "missing"}},
		OutputSample:   `{"files": ["a.go"]}`,
		FollowupPrompt: "Your JSON lacks success. Rewrite the complete, corrected JSON.",
	})
	out := render(t, smallRun(), Options{Dir: dir})
	for _, want := range []string{
		// The axis: 10s in steps of 1s.
		`<text x="190" y="13" text-anchor="middle">0</text>`,
		`<text x="290" y="13" text-anchor="middle">&#43;1s</text>`,
		`<text x="1190" y="13" text-anchor="middle">&#43;10s</text>`,
		// implement #1: 0s-1s, failed, linked to its diagnosis, labelled with its kind.
		`<a href="#f1"><rect class="bar failed initial" x="190" y="3" width="100" height="14"><title>#1 initial · failed · schema · 1.0s</title></rect><text class="bl" x="190" dx="3" y="13">initial</text></a>`,
		// Its backoff: 1s-3s.
		`<rect class="wait backoff" x="290" y="10" width="200" height="3"><title>backoff 2.0s after #1, delay 2.0s</title></rect><text class="wl" x="290" y="8">backoff</text>`,
		// implement #2: 3s-4s, and its check started at 3.5s.
		`<rect class="bar succeeded followup" x="490" y="3" width="100" height="14"><title>#2 followup · succeeded · 1.0s</title></rect>`,
		`<rect class="mark check passed" x="540" y="0" width="2" height="20"><title>#2: check tests passed, exit 0 in 500ms</title></rect>`,
		// review #1: 5s-5.5s, a usage limit that lifts at 7s: not counted.
		`<rect class="bar failed initial uncounted" x="690" y="3" width="50" height="14">`,
		`<rect class="wait usage" x="740" y="10" width="150" height="3"><title>usage limit (not counted against max_attempts) 1.5s after #1, delay 1.5s, provider asked 1.5s</title></rect>`,
		// The failure of implement #1, from its record.
		`<details class="attempt failed" id="f1"><summary><b>implement</b> #1 initial · failed · schema: /: missing required field &#34;success&#34;<span class="when">at &#43;0s, ran 1.0s</span></summary>`,
		`<pre class="diagnosis">The JSON does not match the schema: /: missing required field &#34;success&#34;.</pre>`,
		`<li><code>/: required (expected success, got missing)</code></li>`,
		`<pre class="sample">{&#34;files&#34;: [&#34;a.go&#34;]}</pre>`,
		`<h5>Sent next: the follow-up prompt</h5><pre class="followup">Your JSON lacks success. Rewrite the complete, corrected JSON.</pre>`,
		`<code>cadence inspect --run r1 --step implement --attempt 1</code>`,
		// review #1 has no record: the stored diagnosis, and the next prompt.
		`<pre class="diagnosis">rate limited</pre>`,
		`<h5>Sent next: prompt of attempt #2 (followup)</h5><pre class="followup">Continue where you stopped.</pre>`,
		// Per step: attempts used of max, repairs, cost, tokens, turns, shares.
		`<td>2/3</td><td>prose ×1</td><td class="n">$0.0300</td><td><span class="share"><i style="width:75%"></i></span>75%</td><td>291 in / 38 out</td><td class="n">6</td>`,
		// The usage limit opened the circuit from 5.5s to the trial at 7s.
		`<rect class="spell open" x="740" y="3" width="150" height="14">`,
		`<tr><td>sim</td><td>&#43;5.5s</td><td>review #1 transient</td><td>&#43;7.0s</td><td>review #2 succeeded</td></tr>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks\n\t%s", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", out[strings.Index(out, "<body>"):])
	}
}

// hostile is agent output and user data at its worst: markup that would
// run script, template syntax, and text in many scripts.
const hostile = `</script><script>window.pwned=1</script><img src=x onerror=alert(1)><svg onload=window.pwned=3>{{ .Steps.plan.Output }} naïve façade — 日本語 🚀 ‮gnp.exe` + "\x00"

// hostileRun is smallRun with hostile text in every field that agents,
// items or users control, and a failed-handoff record full of it under dir.
func hostileRun(t testing.TB, dir string) *history.Report {
	t.Helper()
	rep := smallRun()
	rep.Run.Workflow = hostile
	s := &rep.Steps[0]
	s.ID, s.Agent = "impl"+hostile, "sim"+hostile
	a := &s.Attempts[0]
	a.Error, a.Details, a.Class = hostile, `{"Details": `+mustJSON(hostile)+`}`, "schema"+hostile
	a.Repairs = []string{hostile}
	a.Checks = []history.CheckReport{{Name: hostile, Status: hostile, StartedAt: epoch}}
	rep.Steps[1].Attempts[1].Prompt = hostile
	rep.Steps[1].Attempts[0].Details = ""
	rep.Steps[1].Attempts[0].Error = hostile
	writeRecord(t, dir, a.FailedHandoff, handoff.FailedRecord{Details: hostile, OutputSample: hostile, FollowupPrompt: hostile,
		Violations: []handoff.Violation{{Pointer: hostile, Keyword: hostile}},
		Check:      &handoff.CheckFailure{Name: hostile, Command: hostile, Output: hostile}})
	rep.Steps = append(rep.Steps, history.StepReport{ID: "fix", Status: "failed", Agent: "sim", ItemCounts: map[checkpoint.StepStatus]int{"failed": 1},
		Items: []history.ItemReport{{Key: hostile, Status: "failed", Attempts: []history.AttemptReport{
			{N: 1, Status: "failed", Kind: hostile, Class: "transient", Error: hostile, StartedAt: *sec(8), FinishedAt: sec(9)}}}},
		Dead: []history.DeadReport{{Key: hostile, Class: hostile, Error: hostile, Signature: hostile}}})
	rep.Circuits = []history.CircuitReport{{Agent: hostile, State: "open", OpenedAt: sec(9), OpenUntil: sec(20)}}
	return rep
}

// TestRenderEscapes puts hostile text in every field that agents, items or
// users control and requires it to come out as text: no element, no
// attribute and no script of its own.
func TestRenderEscapes(t *testing.T) {
	dir := t.TempDir()
	rep := hostileRun(t, dir)
	out := render(t, rep, Options{Dir: dir})
	for _, bad := range []string{"<img", "<svg onload", "<script>window", "</script><script>", "\x00", "onerror=alert(1)>"} {
		if strings.Contains(out, bad) {
			t.Errorf("report contains %q unescaped", bad)
		}
	}
	if n := strings.Count(out, "<script"); n != 1 {
		t.Errorf("report has %d script elements, want only its own", n)
	}
	for _, want := range []string{
		`&lt;/script&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&lt;svg onload=window.pwned=3&gt;`,
		`{{ .Steps.plan.Output }}`,
		`naïve façade — 日本語 🚀 ‮gnp.exe`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks the hostile text shown as text: %q", want)
		}
	}
	// Every class attribute holds only the report's own words.
	for _, m := range regexp.MustCompile(`class="([^"]*)"`).FindAllStringSubmatch(out, -1) {
		if !regexp.MustCompile(`^[a-z_ -]*$`).MatchString(m[1]) {
			t.Errorf("class attribute %q carries data", m[1])
		}
	}
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestScriptAllowedByPolicy checks that the Content-Security-Policy names
// the hash of the one inline script, so that browsers run it and nothing
// else.
func TestScriptAllowedByPolicy(t *testing.T) {
	out := render(t, smallRun(), Options{})
	m := regexp.MustCompile(`(?s)<script>(.*)</script>`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("report has no script")
	}
	sum := sha256.Sum256([]byte(m[1]))
	c := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(out)
	if c == nil {
		t.Fatal("report has no Content-Security-Policy")
	}
	csp := html.UnescapeString(c[1])
	if want := "script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
		t.Errorf("the policy %q does not allow the script by its hash: %s", csp, want)
	}
	if !strings.HasPrefix(csp, "default-src 'none';") {
		t.Errorf("the policy %q does not forbid network resources", csp)
	}
	for _, ref := range []string{"http://", "https://", "src=", "@import", "url("} {
		if strings.Contains(out, ref) {
			t.Errorf("report refers to a resource: %q", ref)
		}
	}
}

// mapRun is a run of one map step with n items of one attempt each.
func mapRun(n int) *history.Report {
	rep := &history.Report{Run: history.RunReport{ID: "r2", Status: "succeeded", StartedAt: epoch, FinishedAt: sec(float64(n))}}
	s := history.StepReport{ID: "fix", Status: "succeeded", Agent: "sim", MaxAttempts: 2, ItemCounts: map[checkpoint.StepStatus]int{"succeeded": n}}
	for i := range n {
		s.Items = append(s.Items, history.ItemReport{Key: fmt.Sprint(i), Status: "succeeded", AttemptsUsed: 1,
			Attempts: []history.AttemptReport{{N: 1, Status: "succeeded", Kind: "initial", StartedAt: *sec(float64(i)), FinishedAt: sec(float64(i) + 1)}}})
	}
	rep.Steps = []history.StepReport{s}
	return rep
}

// TestMapLanesFold checks that a map step shows one lane per item, open up
// to maxItemLanes items and folded under its summary lane beyond.
func TestMapLanesFold(t *testing.T) {
	tests := []struct {
		items int
		open  bool
	}{{3, true}, {maxItemLanes, true}, {maxItemLanes + 1, false}}
	for _, tc := range tests {
		out := render(t, mapRun(tc.items), Options{})
		open := strings.Contains(out, `<details class="items" data-step="fix" open>`)
		if open != tc.open {
			t.Errorf("%d items: item lanes open %v, want %v", tc.items, open, tc.open)
		}
		if got := strings.Count(out, `<g class="lane"`); got != tc.items {
			t.Errorf("%d items: %d lanes, want one per item", tc.items, got)
		}
		if !strings.Contains(out, `<svg class="lanes summary" data-step="fix"`) {
			t.Errorf("%d items: no summary lane", tc.items)
		}
		if want := fmt.Sprintf(`<text class="sumlbl" x="4" y="15">fix · %d items`, tc.items); !strings.Contains(out, want) {
			t.Errorf("%d items: summary lane lacks %q", tc.items, want)
		}
	}
}

// TestRenderEdgeCases renders runs at their edges: nothing run yet, a run
// still going with an attempt running, a map step with no items yet.
func TestRenderEdgeCases(t *testing.T) {
	running := func() *history.Report {
		rep := smallRun()
		rep.Run.Status, rep.Run.FinishedAt = "running", nil
		a := &rep.Steps[1].Attempts[1]
		a.Status, a.FinishedAt = "running", nil
		rep.Steps[1].Status = "running"
		return rep
	}
	tests := []struct {
		name string
		rep  *history.Report
		opts Options
		want []string
	}{
		{
			name: "no step yet",
			rep:  &history.Report{Run: history.RunReport{ID: "r0", Status: "running", StartedAt: epoch}},
			opts: Options{Now: epoch.Add(time.Minute)},
			want: []string{`<title>cadence run r0 · running</title>`, `<dd>still running</dd>`, `<dd>1m00s so far</dd>`},
		},
		{
			// The running attempt started at 7s and runs to now, 20s:
			// a bar from x = 190 + 7/20*1000 = 540 to 1190.
			name: "an attempt running",
			rep:  running(),
			opts: Options{Now: epoch.Add(20 * time.Second)},
			want: []string{`<rect class="bar running followup" x="540" y="3" width="650" height="14">`},
		},
		{
			name: "a map step with no items yet",
			rep: &history.Report{Run: history.RunReport{ID: "r3", Status: "running", StartedAt: epoch},
				Steps: []history.StepReport{{ID: "fix", Status: "pending", Agent: "sim", ItemCounts: map[checkpoint.StepStatus]int{}}}},
			want: []string{`<details class="items" data-step="fix" open><summary>0 item lanes of fix</summary>`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, tc.rep, tc.opts)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %s", w)
				}
			}
		})
	}
}

// TestRenderGraphDecisions: a step skipped by its when has a lane that
// says why, a skipped status, and its decision among its facts; a step
// run because its when was true shows that decision too; a command step
// is shown as one.
func TestRenderGraphDecisions(t *testing.T) {
	rep := smallRun()
	rep.Steps = append(rep.Steps,
		history.StepReport{ID: "changelog", Status: "skipped", Agent: "sim", MaxAttempts: 3, Attempts: []history.AttemptReport{},
			Decision: json.RawMessage(`{"when":"steps.plan.output.release","value":false,"read":{"steps.plan.status":"succeeded"},"at":"2026-01-01T00:00:09Z"}`)},
		history.StepReport{ID: "after", Status: "skipped", Agent: "sim", MaxAttempts: 3, Attempts: []history.AttemptReport{},
			Decision: json.RawMessage(`{"skipped_because":["changelog"],"at":"2026-01-01T00:00:09Z"}`)},
		history.StepReport{ID: "check", Status: "succeeded", MaxAttempts: 1, AttemptsUsed: 1,
			Decision: json.RawMessage(`{"when":"inputs.release == false","value":true,"at":"2026-01-01T00:00:09Z"}`),
			Attempts: []history.AttemptReport{{N: 1, Status: "succeeded", Kind: "initial", StartedAt: *sec(9), FinishedAt: sec(9.5)}}},
	)
	out := render(t, rep, Options{})
	for _, want := range []string{
		`<text class="note" x="194" y="14">skipped · when steps.plan.output.release was false</text>`,
		`<text class="note" x="194" y="14">skipped · it needs changelog, skipped</text>`,
		`<dt>decision</dt><dd>when steps.plan.output.release was false</dd>`,
		`<dt>decision</dt><dd>when inputs.release == false was true</dd>`,
		`<span class="status skipped">skipped</span>`,
		`<td>(command)</td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}

// A failed attempt with a snapshot of its work tree names the command
// that prints its change and, when they were looked up, the files it
// changed; one without a snapshot names neither (SPEC §19).
func TestRenderAttemptChanges(t *testing.T) {
	for _, tt := range []struct {
		name     string
		snapshot string
		files    []string
		want     []string
		absent   []string
	}{
		{"files", "c0ffee", []string{"a.go", "b/c.go"}, []string{"Changed 2 files: a.go, b/c.go.", "<code>cadence diff implement --run r1 --attempt 1</code>"}, nil},
		{"none changed", "c0ffee", []string{}, []string{"Changed no file.", "<code>cadence diff implement --run r1 --attempt 1</code>"}, nil},
		{"not looked up", "c0ffee", nil, []string{"Its change: <code>cadence diff implement --run r1 --attempt 1</code>"}, []string{"Changed "}},
		{"no snapshot", "", []string{"a.go"}, nil, []string{"cadence diff", "Changed "}},
		{"hostile name", "c0ffee", []string{"<b>x</b>.go"}, []string{"Changed 1 file: &lt;b&gt;x&lt;/b&gt;.go."}, []string{"<b>x</b>.go"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := smallRun()
			a := &rep.Steps[0].Attempts[0]
			a.Snapshot, a.SnapshotAfter, a.FilesChanged = tt.snapshot, tt.snapshot, tt.files
			var buf bytes.Buffer
			if err := Render(&buf, rep, Options{Now: *sec(20)}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("the report lacks %q", w)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(buf.String(), w) {
					t.Errorf("the report holds %q", w)
				}
			}
		})
	}
}
