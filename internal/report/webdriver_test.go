//go:build browser

package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A minimal client of the W3C WebDriver protocol, enough to drive headless
// Chromium through chromedriver from the standard library: open a page,
// find elements, click, run a script, take a screenshot.

// elementKey is the JSON key under which WebDriver returns an element
// reference.
const elementKey = "element-6066-11e4-a52e-4f735466cecf"

// browserPath and driverPath are Debian's chromium and chromium-driver,
// unless CADENCE_CHROMIUM or CADENCE_CHROMEDRIVER name others.
func browserPath() string { return envOr("CADENCE_CHROMIUM", "/usr/bin/chromium") }
func driverPath() string  { return envOr("CADENCE_CHROMEDRIVER", "/usr/bin/chromedriver") }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// browser is one WebDriver session of headless Chromium.
type browser struct {
	t       testing.TB
	base    string // the session's URL
	client  *http.Client
	session string
}

// startedLine is what chromedriver prints once it listens, with the port
// it chose for --port=0.
var startedLine = regexp.MustCompile(`started successfully on port (\d+)`)

// newBrowser starts chromedriver on a port of its choosing and opens a
// headless Chromium session with a window of w×h CSS pixels. Both are
// stopped when the test ends.
func newBrowser(t testing.TB, w, h int) *browser {
	t.Helper()
	for _, p := range []string{browserPath(), driverPath()} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the browser tests need Chromium and chromedriver (apt-get install -y chromium chromium-driver): %v", err)
		}
	}
	cmd := exec.Command(driverPath(), "--port=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromedriver: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	port := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := startedLine.FindStringSubmatch(sc.Text()); m != nil {
			port = m[1]
			break
		}
	}
	if port == "" {
		t.Fatalf("chromedriver ended without saying it started: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()

	b := &browser{t: t, base: "http://127.0.0.1:" + port, client: &http.Client{Timeout: 60 * time.Second}}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": browserPath(),
			"args": []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--hide-scrollbars", "--force-device-scale-factor=1", fmt.Sprintf("--window-size=%d,%d", w, h)},
		},
	}}}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	b.call("POST", "/session", caps, &created)
	b.session = created.SessionID
	t.Cleanup(func() { b.call("DELETE", "", nil, nil) })
	return b
}

// call sends one WebDriver command; path is relative to the session (or
// absolute when it starts with /session and no session exists yet). The
// response's value is decoded into out when out is not nil.
func (b *browser) call(method, path string, body, out any) {
	b.t.Helper()
	url := b.base + path
	if b.session != "" {
		url = b.base + "/session/" + b.session + path
	}
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		b.t.Fatalf("webdriver %s %s: %v: %.300s", method, path, err, raw)
	}
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("webdriver %s %s: %s: %.500s", method, path, resp.Status, env.Value)
	}
	if out != nil {
		if err := json.Unmarshal(env.Value, out); err != nil {
			b.t.Fatalf("webdriver %s %s: decode %.300s: %v", method, path, env.Value, err)
		}
	}
}

// open loads a file in the browser and returns when its load event fired.
func (b *browser) open(path string) {
	b.t.Helper()
	b.call("POST", "/url", map[string]string{"url": "file://" + path}, nil)
}

// run executes script in the page and decodes its return value into out.
func (b *browser) run(script string, out any, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.call("POST", "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

// runAsync executes script in the page, which calls its last argument with
// the result, and decodes the result into out.
func (b *browser) runAsync(script string, out any) {
	b.t.Helper()
	b.call("POST", "/execute/async", map[string]any{"script": script, "args": []any{}}, out)
}

// find returns the elements matching a CSS selector.
func (b *browser) find(css string) []string {
	b.t.Helper()
	var refs []map[string]string
	b.call("POST", "/elements", map[string]string{"using": "css selector", "value": css}, &refs)
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r[elementKey]
	}
	return ids
}

// one returns the single element matching css, failing the test otherwise.
func (b *browser) one(css string) string {
	b.t.Helper()
	ids := b.find(css)
	if len(ids) != 1 {
		b.t.Fatalf("%d elements match %q, want 1", len(ids), css)
	}
	return ids[0]
}

// click clicks an element as a user would (scrolled into view, at its
// centre).
func (b *browser) click(id string) {
	b.t.Helper()
	b.call("POST", "/element/"+id+"/click", map[string]any{}, nil)
}

// property returns a DOM property of an element.
func (b *browser) property(id, name string, out any) {
	b.t.Helper()
	b.call("GET", "/element/"+id+"/property/"+name, nil, out)
}

// displayed reports whether an element is rendered visibly.
func (b *browser) displayed(id string) bool {
	b.t.Helper()
	var v bool
	b.call("GET", "/element/"+id+"/displayed", nil, &v)
	return v
}

// text returns the rendered text of an element.
func (b *browser) text(id string) string {
	b.t.Helper()
	var s string
	b.call("GET", "/element/"+id+"/text", nil, &s)
	return s
}

// screenshot saves the viewport as a PNG.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var enc string
	b.call("GET", "/screenshot", nil, &enc)
	png, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		b.t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot is not a PNG")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// classes returns the class attribute of every element matching css.
func (b *browser) classes(css string) []string {
	b.t.Helper()
	var out []string
	b.run(`return Array.from(document.querySelectorAll(arguments[0])).map(e => e.getAttribute("class"));`, &out, css)
	return out
}

// texts returns the text content of every element matching css.
func (b *browser) texts(css string) []string {
	b.t.Helper()
	var out []string
	b.run(`return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);`, &out, css)
	return out
}

// joined is a short form for assertions on lists.
func joined(s []string) string { return strings.Join(s, " | ") }
