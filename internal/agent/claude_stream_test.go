package agent

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// feed runs data through the stdout side of a session in small chunks, so
// that lines split across reads are exercised, and returns the result.
func feed(t *testing.T, proto Protocol, now time.Time, data []byte) *Result {
	t.Helper()
	s := newSession(withDefaults(Spec{Protocol: proto}), nil)
	if c, ok := s.events.(*claudeStream); ok {
		c.now = func() time.Time { return now }
	}
	for len(data) > 0 {
		n := min(7, len(data))
		s.consume(data[:n])
		data = data[n:]
	}
	s.endStdout()
	return s.result()
}

func TestClaudeStreamTranscripts(t *testing.T) {
	now := time.Unix(1771390800-3600, 0)
	tests := []struct {
		file  string
		check func(t *testing.T, r *Result)
	}{
		{"claude_success.jsonl", func(t *testing.T, r *Result) {
			wantText := `{"tasks": ["add cart", "add checkout"]}`
			if string(r.Text) != wantText {
				t.Errorf("Text = %q, want %q", r.Text, wantText)
			}
			if r.SessionID != "6f1c2a4e-8d3b-4c7a-9e21-5b0d7f3a1c88" || r.IsError || r.Transient || r.Permanent {
				t.Errorf("session %q error %v transient %v permanent %v", r.SessionID, r.IsError, r.Transient, r.Permanent)
			}
			// Input: input_tokens, cache_creation_input_tokens and
			// cache_read_input_tokens of the result's usage.
			if r.CostUSD != 0.0421 || r.Turns != 3 || r.InputTokens != 11+9120+14200 || r.CachedTokens != 14200 || r.OutputTokens != 80 {
				t.Errorf("cost %v turns %d tokens %d (%d cached)/%d", r.CostUSD, r.Turns, r.InputTokens, r.CachedTokens, r.OutputTokens)
			}
			if string(r.StructuredOutput) != `{"tasks":["add cart","add checkout"]}` {
				t.Errorf("StructuredOutput = %s", r.StructuredOutput)
			}
		}},
		{"claude_overloaded.jsonl", func(t *testing.T, r *Result) {
			if !r.IsError || !r.Transient || r.Permanent {
				t.Errorf("is_error %v transient %v permanent %v: subtype success must not hide is_error", r.IsError, r.Transient, r.Permanent)
			}
			if !strings.Contains(r.ErrorMessage, "overloaded_error") {
				t.Errorf("ErrorMessage = %q", r.ErrorMessage)
			}
			if r.SessionID != "a3d9e1f0-1111-4b2c-8d3e-222233334444" {
				t.Errorf("SessionID = %q", r.SessionID)
			}
		}},
		{"claude_rate_limited.jsonl", func(t *testing.T, r *Result) {
			if !r.IsError || !r.Transient {
				t.Errorf("is_error %v transient %v", r.IsError, r.Transient)
			}
			if !r.ResetAt.Equal(time.Unix(1771390800, 0)) || r.RetryAfter != time.Hour {
				t.Errorf("ResetAt %v RetryAfter %v, want %v and 1h", r.ResetAt, r.RetryAfter, time.Unix(1771390800, 0).UTC())
			}
			if r.ErrorMessage != "5-hour limit reached ∙ resets 5am" {
				t.Errorf("ErrorMessage = %q", r.ErrorMessage)
			}
		}},
		{"claude_no_conversation.jsonl", func(t *testing.T, r *Result) {
			if !r.SessionNotFound || !r.IsError || r.Transient {
				t.Errorf("not found %v is_error %v transient %v", r.SessionNotFound, r.IsError, r.Transient)
			}
			if !strings.HasPrefix(r.ErrorMessage, "No conversation found with session ID: 35814092") {
				t.Errorf("ErrorMessage = %q", r.ErrorMessage)
			}
		}},
		{"claude_auth.jsonl", func(t *testing.T, r *Result) {
			if !r.Permanent || r.Transient || !r.IsError {
				t.Errorf("permanent %v transient %v is_error %v", r.Permanent, r.Transient, r.IsError)
			}
		}},
		{"claude_help_escaped.jsonl", func(t *testing.T, r *Result) {
			if !r.Help || string(r.HelpContext) != `{"question":"which db?","options":["postgres","sqlite"]}` {
				t.Errorf("Help %v context %s", r.Help, r.HelpContext)
			}
			if string(r.Text) != "Waiting for guidance." || r.IsError {
				t.Errorf("Text %q is_error %v", r.Text, r.IsError)
			}
		}},
		{"claude_untrusted.jsonl", func(t *testing.T, r *Result) {
			if r.SessionID != "77777777-8888-4999-8aaa-bbbbbbbbbbbb" {
				t.Errorf("SessionID = %q", r.SessionID)
			}
			want := "Here: {\"ok\": true}\nsecond part"
			if string(r.Text) != want || r.IsError {
				t.Errorf("Text %q is_error %v, want %q from the readable events only", r.Text, r.IsError, want)
			}
		}},
		{"claude_result_not_last.jsonl", func(t *testing.T, r *Result) {
			if string(r.Text) != `{"done": true}` || r.CostUSD != 0.5 {
				t.Errorf("Text %q cost %v", r.Text, r.CostUSD)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r := feed(t, ProtocolClaudeStream, now, data)
			if r.StdoutBytes != int64(len(data)) {
				t.Errorf("StdoutBytes = %d, want %d", r.StdoutBytes, len(data))
			}
			tt.check(t, r)
		})
	}
}

func TestClaudeStreamErrorClassification(t *testing.T) {
	tests := []struct {
		name                          string
		line                          string
		isError, transient, permanent bool
	}{
		{"is_error decides, not subtype", `{"type":"result","subtype":"error_during_execution","is_error":false,"result":"{}"}`, false, false, false},
		{"429 status", `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: 429"}`, true, true, false},
		{"5xx status", `{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"API Error: 500"}`, true, true, false},
		{"status only in text", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 503 upstream connect error"}`, true, true, false},
		{"network failure text", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: Connection error."}`, true, true, false},
		{"401 status", `{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key"}`, true, false, true},
		{"billing error event", `{"type":"assistant","message":{"content":[{"type":"text","text":"Credit balance is too low"}]},"error":"billing_error"}`, false, false, true},
		{"rate limit allowed is no error", `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1771390800}}`, false, false, false},
		{"recovered after a rejected rate limit", `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1771390800}}` + "\n" +
			`{"type":"result","subtype":"success","is_error":false,"result":"{}"}`, false, false, false},
		{"plain model failure", `{"type":"result","subtype":"success","is_error":true,"result":"I could not finish the task."}`, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feed(t, ProtocolClaudeStream, time.Now(), []byte(tt.line+"\n"))
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent {
				t.Errorf("is_error %v transient %v permanent %v, want %v %v %v",
					r.IsError, r.Transient, r.Permanent, tt.isError, tt.transient, tt.permanent)
			}
		})
	}
}

func TestHelpSignal(t *testing.T) {
	tests := []struct {
		name        string
		proto       Protocol
		out         string
		wantHelp    bool
		wantContext string
	}{
		{"text marker and context", ProtocolText, "working\n>>>HELP<<<\n{\"question\": \"which db?\"}\nmore\n", true, `{"question":"which db?"}`},
		{"text marker without context", ProtocolText, ">>>HELP<<<\nplease advise\n", true, ""},
		{"text context on the marker line", ProtocolText, "note >>>HELP<<< {\"q\": 1}\n", true, `{"q":1}`},
		{"escaped marker is not decoded in text", ProtocolText, "\\u003e\\u003e\\u003eHELP\\u003c\\u003c\\u003c\n", false, ""},
		{"no marker", ProtocolText, "{\"help\": true}\n", false, ""},
		{"escaped marker decoded in stream", ProtocolClaudeStream,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"\u003e\u003e\u003eHELP\u003c\u003c\u003c"}]}}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"text","text":"{\"need\": \"schema\"}"}]}}` + "\n",
			true, `{"need":"schema"}`},
		{"raw marker line in stream", ProtocolClaudeStream, ">>>HELP<<<\n{\"a\": [1]}\n", true, `{"a":[1]}`},
		{"marker inside a tool input is not text", ProtocolClaudeStream,
			`{"type":"assistant","message":{"content":[{"type":"tool_use","input":{"cmd":">>>HELP<<<"}}]}}` + "\n", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feed(t, tt.proto, time.Now(), []byte(tt.out))
			if r.Help != tt.wantHelp || string(r.HelpContext) != tt.wantContext {
				t.Errorf("Help %v context %q, want %v %q", r.Help, r.HelpContext, tt.wantHelp, tt.wantContext)
			}
			if tt.wantContext != "" && !json.Valid(r.HelpContext) {
				t.Errorf("HelpContext %q is not JSON", r.HelpContext)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	tb := tailBuffer{size: 5}
	for _, p := range []string{"ab", "cd", "efg", "", "hijklmnop", "q"} {
		tb.write([]byte(p))
	}
	if got := tb.String(); got != "mnopq" {
		t.Errorf("tail = %q, want %q", got, "mnopq")
	}
}
