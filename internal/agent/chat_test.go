package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/mockmodel"
)

const chatKey = "sk-chat-secret-123"

// chatSpec is a turn against s with a key in the agent's environment.
func chatSpec(s *mockmodel.Server, out io.Writer) agent.ChatSpec {
	return agent.ChatSpec{
		BaseURL: s.URL + "/v1", Model: "qwen3-coder", APIKeyEnv: "CHAT_KEY",
		Env: []string{"CHAT_KEY=wrong", "CHAT_KEY=" + chatKey}, SessionID: "chat-1",
		Prompt: "Reply with {\"ok\": true}.", Output: out,
	}
}

var okSchema = json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`)

func TestRunChatAnswer(t *testing.T) {
	s := mockmodel.Start(t, mockmodel.Text(`{"ok": true}`))
	var out bytes.Buffer
	spec := chatSpec(s, &out)
	spec.History = []agent.ChatMessage{
		{Role: "system", Content: "You write JSON."},
		{Role: "user", Content: "first prompt"},
		{Role: "assistant", Content: "first answer"},
	}
	spec.Schema = okSchema
	res, msgs, err := agent.RunChat(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Text) != `{"ok": true}` || res.SessionID != "chat-1" || res.IsError || res.Transient || res.Truncated || res.Turns != 1 {
		t.Errorf("result %+v", res)
	}
	turns := s.Turns()
	if len(turns) != 1 {
		t.Fatalf("mock saw %d turns, want 1", len(turns))
	}
	req := turns[0]
	if req.Path != "/v1/chat/completions" || req.Model() != "qwen3-coder" || req.Header.Get("Authorization") != mockmodel.Redacted {
		t.Errorf("request %s model %q authorization %q", req.Path, req.Model(), req.Header.Get("Authorization"))
	}
	conv := req.Conversation()
	wantConv := []mockmodel.Message{{Role: "user", Text: "first prompt"}, {Role: "assistant", Text: "first answer"}, {Role: "user", Text: spec.Prompt}}
	if fmt.Sprint(conv) != fmt.Sprint(wantConv) {
		t.Errorf("conversation %v, want %v", conv, wantConv)
	}
	rf, _ := req.JSON["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "handoff" || js["strict"] != false || js["schema"] == nil {
		t.Errorf("response_format = %v", req.JSON["response_format"])
	}
	// The mock counts a quarter of the bytes, plus one, as tokens.
	if wantIn, wantOut := int64(len(req.Body)/4+1), int64(len(`{"ok": true}`)/4+1); res.InputTokens != wantIn || res.OutputTokens != wantOut {
		t.Errorf("tokens %d/%d, want %d/%d", res.InputTokens, res.OutputTokens, wantIn, wantOut)
	}
	want := []agent.ChatMessage{{Role: "user", Content: spec.Prompt}, {Role: "assistant", Content: `{"ok": true}`}}
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("messages %v, want %v", msgs, want)
	}
	if strings.Contains(out.String(), chatKey) || !strings.Contains(out.String(), "first answer") || !strings.Contains(out.String(), "HTTP 200") {
		t.Errorf("output must hold the exchange without the key:\n%s", out.String())
	}
}

func TestRunChatErrors(t *testing.T) {
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name                 string
		reply                mockmodel.Reply
		transient, permanent bool
		minWait, maxWait     time.Duration
	}{
		{"429 with seconds", mockmodel.RateLimited("3"), true, false, 3 * time.Second, 3 * time.Second},
		{"429 with a date", mockmodel.Reply{Status: 429, RetryAfter: httpDate}, true, false, 80 * time.Second, 90 * time.Second},
		{"503", mockmodel.Reply{Status: 503}, true, false, 0, 0},
		{"529", mockmodel.Overloaded(), true, false, 0, 0},
		{"401", mockmodel.Reply{Status: 401}, false, true, 0, 0},
		{"403", mockmodel.Reply{Status: 403}, false, true, 0, 0},
		{"400 about something else", mockmodel.Reply{Status: 400, ErrorMessage: "messages: too long"}, false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mockmodel.Start(t, tt.reply)
			spec := chatSpec(s, nil)
			spec.Schema = okSchema
			res, msgs, err := agent.RunChat(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Transient != tt.transient || res.Permanent != tt.permanent || len(msgs) != 0 {
				t.Errorf("is_error %v transient %v permanent %v messages %v, want true %v %v none",
					res.IsError, res.Transient, res.Permanent, msgs, tt.transient, tt.permanent)
			}
			if res.RetryAfter < tt.minWait || res.RetryAfter > tt.maxWait {
				t.Errorf("RetryAfter = %v, want within [%v, %v]", res.RetryAfter, tt.minWait, tt.maxWait)
			}
			// A 401 is a login that failed; a 403 a permission the key lacks.
			if res.Auth != (tt.reply.Status == 401) {
				t.Errorf("Auth = %v for status %d", res.Auth, tt.reply.Status)
			}
			if !strings.Contains(res.ErrorMessage, fmt.Sprint(tt.reply.Status)) {
				t.Errorf("ErrorMessage %q does not name status %d", res.ErrorMessage, tt.reply.Status)
			}
			if n := len(s.Turns()); n != 1 || res.SchemaUnsupported {
				t.Errorf("%d requests, schema unsupported %v: only a 400 about response_format is repeated", n, res.SchemaUnsupported)
			}
		})
	}
}

func TestRunChatSchemaFallback(t *testing.T) {
	tests := []struct {
		name        string
		mode        string
		replies     []mockmodel.Reply
		wantFormats []bool // per request: was response_format sent
		unsupported bool
	}{
		{"rejected response_format is dropped once", agent.SchemaModeAuto,
			[]mockmodel.Reply{{Status: 400, ErrorMessage: "response_format json_schema is not supported by this model"}, mockmodel.Text(`{"ok": true}`)},
			[]bool{true, false}, true},
		{"schema mode off", agent.SchemaModeOff, []mockmodel.Reply{mockmodel.Text(`{"ok": true}`)}, []bool{false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mockmodel.Start(t, tt.replies...)
			spec := chatSpec(s, nil)
			spec.Schema, spec.SchemaMode = okSchema, tt.mode
			res, msgs, err := agent.RunChat(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			turns := s.Turns()
			var got []bool
			for _, r := range turns {
				_, has := r.JSON["response_format"]
				got = append(got, has)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantFormats) || res.SchemaUnsupported != tt.unsupported {
				t.Errorf("response_format sent %v unsupported %v, want %v %v", got, res.SchemaUnsupported, tt.wantFormats, tt.unsupported)
			}
			if string(res.Text) != `{"ok": true}` || res.IsError || len(msgs) != 2 {
				t.Errorf("Text %q is_error %v messages %v", res.Text, res.IsError, msgs)
			}
		})
	}
}

// chatServer answers every request with handler, for answers the mock does
// not script (a truncated answer, an endless body).
func chatServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestRunChatTruncated(t *testing.T) {
	url := chatServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\": tr"},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":4096}}`)
	})
	res, msgs, err := agent.RunChat(context.Background(), agent.ChatSpec{BaseURL: url, Model: "m", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.IsError || string(res.Text) != `{"ok": tr` || res.InputTokens != 12 || res.OutputTokens != 4096 || len(msgs) != 2 {
		t.Errorf("truncated %v is_error %v text %q tokens %d/%d messages %d", res.Truncated, res.IsError, res.Text, res.InputTokens, res.OutputTokens, len(msgs))
	}
}

// TestRunChatCachedTokens: prompt_tokens includes the cached ones, which
// prompt_tokens_details.cached_tokens counts, as for the other agents.
func TestRunChatCachedTokens(t *testing.T) {
	url := chatServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}}`)
	})
	res, _, err := agent.RunChat(context.Background(), agent.ChatSpec{BaseURL: url, Model: "m", Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if res.InputTokens != 2006 || res.CachedTokens != 1920 || res.OutputTokens != 300 {
		t.Errorf("tokens %d (%d cached)/%d, want 2006 (1920 cached)/300", res.InputTokens, res.CachedTokens, res.OutputTokens)
	}
}

func TestRunChatStops(t *testing.T) {
	endless := chatServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := bytes.Repeat([]byte(" "), 4096)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	slow := mockmodel.Start(t, mockmodel.Reply{Text: "{}", Delay: time.Minute})
	arrived := make(chan struct{}, 1)
	hanging := chatServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection only once the body is read
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/v1"
	closed.Close()

	tests := []struct {
		name      string
		spec      agent.ChatSpec
		cancel    bool
		want      agent.StopReason
		transient bool
	}{
		{"idle timeout", agent.ChatSpec{BaseURL: slow.URL + "/v1", IdleTimeout: 200 * time.Millisecond}, false, agent.StopStuck, false},
		{"timeout", agent.ChatSpec{BaseURL: slow.URL + "/v1", Timeout: 200 * time.Millisecond, IdleTimeout: time.Minute}, false, agent.StopTimeout, false},
		{"caller cancels", agent.ChatSpec{BaseURL: hanging}, true, agent.StopInterrupted, false},
		{"too large", agent.ChatSpec{BaseURL: endless, MaxBytes: 1 << 20}, false, agent.StopTooLarge, false},
		{"connection refused", agent.ChatSpec{BaseURL: closedURL}, false, agent.StopNone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				go func() {
					<-arrived // the request is in flight
					cancel()
				}()
			}
			tt.spec.Model, tt.spec.Prompt = "m", "p"
			res, msgs, err := agent.RunChat(ctx, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != tt.want || !res.IsError || res.Transient != tt.transient || len(msgs) != 0 {
				t.Errorf("stop %q is_error %v transient %v messages %v, want %q true %v none (%s)",
					res.Stop, res.IsError, res.Transient, msgs, tt.want, tt.transient, res.ErrorMessage)
			}
			if res.Elapsed > 20*time.Second {
				t.Errorf("Elapsed = %v: the stop did not take effect", res.Elapsed)
			}
		})
	}
}

func TestRunChatSpecErrors(t *testing.T) {
	tests := []agent.ChatSpec{
		{Model: "m"},
		{BaseURL: "http://127.0.0.1:1/v1"},
		{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Schema: json.RawMessage("{")},
	}
	for i, spec := range tests {
		if _, _, err := agent.RunChat(context.Background(), spec); !errors.Is(err, agent.ErrChatSpec) {
			t.Errorf("case %d: err = %v, want ErrChatSpec", i, err)
		}
	}
}
