package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

// webhook is a receiver of notifications on loopback: it answers each
// request with the next status of its script (200 once it is used up)
// and keeps what it got.
type webhook struct {
	mu       sync.Mutex
	statuses []int
	got      []hookRequest
	srv      *httptest.Server
}

type hookRequest struct {
	status int
	key    string // the Idempotency-Key header
	body   map[string]any
}

func newWebhook(t *testing.T, statuses ...int) *webhook {
	h := &webhook{statuses: statuses}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("webhook body is not JSON: %v\n%s", err, raw)
		}
		h.mu.Lock()
		status := http.StatusOK
		if len(h.statuses) > 0 {
			status, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.got = append(h.got, hookRequest{status: status, key: r.Header.Get("Idempotency-Key"), body: body})
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// delivered counts, by idempotency key, the requests answered 2xx.
func (h *webhook) delivered() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, r := range h.got {
		if r.status/100 == 2 {
			out[r.key]++
		}
	}
	return out
}

func (h *webhook) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

func notifyProject(t *testing.T, hookURL string) *project {
	return newProject(t, simWorkflow(`{max_attempts: 2, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: go}
notify:
  - webhook: `+hookURL+`/services/T000/B000/secret
    on: [run_succeeded, run_failed]
`), map[string]string{"scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}'}]
`})
}

// TestNotifyCrashBeforeDelivery kills cadence (SIGKILL, at the failpoint
// before-delivery) after the run's success and its notification were
// committed and before anything was sent: the event is in the outbox,
// pending, and the next cadence process on the state sends it exactly
// once, with its idempotency key; a later one does not send it again.
func TestNotifyCrashBeforeDelivery(t *testing.T) {
	h := newWebhook(t)
	p := notifyProject(t, h.srv.URL)
	p.cadence([]string{"CADENCE_FAILPOINT=" + "before-delivery"}, "run").killed(t)
	if n := len(h.requests()); n != 0 {
		t.Fatalf("%d requests before the kill, want none", n)
	}
	first := p.inspect()
	if first.Run.Status != "succeeded" || len(first.Run.Deliveries) != 1 {
		t.Fatalf("after the kill: run %s, deliveries %+v", first.Run.Status, first.Run.Deliveries)
	}
	d := first.Run.Deliveries[0]
	key := first.Run.ID + "/run_succeeded/1"
	if d.Status != "pending" || d.Attempts != 0 || d.IdempotencyKey != key || d.Event != "run_succeeded" ||
		d.Target != "webhook "+h.srv.URL+"/…" {
		t.Fatalf("delivery after the kill = %+v", d)
	}

	// The next run on the state sends it, and its own.
	p.cadence(nil, "run").exits(t, 0)
	second := p.inspect()
	if got := h.delivered(); got[key] != 1 || got[second.Run.ID+"/run_succeeded/1"] != 1 || len(got) != 2 {
		t.Fatalf("delivered %v, want each run's success once", got)
	}
	for _, r := range h.requests() {
		if r.body["idempotency_key"] != r.key || r.body["event"] != "run_succeeded" || r.body["text"] == "" {
			t.Errorf("request %+v", r)
		}
	}
	// And no process sends it again.
	p.cadence(nil, "run").exits(t, 0)
	if got := h.delivered(); got[key] != 1 || got[second.Run.ID+"/run_succeeded/1"] != 1 {
		t.Fatalf("delivered %v after a third run, want the first two once each", got)
	}
	var rep history.Report
	r := p.cadence(nil, "inspect", "--json", "--run", first.Run.ID)
	r.exits(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if d := rep.Run.Deliveries[0]; d.Status != "delivered" || d.Attempts != 1 || d.DeliveredAt == nil {
		t.Errorf("the first run's delivery = %+v, want delivered on its first try", d)
	}
}

// TestNotifyRetriedAfter500: a webhook that answers 500 leaves the
// delivery pending with the error and the next try after backoff; the
// next process, once that time has come, sends the same body and key
// again, and the receiver has it delivered once.
func TestNotifyRetriedAfter500(t *testing.T) {
	h := newWebhook(t, http.StatusInternalServerError)
	p := notifyProject(t, h.srv.URL)
	p.cadence(nil, "run").exits(t, 0)
	rep := p.inspect()
	d := rep.Run.Deliveries[0]
	if d.Status != "pending" || d.Attempts != 1 || d.LastError != "HTTP 500" || d.NextTryAt == nil {
		t.Fatalf("after the 500: %+v", d)
	}
	// The outbox keeps it, due after the backoff: a process before then
	// does not send it.
	next := *d.NextTryAt
	waitFor(t, "the next try to fall due", func() bool { return time.Now().After(next) })
	r := p.cadence(nil, "resume") // nothing to resume; the outbox is sent
	r.exits(t, 2)
	got := h.requests()
	if len(got) != 2 || got[0].status != 500 || got[1].status != 200 || got[0].key != got[1].key || got[0].key != rep.Run.ID+"/run_succeeded/1" {
		t.Fatalf("requests %+v, want the same key refused then taken", got)
	}
	d = p.inspect().Run.Deliveries[0]
	if d.Status != "delivered" || d.Attempts != 2 || d.LastError != "" || d.DeliveredAt == nil {
		t.Errorf("after the retry: %+v", d)
	}
}

// TestNotifyTakenOverAfterKillMidDelivery: cadence is killed (SIGKILL)
// while a command target is running with the run's run_succeeded, so the
// delivery stays claimed by a process that is gone. The resume typed right
// after takes the claim at once and delivers it (the same key, a second
// try), instead of leaving it until the claim would have run out (the
// try's timeout and a margin: 40 s). On SQLite and on PostgreSQL.
func TestNotifyTakenOverAfterKillMidDelivery(t *testing.T) {
	forEachEngine(t, testNotifyTakenOverAfterKill)
}

func testNotifyTakenOverAfterKill(t *testing.T, e stateEngine) {
	p := newProject(t, simWorkflow(`{max_attempts: 1}`, `
  - {id: one, prompt: go}
notify:
  - command: [/bin/sh, ./page.sh]
    on: [run_succeeded]
`), map[string]string{"scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}'}]
`, "page.sh": `if [ -e tried ]; then cat > delivered.tmp && mv delivered.tmp delivered.json; exit 0; fi
echo $$ > tried.tmp && mv tried.tmp tried
exec sleep 120
`})
	p.state = e.state(t)
	tried := filepath.Join(p.dir, "tried")
	t.Cleanup(func() {
		// The first try's sleep, if cadence's death left it running.
		if b, err := os.ReadFile(tried); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	p.killWhen(t, "run", func() bool {
		_, err := os.Stat(tried)
		return err == nil
	})
	killed := time.Now()
	d := p.inspect().Run.Deliveries
	if len(d) != 1 || d[0].Status != "pending" || d[0].Attempts != 1 || d[0].NextTryAt == nil || d[0].NextTryAt.Before(killed) {
		t.Fatalf("after the kill: %+v, want one pending delivery whose try is under way", d)
	}

	p.cadence(nil, "resume").exits(t, 2) // nothing to resume; the outbox is sent
	took := time.Since(killed)
	raw, err := os.ReadFile(filepath.Join(p.dir, "delivered.json"))
	if err != nil {
		t.Fatalf("the resume right after the kill did not deliver the notification: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || body["event"] != "run_succeeded" || body["idempotency_key"] != d[0].IdempotencyKey {
		t.Errorf("the command read %s (%v)", raw, err)
	}
	t.Logf("delivered by the resume %s after the kill", took)
	if took > 20*time.Second {
		t.Errorf("delivered %s after the kill", took)
	}
	got := p.inspect().Run.Deliveries[0]
	if got.Status != "delivered" || got.Attempts != 2 || got.DeliveredAt == nil {
		t.Errorf("delivery after the resume = %+v, want delivered on its second try", got)
	}
}

// TestNotifySilentWebhookDoesNotStarveACommand: the workflow's first
// target is a webhook that takes the request and never answers, its second
// a pager command. cadence run tells the pager of the run's success before
// it exits, although the webhook holds its own try past the run's flush.
func TestNotifySilentWebhookDoesNotStarveACommand(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); silent.Close() })
	p := newProject(t, simWorkflow(`{max_attempts: 1}`, `
  - {id: one, prompt: go}
notify:
  - webhook: `+silent.URL+`/hook
    on: [run_succeeded]
  - command: [/bin/sh, ./page.sh]
    on: [run_succeeded]
`), map[string]string{"scenario.yaml": `
steps:
  one: [{answer: '{"ok": true}'}]
`, "page.sh": "cat > paged.tmp && mv paged.tmp paged.json\n"})
	start := time.Now()
	p.cadence(nil, "run").exits(t, 0)
	t.Logf("cadence run took %s", time.Since(start))
	raw, err := os.ReadFile(filepath.Join(p.dir, "paged.json"))
	if err != nil {
		t.Fatalf("the pager did not hear of the run's success: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || body["event"] != "run_succeeded" {
		t.Errorf("the pager read %s (%v)", raw, err)
	}
	d := p.inspect().Run.Deliveries
	if len(d) != 2 || d[0].Status != "pending" || d[1].Status != "delivered" {
		t.Errorf("deliveries %+v, want the webhook's pending and the pager's delivered", d)
	}
}
