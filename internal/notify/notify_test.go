package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// hook is a webhook receiver on loopback: it answers each request with
// the next status of its script (200 once the script is used up) and
// keeps what it was sent.
type hook struct {
	mu       sync.Mutex
	statuses []int
	got      []received
	srv      *httptest.Server
}

type received struct {
	status int
	path   string
	key    string
	ctype  string
	body   Body
	raw    string
}

func newHook(t *testing.T, statuses ...int) *hook {
	h := &hook{statuses: statuses}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b Body
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("webhook body is not JSON: %v\n%s", err, raw)
		}
		h.mu.Lock()
		status := http.StatusOK
		if len(h.statuses) > 0 {
			status, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.got = append(h.got, received{status: status, path: r.URL.Path, key: r.Header.Get("Idempotency-Key"), ctype: r.Header.Get("Content-Type"), body: b, raw: string(raw)})
		h.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "answer "+http.StatusText(status)+"\n")
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) received() []received {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]received(nil), h.got...)
}

// newState opens a real SQLite state with one running run, r1.
func newState(t *testing.T) *checkpoint.Store {
	t.Helper()
	s, err := checkpoint.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now()
	run := checkpoint.NewRun(checkpoint.Run{ID: "r1", WorkflowPath: ".cadence/workflow.yaml",
		WorkflowSHA256: strings.Repeat("ab", 32), WorkflowYAML: []byte("version: 1\n")}, now)
	if err := s.Update(t.Context(), func(tx *checkpoint.Tx) error { return tx.CreateRun(run, nil) }); err != nil {
		t.Fatal(err)
	}
	return s
}

func enqueue(t *testing.T, s *checkpoint.Store, wf *workflow.Workflow, ev Event) int {
	t.Helper()
	var n int
	if err := s.Update(t.Context(), func(tx *checkpoint.Tx) error {
		var err error
		n, err = Enqueue(tx, wf, ev)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func deliveries(t *testing.T, s *checkpoint.Store) []checkpoint.Delivery {
	t.Helper()
	var out []checkpoint.Delivery
	if err := s.View(t.Context(), func(tx *checkpoint.Tx) error {
		var err error
		out, err = tx.RunDeliveries("r1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEnqueueOnlyTargetsThatWantIt: an event gets a row for each target
// whose on lists it (a long wait only where it exceeds notify_after),
// the rows of one event share its number and idempotency key, and an
// event with a subject is added once.
func TestEnqueueOnlyTargetsThatWantIt(t *testing.T) {
	s := newState(t)
	wf := &workflow.Workflow{Name: "nightly", Notify: []*workflow.NotifyTarget{
		{Webhook: "https://hooks.example.com/services/T000/B000/secret?token=x", On: []string{workflow.EventRunFailed, workflow.EventLongWait}, NotifyAfter: 10 * time.Minute},
		{Command: []string{"./page-me.sh", "--loud"}, On: []string{workflow.EventRunFailed, workflow.EventAuthNeeded, workflow.EventLongWait}, NotifyAfter: time.Minute},
	}}
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		ev   Event
		want int
	}{
		{Event{Name: workflow.EventRunSucceeded, RunID: "r1", At: at, Text: "nobody asked"}, 0},
		{Event{Name: workflow.EventRunFailed, RunID: "r1", At: at, Step: "plan", Text: "run r1 failed\nat step plan"}, 2},
		{Event{Name: workflow.EventAuthNeeded, RunID: "r1", At: at, Text: "log in"}, 1},
		{Event{Name: workflow.EventLongWait, RunID: "r1", At: at, Wait: 5 * time.Minute, Subject: "usage limit/a"}, 1},
		{Event{Name: workflow.EventLongWait, RunID: "r1", At: at, Wait: 5 * time.Minute, Subject: "usage limit/a"}, 0},
		{Event{Name: workflow.EventLongWait, RunID: "r1", At: at, Wait: time.Hour, Subject: "circuit/b"}, 2},
	}
	for i, tt := range tests {
		if n := enqueue(t, s, wf, tt.ev); n != tt.want {
			t.Errorf("event %d (%s): %d rows, want %d", i, tt.ev.Name, n, tt.want)
		}
	}
	got := deliveries(t, s)
	type row struct {
		seq, target int
		event, key  string
	}
	want := []row{
		{1, 0, "run_failed", "r1/run_failed/1"}, {1, 1, "run_failed", "r1/run_failed/1"},
		{2, 1, "auth_needed", "r1/auth_needed/2"},
		{3, 1, "long_wait", "r1/long_wait/3"},
		{4, 0, "long_wait", "r1/long_wait/4"}, {4, 1, "long_wait", "r1/long_wait/4"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if (row{g.Seq, g.TargetIdx, g.Event, g.IdempotencyKey}) != w || g.Status != checkpoint.DeliveryPending {
			t.Errorf("row %d = %+v, want %+v pending", i, g, w)
		}
	}
	if got[0].Target != "webhook https://hooks.example.com/…" || got[1].Target != "command ./page-me.sh …" {
		t.Errorf("targets shown as %q and %q: a webhook's path and a command's arguments stay out", got[0].Target, got[1].Target)
	}
	var b Body
	if err := json.Unmarshal(got[0].BodyJSON, &b); err != nil {
		t.Fatal(err)
	}
	if b.Event != "run_failed" || b.RunID != "r1" || b.Workflow != "nightly" || b.Step != "plan" || b.Text != "run r1 failed at step plan" ||
		!b.At.Equal(at) || b.IdempotencyKey != "r1/run_failed/1" {
		t.Errorf("body = %+v", b)
	}
}

// TestWebhookRetriedAfter500: a target that answers 500 then 200 gets the
// same body and idempotency key twice, and the row is delivered once with
// two tries and the 500 no longer its last error; a target that always
// fails is given up after its tries, each recorded.
func TestWebhookRetriedAfter500(t *testing.T) {
	s := newState(t)
	flaky := newHook(t, http.StatusInternalServerError)
	down := newHook(t, 500, 502, 503)
	wf := &workflow.Workflow{Name: "nightly", Notify: []*workflow.NotifyTarget{
		{Webhook: flaky.srv.URL + "/hook/secret", On: []string{workflow.EventRunSucceeded}},
		{Webhook: down.srv.URL + "/down", On: []string{workflow.EventRunSucceeded}},
	}}
	enqueue(t, s, wf, Event{Name: workflow.EventRunSucceeded, RunID: "r1", At: time.Now(), Text: "run r1 succeeded"})
	d := &Deliverer{Store: s, Tries: 3, FirstBackoff: 50 * time.Millisecond}
	d.Start(t.Context())
	waitFor(t, "both deliveries to end", func() bool {
		for _, r := range deliveries(t, s) {
			if r.Status == checkpoint.DeliveryPending {
				return false
			}
		}
		return true
	})
	d.Stop(time.Second)

	got := flaky.received()
	if len(got) != 2 || got[0].status != 500 || got[1].status != 200 {
		t.Fatalf("flaky hook received %+v, want a 500 then a 200", got)
	}
	for _, r := range got {
		if r.key != "r1/run_succeeded/1" || r.body.IdempotencyKey != r.key || r.ctype != "application/json" ||
			r.body.Event != "run_succeeded" || r.body.Text != "run r1 succeeded" || r.raw != got[0].raw {
			t.Errorf("request %+v", r)
		}
	}
	if n := len(down.received()); n != 3 {
		t.Errorf("the down hook got %d tries, want 3", n)
	}
	rows := deliveries(t, s)
	if r := rows[0]; r.Status != checkpoint.DeliveryDelivered || r.Attempts != 2 || r.DeliveredAt == nil || r.LastError != "" {
		t.Errorf("flaky row = %+v, want delivered after 2 tries", r)
	}
	if r := rows[1]; r.Status != checkpoint.DeliveryFailed || r.Attempts != 3 || !strings.HasPrefix(r.LastError, "HTTP 503: answer Service Unavailable") {
		t.Errorf("down row = %+v, want failed after 3 tries with the last answer", r)
	}
	// Another pass sends nothing again.
	if _, err := d.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(flaky.received()); n != 2 {
		t.Errorf("a delivered row was sent again: %d requests", n)
	}
}

// TestCommandTarget: a command target is a real process that reads the
// body on its standard input; exit 0 delivers, another exit is a failed
// try whose error carries the code and stderr.
func TestCommandTarget(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\ncat > \"$1\"\n"
	failing := "#!/bin/sh\necho 'pager is down' >&2\nexit 7\n"
	for name, body := range map[string]string{"save.sh": script, "fail.sh": failing} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := newState(t)
	wf := &workflow.Workflow{Path: "/p/.cadence/workflow.yaml", Notify: []*workflow.NotifyTarget{
		{Command: []string{"./save.sh", "event.json"}, On: []string{workflow.EventItemDead}},
		{Command: []string{"./fail.sh"}, On: []string{workflow.EventItemDead}},
	}}
	enqueue(t, s, wf, Event{Name: workflow.EventItemDead, RunID: "r1", Step: "fix", Item: "a", Agent: "claude", At: time.Now(),
		Text: "item a of step fix was dead-lettered", Error: "schema: missing ok"})
	d := &Deliverer{Store: s, Dir: dir, Tries: 1}
	if _, err := d.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b Body
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("stdin was not the JSON body: %v\n%s", err, raw)
	}
	if b.Event != "item_dead" || b.Step != "fix" || b.Item != "a" || b.Agent != "claude" || b.Workflow != "workflow.yaml" ||
		b.Error != "schema: missing ok" || b.IdempotencyKey != "r1/item_dead/1" {
		t.Errorf("body = %+v", b)
	}
	rows := deliveries(t, s)
	if rows[0].Status != checkpoint.DeliveryDelivered {
		t.Errorf("save.sh row = %+v, want delivered", rows[0])
	}
	if r := rows[1]; r.Status != checkpoint.DeliveryFailed || r.LastError != "command ./fail.sh exited with code 7: pager is down" {
		t.Errorf("fail.sh row = %+v", r)
	}
}

// TestCommandTimeoutKillsIt: a command that outlives its timeout is
// killed and the try fails, without holding up the pass beyond it.
func TestCommandTimeoutKillsIt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hang.sh"), []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newState(t)
	wf := &workflow.Workflow{Name: "w", Notify: []*workflow.NotifyTarget{{Command: []string{"./hang.sh"}, On: []string{workflow.EventRunFailed}}}}
	enqueue(t, s, wf, Event{Name: workflow.EventRunFailed, RunID: "r1", At: time.Now(), Text: "failed"})
	d := &Deliverer{Store: s, Dir: dir, Timeout: 300 * time.Millisecond, FirstBackoff: time.Hour}
	start := time.Now()
	if _, err := d.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the pass took %s", took)
	}
	r := deliveries(t, s)[0]
	if r.Status != checkpoint.DeliveryPending || r.Attempts != 1 || r.LastError != "command ./hang.sh did not end within 300ms" {
		t.Errorf("row = %+v", r)
	}
}

// TestStopIsBounded: Stop returns by its deadline while a webhook hangs,
// and the try cut short stays pending for the next process.
func TestStopIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	s := newState(t)
	wf := &workflow.Workflow{Name: "w", Notify: []*workflow.NotifyTarget{{Webhook: srv.URL, On: []string{workflow.EventRunSucceeded}}}}
	enqueue(t, s, wf, Event{Name: workflow.EventRunSucceeded, RunID: "r1", At: time.Now(), Text: "ok"})
	d := &Deliverer{Store: s}
	d.Start(context.Background())
	waitFor(t, "the try to begin", func() bool { return deliveries(t, s)[0].Attempts == 1 })
	start := time.Now()
	d.Stop(200 * time.Millisecond)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s with a flush of 200ms", took)
	}
	r := deliveries(t, s)[0]
	if r.Status != checkpoint.DeliveryPending || r.LastError != "cut short: cadence was exiting" {
		t.Errorf("row = %+v, want pending, cut short", r)
	}
}

// TestSilentWebhookDelaysNoOtherTarget: a webhook that takes the request
// and never answers holds up only its own delivery; a command target of
// the same event gets it at once, long before the webhook's try times out.
func TestSilentWebhookDelaysNoOtherTarget(t *testing.T) {
	release := make(chan struct{})
	taken := make(chan struct{}, 1)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case taken <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); silent.Close() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.sh"), []byte("#!/bin/sh\ncat > paged.json.tmp && mv paged.json.tmp paged.json\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newState(t)
	// The silent webhook comes first in the list, as in the workflow that
	// showed the defect.
	wf := &workflow.Workflow{Name: "w", Notify: []*workflow.NotifyTarget{
		{Webhook: silent.URL + "/hook", On: []string{workflow.EventRunSucceeded}},
		{Command: []string{"./page.sh"}, On: []string{workflow.EventRunSucceeded}},
	}}
	enqueue(t, s, wf, Event{Name: workflow.EventRunSucceeded, RunID: "r1", At: time.Now(), Text: "run r1 succeeded"})
	const timeout = 4 * time.Second
	d := &Deliverer{Store: s, Dir: dir, Timeout: timeout, FirstBackoff: time.Hour}
	start := time.Now()
	d.Start(t.Context())
	paged := filepath.Join(dir, "paged.json")
	waitFor(t, "the command target to get the event", func() bool {
		_, err := os.Stat(paged)
		return err == nil
	})
	took := time.Since(start)
	t.Logf("the command target got the event %s after the deliverer started, the silent webhook's timeout %s", took, timeout)
	<-taken // the webhook was tried too, and is still waiting
	d.Stop(100 * time.Millisecond)
	if took >= timeout/2 {
		t.Errorf("the command target got the event after %s: it waited for the silent webhook (timeout %s)", took, timeout)
	}
	raw, err := os.ReadFile(paged)
	if err != nil {
		t.Fatal(err)
	}
	var b Body
	if err := json.Unmarshal(raw, &b); err != nil || b.Event != workflow.EventRunSucceeded || b.IdempotencyKey != "r1/run_succeeded/1" {
		t.Errorf("the command read %s (%v)", raw, err)
	}
	rows := deliveries(t, s)
	if rows[1].Status != checkpoint.DeliveryDelivered {
		t.Errorf("command row = %+v, want delivered", rows[1])
	}
	if rows[0].Status != checkpoint.DeliveryPending || rows[0].LastError != "cut short: cadence was exiting" {
		t.Errorf("webhook row = %+v, want pending, cut short by Stop", rows[0])
	}
}

// TestClaimCoversTheTriesAhead: the rows of one target are sent one after
// the other, so the claim of each row covers the tries ahead of it on its
// target: a row is not due again for another process while this one is
// still to try it.
func TestClaimCoversTheTriesAhead(t *testing.T) {
	tried := make(chan struct{}, 8)
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		tried <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); silent.Close() })
	s := newState(t)
	wf := &workflow.Workflow{Name: "w", Notify: []*workflow.NotifyTarget{{Webhook: silent.URL, On: []string{workflow.EventItemDead}}}}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for _, item := range []string{"a", "b", "c"} {
		enqueue(t, s, wf, Event{Name: workflow.EventItemDead, RunID: "r1", Step: "fix", Item: item, At: now, Text: "dead"})
	}
	const timeout = time.Minute
	d := &Deliverer{Store: s, Timeout: timeout, Now: func() time.Time { return now }}
	ctx, cancel := context.WithCancel(t.Context())
	passed := make(chan error, 1)
	go func() { _, err := d.Pass(ctx); passed <- err }()
	<-tried
	rows := deliveries(t, s)
	cancel()
	<-passed
	for i, r := range rows {
		if want := now.Add(time.Duration(i+1)*timeout + claimMargin); !r.NextTryAt.Equal(want) || r.Attempts != 1 {
			t.Errorf("row %d claimed until %s (try %d), want %s (try 1)", r.Seq, r.NextTryAt, r.Attempts, want)
		}
	}
}
