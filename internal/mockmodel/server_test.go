package mockmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

// post sends body to s at path and returns the response.
func post(t *testing.T, ctx context.Context, s *Server, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readSSE parses an event stream.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	return out
}

// field walks a decoded JSON value along keys (strings) and indexes (ints).
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func decode(t *testing.T, data string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

// answer is a text long enough to arrive in several chunks, with
// multi-byte runes that must not be split.
const answer = `{"ok": true, "note": "ünïcödé survives chunking — intact"}`

// TestStreamedAnswer checks, for each API, that the streamed deltas add up
// to the scripted text and that the stream ends the way clients expect.
func TestStreamedAnswer(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		body  string
		delta func(e sseEvent, v any) string
		last  func(e sseEvent, v any) bool // the closing event
	}{
		{
			name: "anthropic",
			path: "/v1/messages",
			body: `{"model":"claude-x","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			delta: func(e sseEvent, v any) string {
				if e.name != "content_block_delta" || field(v, "delta", "type") != "text_delta" {
					return ""
				}
				s, _ := field(v, "delta", "text").(string)
				return s
			},
			last: func(e sseEvent, v any) bool { return e.name == "message_stop" },
		},
		{
			name: "responses",
			path: "/v1/responses",
			body: `{"model":"gpt-x","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`,
			delta: func(e sseEvent, v any) string {
				if e.name != "response.output_text.delta" {
					return ""
				}
				s, _ := field(v, "delta").(string)
				return s
			},
			last: func(e sseEvent, v any) bool {
				return e.name == "response.completed" && field(v, "response", "usage", "total_tokens") != nil
			},
		},
		{
			name: "gemini",
			path: "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
			body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			delta: func(e sseEvent, v any) string {
				s, _ := field(v, "candidates", 0, "content", "parts", 0, "text").(string)
				return s
			},
			last: func(e sseEvent, v any) bool {
				return field(v, "candidates", 0, "finishReason") == "STOP" && field(v, "usageMetadata") != nil
			},
		},
		{
			name: "chat",
			path: "/v1/chat/completions",
			body: `{"model":"m","stream":true,"response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`,
			delta: func(e sseEvent, v any) string {
				s, _ := field(v, "choices", 0, "delta", "content").(string)
				return s
			},
			last: func(e sseEvent, v any) bool { return e.data == "[DONE]" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Text(answer))
			resp := post(t, context.Background(), s, tt.path, tt.body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			events := readSSE(t, resp.Body)
			if len(events) < 3 {
				t.Fatalf("got %d events, want a stream", len(events))
			}
			var text strings.Builder
			deltas := 0
			for _, e := range events {
				if e.data == "[DONE]" {
					continue
				}
				if d := tt.delta(e, decode(t, e.data)); d != "" {
					text.WriteString(d)
					deltas++
				}
			}
			if text.String() != answer {
				t.Errorf("deltas add up to %q, want %q", text.String(), answer)
			}
			if deltas < 2 {
				t.Errorf("answer came in %d delta(s), want it split", deltas)
			}
			lastEv := events[len(events)-1]
			var v any
			if lastEv.data != "[DONE]" {
				v = decode(t, lastEv.data)
			}
			if !tt.last(lastEv, v) {
				t.Errorf("stream ends with %s %s", lastEv.name, lastEv.data)
			}
			turns := s.Turns()
			if len(turns) != 1 || !turns[0].Stream || turns[0].API != API(tt.name) {
				t.Errorf("recorded turns = %+v", turns)
			}
		})
	}
}

// TestPlainAnswer checks the non-streaming form of each API.
func TestPlainAnswer(t *testing.T) {
	tests := []struct {
		name string
		path string
		body string
		text []any // path to the answer text in the response
	}{
		{"anthropic", "/v1/messages", `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, []any{"content", 0, "text"}},
		{"responses", "/v1/responses", `{"model":"g","input":"hi"}`, []any{"output", 0, "content", 0, "text"}},
		{"gemini", "/v1beta/models/g:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`, []any{"candidates", 0, "content", "parts", 0, "text"}},
		{"gemini-array", "/v1beta/models/g:streamGenerateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`, []any{0, "candidates", 0, "content", "parts", 0, "text"}},
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, []any{"choices", 0, "message", "content"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Text("short"))
			resp := post(t, context.Background(), s, tt.path, tt.body, nil)
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if got := field(decode(t, string(b)), tt.text...); got != "short" {
				t.Errorf("answer = %v in %s", got, b)
			}
		})
	}
}

// TestErrorReplies checks the status, retry-after and error body of each
// API's error answer.
func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		reply      Reply
		wantStatus int
		errPath    []any
		wantType   string
	}{
		{"anthropic 429", "/v1/messages", RateLimited("7"), 429, []any{"error", "type"}, "rate_limit_error"},
		{"anthropic 529", "/v1/messages", Overloaded(), 529, []any{"error", "type"}, "overloaded_error"},
		{"anthropic 401", "/v1/messages", Reply{Status: 401}, 401, []any{"error", "type"}, "authentication_error"},
		{"anthropic custom type", "/v1/messages", Reply{Status: 400, ErrorType: "billing_error"}, 400, []any{"error", "type"}, "billing_error"},
		{"responses 429", "/v1/responses", RateLimited("3"), 429, []any{"error", "code"}, "rate_limit_exceeded"},
		{"responses 500", "/v1/responses", Reply{Status: 500}, 500, []any{"error", "type"}, "server_error"},
		{"gemini 429", "/v1beta/models/g:streamGenerateContent?alt=sse", RateLimited("5"), 429, []any{"error", "status"}, "RESOURCE_EXHAUSTED"},
		{"gemini 503", "/v1beta/models/g:streamGenerateContent?alt=sse", Reply{Status: 503}, 503, []any{"error", "status"}, "UNAVAILABLE"},
		{"chat 429", "/v1/chat/completions", RateLimited("2"), 429, []any{"error", "code"}, "rate_limit_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, tt.reply)
			resp := post(t, context.Background(), s, tt.path, `{"stream":true,"messages":[]}`, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.reply.RetryAfter {
				t.Errorf("retry-after = %q, want %q", got, tt.reply.RetryAfter)
			}
			b, _ := io.ReadAll(resp.Body)
			v := decode(t, string(b))
			if got := field(v, tt.errPath...); got != tt.wantType {
				t.Errorf("error type = %v, want %s in %s", got, tt.wantType, b)
			}
			if msg, _ := field(v, "error", "message").(string); msg == "" {
				t.Errorf("no error message in %s", b)
			}
		})
	}
}

// TestGeminiRetryInfo checks that a Gemini 429 carries the retry delay the
// way Google APIs do, in a RetryInfo detail.
func TestGeminiRetryInfo(t *testing.T) {
	s := Start(t, RateLimited("12"))
	resp := post(t, context.Background(), s, "/v1beta/models/g:generateContent", `{}`, nil)
	b, _ := io.ReadAll(resp.Body)
	v := decode(t, string(b))
	if got := field(v, "error", "details", 0, "retryDelay"); got != "12s" {
		t.Errorf("retryDelay = %v in %s", got, b)
	}
}

// TestScript checks that turns take replies in order, that the last reply
// repeats, and that side requests take none.
func TestScript(t *testing.T) {
	s := Start(t, Text("one"), RateLimited("1"), Text("three"))
	ctx := context.Background()
	turn := `{"model":"c","messages":[{"role":"user","content":"hi"}]}`
	var got []string
	for range 4 {
		resp := post(t, ctx, s, "/v1/messages", turn, nil)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			got = append(got, resp.Status[:3])
			continue
		}
		text, _ := field(decode(t, string(b)), "content", 0, "text").(string)
		got = append(got, text)
		post(t, ctx, s, "/v1/messages/count_tokens", turn, nil)
	}
	want := []string{"one", "429", "three", "three"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("answers = %v, want %v", got, want)
	}
	if n := len(s.Turns()); n != 4 {
		t.Errorf("turns = %d, want 4", n)
	}
	if n := len(s.Requests()); n != 7 {
		t.Errorf("requests = %d, want 7 (4 turns, 3 count_tokens)", n)
	}
	for _, r := range s.Requests() {
		if r.Turn == (r.Kind == KindCountTokens) {
			t.Errorf("request %s: Turn %v with kind %s", r.Path, r.Turn, r.Kind)
		}
	}
	s.Enqueue(Text("five"))
	resp := post(t, ctx, s, "/v1/messages", turn, nil)
	b, _ := io.ReadAll(resp.Body)
	if text := field(decode(t, string(b)), "content", 0, "text"); text != "five" {
		t.Errorf("after Enqueue: answer %v, want five", text)
	}
}

// TestEmptyScript checks that a turn with nothing scripted is a 500 the
// test will notice, not a silent empty answer.
func TestEmptyScript(t *testing.T) {
	s := Start(t)
	resp := post(t, context.Background(), s, "/v1/responses", `{"input":"hi"}`, nil)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", resp.StatusCode)
	}
}

// TestUnknownPath checks that an unimplemented path is a recorded 404.
func TestUnknownPath(t *testing.T) {
	s := Start(t, Text("x"))
	resp := post(t, context.Background(), s, "/v2/whatever", `{}`, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Kind != KindUnknown || reqs[0].Turn {
		t.Errorf("recorded %+v", reqs)
	}
}

// TestRedaction checks that credentials never reach the record.
func TestRedaction(t *testing.T) {
	s := Start(t, Text("x"))
	const secret = "sk-secret-value"
	post(t, context.Background(), s, "/v1beta/models/g:generateContent?key="+secret, `{}`, map[string]string{
		"X-Api-Key":      secret,
		"Authorization":  "Bearer " + secret,
		"X-Goog-Api-Key": secret,
		"Anthropic-Beta": "visible",
	})
	r := s.Requests()[0]
	for name, values := range r.Header {
		for _, v := range values {
			if strings.Contains(v, secret) {
				t.Errorf("header %s keeps the secret", name)
			}
		}
	}
	if r.Query.Get("key") != Redacted {
		t.Errorf("query key = %q, want %s", r.Query.Get("key"), Redacted)
	}
	if r.Header.Get("X-Api-Key") != Redacted || r.Header.Get("Anthropic-Beta") != "visible" {
		t.Errorf("headers = %v", r.Header)
	}
}

// TestDelay checks that a slow answer holds the client until it gives up,
// and that the request is visible while it waits.
func TestDelay(t *testing.T) {
	s := Start(t, Reply{Text: "late", Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/responses", strings.NewReader(`{"input":"hi"}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	turns := s.WaitTurns(t, 1, 10*time.Second)
	if turns[0].Reply.Delay != time.Hour {
		t.Errorf("recorded reply delay = %v", turns[0].Reply.Delay)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("client error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client still waiting after cancel")
	}
}

// TestCloseEndsDelay checks that Close does not wait out a delayed answer.
func TestCloseEndsDelay(t *testing.T) {
	s := Start(t, Reply{Text: "late", Delay: time.Hour})
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	s.WaitTurns(t, 1, 10*time.Second)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the delayed answer")
	}
	<-done
}
