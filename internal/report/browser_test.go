//go:build browser

package report

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/history/historytest"
)

// The browser tests open reports in headless Chromium (Debian's chromium
// and chromium-driver) through WebDriver and check what a reader sees: the
// lanes and bars of the timeline, a failed attempt's diagnosis opening when
// clicked, and hostile agent output shown as text with no script of its
// own running. Run them with `make browser`.
//
// CADENCE_REPORT_ARTIFACTS names a directory to keep the screenshots in
// (default: the test's temporary directory); CADENCE_REPORT_SCREENSHOT a
// path, relative to the repository root, for the screenshot the README
// shows (docs/report.png).

// TestBrowserReports runs the demo and a run with a map step and an opened
// circuit with the real cadence binary, writes their reports with
// `cadence report`, and checks them in the browser, then a report of
// hostile text and one of 10,000 attempts.
func TestBrowserReports(t *testing.T) {
	root := moduleRoot(t)
	bin := buildCadence(t, root)
	shots := envOr("CADENCE_REPORT_ARTIFACTS", t.TempDir())
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, 1280, 1000)

	t.Run("demo", func(t *testing.T) {
		br.t = t
		br.open(runAndReport(t, bin, filepath.Join(root, "examples", "demo")))
		var runID, title string
		br.run(`return document.getElementById("run-id").textContent;`, &runID)
		br.run(`return document.title;`, &title)
		if want := "cadence run " + runID + " · succeeded"; title != want {
			t.Errorf("title %q, want %q", title, want)
		}
		// One lane per step, under the lane of the circuit the usage
		// limit opened.
		if got, want := joined(br.texts("g.lane > text:first-child")), "circuit sim | plan | implement | review"; got != want {
			t.Errorf("lanes %q, want %q", got, want)
		}
		// plan: 1 attempt; implement: a schema failure, then a follow-up;
		// review: a usage limit (not counted), then a follow-up.
		wantBars := "bar succeeded initial | bar failed initial | bar succeeded followup | bar failed initial uncounted | bar succeeded followup"
		if got := joined(br.classes("rect.bar")); got != wantBars {
			t.Errorf("bars %q, want %q", got, wantBars)
		}
		if got, want := joined(br.classes("rect.wait")), "wait backoff | wait usage"; got != want {
			t.Errorf("waits %q, want %q", got, want)
		}
		if got, want := joined(br.classes("rect.spell")), "spell open"; got != want {
			t.Errorf("circuit lane %q, want %q", got, want)
		}
		// implement #1's diagnosis is folded until its summary is clicked.
		f1 := br.one("details#f1")
		if isOpen(br, f1) {
			t.Error("a failed attempt's details are open before any click")
		}
		br.click(br.one("details#f1 > summary"))
		if !isOpen(br, f1) {
			t.Fatal("clicking a failed attempt's summary did not open it")
		}
		diag := br.one("details#f1 pre.diagnosis")
		if !br.displayed(diag) || !strings.Contains(br.text(diag), `missing required field "success"`) {
			t.Errorf("the opened diagnosis shows %q", br.text(diag))
		}
		if fu := br.text(br.one("details#f1 pre.followup")); !strings.Contains(fu, "success") {
			t.Errorf("the follow-up shown does not name the missing field: %q", fu)
		}
		// Clicking review #1's bar in the timeline opens its diagnosis.
		f2 := br.one("details#f2")
		br.click(br.one(`a[href="#f2"] > rect`))
		if !isOpen(br, f2) {
			t.Error("clicking a failed attempt's bar did not open its diagnosis")
		}
		br.run(`window.scrollTo(0, 0); return null;`, nil)
		br.screenshot(filepath.Join(shots, "demo.png"))
	})

	t.Run("map step and circuit", func(t *testing.T) {
		br.t = t
		br.open(runAndReport(t, bin, filepath.Join(root, "internal", "report", "testdata", "showcase")))
		// A summary lane for the map step, and one lane per item, open.
		br.one(`svg.summary[data-step="fix"]`)
		items := br.one(`details.items[data-step="fix"]`)
		if !isOpen(br, items) {
			t.Error("the item lanes of a map step of 6 items are folded")
		}
		if got, want := joined(br.texts(`details.items[data-step="fix"] g.lane > text:first-child`)), "fix[a] | fix[b] | fix[c] | fix[d] | fix[e] | fix[f]"; got != want {
			t.Errorf("item lanes %q, want %q", got, want)
		}
		// Item d fails three times and is dead; a and c fail once; plan's
		// first answer and implement's help request fail too.
		if got := len(br.find(`details.items[data-step="fix"] rect.bar.failed`)); got != 5 {
			t.Errorf("%d failed bars in the item lanes, want 5", got)
		}
		if got := len(br.find("rect.bar.failed")); got != 7 {
			t.Errorf("%d failed bars, want 7", got)
		}
		// a's outage opened the circuit; items waited for it.
		if len(br.find("rect.spell.open")) == 0 {
			t.Error("no circuit opening drawn")
		}
		if len(br.find("rect.wait.circuit")) == 0 {
			t.Error("no wait for the circuit drawn")
		}
		if got := len(br.find("circle.mark.help")); got != 1 {
			t.Errorf("%d help rounds marked, want 1", got)
		}
		if got := len(br.find("rect.mark.check.passed")); got != 1 {
			t.Errorf("%d passed checks marked, want 1", got)
		}
		if got := joined(br.texts("table.dead td.mono")); !strings.HasPrefix(got, "d | ") {
			t.Errorf("dead-letter table %q, want item d", got)
		}
		// plan's first answer was hostile: shown as text, nothing ran.
		assertInert(t, br)
		br.click(br.one("details#f1 > summary"))
		sample := br.text(br.one("details#f1 pre.sample"))
		for _, want := range []string{`<img src=x onerror="window.pwned=1">`, `</script><script>window.pwned=2</script>`, "{{ .Secret }}", "naïve 日本語"} {
			if !strings.Contains(sample, want) {
				t.Errorf("the output sample does not show %q as text: %q", want, sample)
			}
		}
		br.run(`window.scrollTo(0, 0); return null;`, nil)
		png := filepath.Join(shots, "map-circuit.png")
		br.screenshot(png)
		if doc := os.Getenv("CADENCE_REPORT_SCREENSHOT"); doc != "" {
			if !filepath.IsAbs(doc) {
				doc = filepath.Join(root, doc)
			}
			copyFile(t, png, doc)
		}
	})

	t.Run("hostile text", func(t *testing.T) {
		br.t = t
		dir := t.TempDir()
		path := filepath.Join(dir, "hostile.html")
		writeReport(t, path, hostileRun(t, dir), Options{Dir: dir})
		br.open(path)
		assertInert(t, br)
		var title string
		br.run(`return document.title;`, &title)
		if title != "cadence run r1 · succeeded" {
			t.Errorf("title %q changed by the report's content", title)
		}
		br.click(br.one("details#f1 > summary"))
		if got := br.text(br.one("details#f1 pre.diagnosis")); !strings.Contains(got, "<img src=x onerror=alert(1)><svg onload=window.pwned=3>") {
			t.Errorf("the diagnosis does not show the hostile text as text: %q", got)
		}
		br.screenshot(filepath.Join(shots, "hostile.png"))
	})

	t.Run("loop and gates", func(t *testing.T) {
		br.t = t
		dir, rep := loopRunReport(t)
		path := filepath.Join(dir, "loop.html")
		writeReport(t, path, rep, Options{Dir: dir, Now: historytest.T0.Add(40 * time.Second)})
		br.open(path)
		// One lane group per iteration, each shown with its label and
		// its inner steps' lanes.
		if got, want := joined(br.texts("div.iteration > div.iterlbl")),
			"implement · iteration 1 · until steps.code.output.approved was false | "+
				"implement · iteration 2 · until steps.code.output.approved was false | "+
				"implement · iteration 3 · until steps.code.output.approved was true"; got != want {
			t.Errorf("iteration groups %q, want %q", got, want)
		}
		for _, el := range br.find("div.iteration") {
			if !br.displayed(el) {
				t.Error("an iteration group is not displayed")
			}
		}
		if got, want := joined(br.texts(`div.iteration[data-iteration="3"] g.lane > text:first-child`)), "implement/3/code | implement/3/docs"; got != want {
			t.Errorf("lanes of iteration 3 %q, want %q", got, want)
		}
		if got := len(br.find("rect.wait.approval")); got != 2 {
			t.Errorf("%d approval waits drawn, want 2", got)
		}
		if got := br.text(br.one(`section[data-step="signoff"] pre.gate-comment`)); got != "looks good; ship it" {
			t.Errorf("signoff's comment shows %q", got)
		}
		if got := br.text(br.one(`section[data-step="merge-gate"] dd.gate-decision`)); got != "waiting" {
			t.Errorf("merge-gate shows %q, want waiting", got)
		}
		br.screenshot(filepath.Join(shots, "loop.png"))
	})

	t.Run("10000 attempts", func(t *testing.T) {
		br.t = t
		dir := t.TempDir()
		rep := syntheticRun(10000, 3)
		writeRecords(t, dir, rep)
		path := filepath.Join(dir, "long.html")
		writeReport(t, path, rep, Options{Dir: dir})
		br.open(path)
		var ms float64
		br.runAsync(`const done = arguments[arguments.length-1];
			requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));`, &ms)
		t.Logf("10,000 attempts: first frame %.0f ms after navigation", ms)
		if got := len(br.find("rect.bar")); got != 10000 {
			t.Errorf("%d bars, want 10000", got)
		}
		items := br.one(`details.items[data-step="fix"]`)
		if isOpen(br, items) {
			t.Error("the item lanes of a map step of thousands of items are open")
		}
		br.click(br.one(`details.items[data-step="fix"] > summary`))
		if !isOpen(br, items) {
			t.Fatal("clicking the folded item lanes did not open them")
		}
		if got, want := len(br.find(`details.items[data-step="fix"] g.lane`)), len(rep.Steps[2].Items); got != want {
			t.Errorf("%d item lanes, want %d", got, want)
		}
		br.screenshot(filepath.Join(shots, "long.png"))
	})
}

// BenchmarkBrowserOpen10000Attempts measures how long Chromium takes to
// show the report of a run of 10,000 attempts: from navigation to the
// first frame drawn after the load event, and from opening the folded
// lanes of its map step's thousands of items to the frame that shows them.
func BenchmarkBrowserOpen10000Attempts(b *testing.B) {
	dir := b.TempDir()
	rep := syntheticRun(10000, 3)
	writeRecords(b, dir, rep)
	path := filepath.Join(dir, "long.html")
	writeReport(b, path, rep, Options{Dir: dir})
	br := newBrowser(b, 1280, 1000)
	var load, expand float64
	for b.Loop() {
		br.call("POST", "/url", map[string]string{"url": "about:blank"}, nil)
		br.open(path)
		var ms float64
		br.runAsync(`const done = arguments[arguments.length-1];
			requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));`, &ms)
		load += ms
		br.runAsync(`const done = arguments[arguments.length-1], t = performance.now();
			document.querySelector('details.items[data-step="fix"]').open = true;
			requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));`, &ms)
		expand += ms
	}
	b.ReportMetric(load/float64(b.N), "ms/first-frame")
	b.ReportMetric(expand/float64(b.N), "ms/expand-items")
}

// assertInert checks that no markup from the report's content became
// elements or ran: no image, no script but the report's own, no global set
// by an injected handler, and the only SVGs the report's own.
func assertInert(t *testing.T, br *browser) {
	t.Helper()
	var got struct {
		Images  int  `json:"images"`
		Scripts int  `json:"scripts"`
		Pwned   bool `json:"pwned"`
		Onload  int  `json:"onload"`
	}
	br.run(`return {images: document.images.length, scripts: document.scripts.length,
		pwned: typeof window.pwned !== "undefined",
		onload: document.querySelectorAll("[onload],[onerror]").length};`, &got)
	if got.Images != 0 || got.Scripts != 1 || got.Pwned || got.Onload != 0 {
		t.Errorf("injected markup took effect: %d images, %d scripts (want 1), window.pwned set %v, %d elements with handlers",
			got.Images, got.Scripts, got.Pwned, got.Onload)
	}
}

// isOpen reports whether a <details> element is open.
func isOpen(br *browser, id string) bool {
	var open bool
	br.property(id, "open", &open)
	return open
}

// moduleRoot is the repository root: the directory of go.mod above the
// test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// buildCadence builds the cadence binary into a temporary directory.
func buildCadence(t *testing.T, root string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "cadence")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/cadence")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cadence: %v\n%s", err, out)
	}
	return bin
}

// runAndReport copies the project at src to a temporary directory, runs its
// workflow to the end with cadence, and writes the run's report with
// `cadence report`, returning the report's path.
func runAndReport(t *testing.T, bin, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cadence(t, bin, "run", dir)
	out := cadence(t, bin, "report", dir)
	path := strings.TrimSpace(out)
	if want := filepath.Join(dir, ".cadence", "reports"); filepath.Dir(path) != want {
		t.Fatalf("cadence report wrote %q, want a file in %s", path, want)
	}
	return path
}

// cadence runs the binary and returns its stdout; it must exit 0.
func cadence(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("cadence %s: exit %d\n%s%s", strings.Join(args, " "), ee.ExitCode(), stdout.String(), stderr.String())
		}
		t.Fatalf("cadence %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String()
}

// writeReport renders rep into a file.
func writeReport(t testing.TB, path string, rep *history.Report, opts Options) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, rep, opts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies a file, creating the target's directory.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot copied to %s", to)
}
