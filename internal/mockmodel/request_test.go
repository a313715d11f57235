package mockmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The conversation cli_test.go drives through each real CLI: a first turn
// and a follow-up in the same session. The fixtures in testdata are the
// request bodies the CLIs sent on the follow-up turn.
const (
	firstPrompt    = `Reply with exactly the JSON object {"ok": true} and nothing else.`
	firstAnswer    = `{"ok": true}`
	followupPrompt = `Your previous answer was accepted. Now reply with {"ok": true, "again": true}.`
	followupAnswer = `{"ok": true, "again": true}`
)

// loadRequest reads a recorded request body from testdata as a Request of
// api, the way serveHTTP would have recorded it.
func loadRequest(t *testing.T, name string, api API, path string) Request {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r := Request{API: api, Path: path, Body: body}
	if err := json.Unmarshal(body, &r.JSON); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return r
}

// TestConversationOfRealRequests checks that the conversation read from a
// real follow-up request has the first exchange, in order, and ends with
// the follow-up prompt.
func TestConversationOfRealRequests(t *testing.T) {
	tests := []struct {
		file string
		api  API
		path string
	}{
		{"claude_resume_request.json", Anthropic, "/v1/messages"},
		{"codex_resume_request.json", Responses, "/v1/responses"},
		{"gemini_resume_request.json", Gemini, "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent"},
		{"qwen_resume_request.json", Chat, "/v1/chat/completions"},
		{"opencode_resume_request.json", Chat, "/v1/chat/completions"},
		{"pi_resume_request.json", Chat, "/v1/chat/completions"},
		{"copilot_resume_request.json", Chat, "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := loadRequest(t, tt.file, tt.api, tt.path)
			conv := r.Conversation()
			prompt, answer := -1, -1
			for i, m := range conv {
				if prompt < 0 && m.Role == "user" && strings.Contains(m.Text, firstPrompt) {
					prompt = i
				}
				if answer < 0 && m.Role == "assistant" && strings.TrimSpace(m.Text) == firstAnswer {
					answer = i
				}
			}
			if prompt < 0 || answer < 0 || answer < prompt {
				t.Errorf("first prompt at %d, answer at %d in %+v", prompt, answer, conv)
			}
			if !strings.Contains(r.LastUserText(), followupPrompt) {
				t.Errorf("last user text = %q", r.LastUserText())
			}
			if !r.Sees(firstAnswer) || r.Sees("text that was never sent") {
				t.Error("Sees disagrees with the conversation")
			}
			if r.Model() == "" {
				t.Error("no model")
			}
		})
	}
}

// TestClassifyRealRequests checks that Gemini CLI's router request, Qwen
// Code's memory extraction and opencode's title request are side
// requests and their main turns are turns.
func TestClassifyRealRequests(t *testing.T) {
	tests := []struct {
		file, path, want string
	}{
		{"gemini_router_request.json", "/v1beta/models/gemini-3.5-flash-lite:generateContent", KindRouter},
		{"gemini_resume_request.json", "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent", KindTurn},
		{"gemini_resume_request.json", "/v1beta/models/gemini-3.1-pro-preview:countTokens", KindCountTokens},
		{"claude_resume_request.json", "/v1/messages", KindTurn},
		{"claude_resume_request.json", "/v1/messages/count_tokens", KindCountTokens},
		{"codex_resume_request.json", "/v1/responses", KindTurn},
		{"qwen_resume_request.json", "/v1/chat/completions", KindTurn},
		{"qwen_memory_request.json", "/v1/chat/completions", KindMemory},
		{"opencode_resume_request.json", "/v1/chat/completions", KindTurn},
		{"opencode_title_request.json", "/v1/chat/completions", KindTitle},
		{"pi_resume_request.json", "/v1/chat/completions", KindTurn},
		{"copilot_resume_request.json", "/v1/chat/completions", KindTurn},
	}
	for _, tt := range tests {
		t.Run(tt.file+tt.path, func(t *testing.T) {
			r := loadRequest(t, tt.file, route(tt.path), tt.path)
			if got := classify(r); got != tt.want {
				t.Errorf("classify = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSideReplies checks that the default answers to Gemini CLI's
// structured side requests are JSON with the fields its schemas require.
func TestSideReplies(t *testing.T) {
	tests := []struct {
		kind     string
		required []string
	}{
		{KindRouter, []string{"complexity_reasoning", "complexity_score"}},
		{KindNextSpeaker, []string{"reasoning", "next_speaker"}},
		{KindLoopCheck, []string{"unproductive_state_analysis", "unproductive_state_confidence"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			var v map[string]any
			if err := json.Unmarshal([]byte(sideReply(Request{Kind: tt.kind}).Text), &v); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.required {
				if _, ok := v[f]; !ok {
					t.Errorf("missing %s in %v", f, v)
				}
			}
		})
	}
}

// TestConversationShapes checks the content shapes each API allows.
func TestConversationShapes(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
		want []Message
	}{
		{"anthropic string and blocks", Anthropic,
			`{"system":"sys","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"tool_use","id":"x","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"c"}]}]}]}`,
			[]Message{{"user", "a"}, {"assistant", "b"}, {"user", "c"}}},
		{"responses string input", Responses, `{"input":"hello"}`, []Message{{"user", "hello"}}},
		{"responses items", Responses,
			`{"input":[{"type":"message","role":"developer","content":"dev"},{"role":"user","content":[{"type":"input_text","text":"q"}]},{"type":"function_call","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"1","output":"out"}]}`,
			[]Message{{"user", "q"}, {"user", "out"}}},
		{"gemini roles", Gemini,
			`{"contents":[{"role":"user","parts":[{"text":"u1"},{"text":"u2"}]},{"role":"model","parts":[{"text":"m"}]},{"parts":[{"functionResponse":{"name":"f","response":{"r":1}}}]}]}`,
			[]Message{{"user", "u1\nu2"}, {"assistant", "m"}, {"user", `{"r":1}`}}},
		{"chat", Chat, `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]}`,
			[]Message{{"user", "u"}, {"assistant", "a"}}},
		{"not json", Chat, `nope`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{API: tt.api, Body: []byte(tt.body)}
			json.Unmarshal(r.Body, &r.JSON)
			got := r.Conversation()
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("message %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
