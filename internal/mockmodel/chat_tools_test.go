package mockmodel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestResolveStructured maps a structured answer onto the tools Qwen Code
// 0.24.4 declared under --json-schema (the first turn TestAgentCLIQwenStructured
// saves): its structured_output, with the answer as the arguments.
func TestResolveStructured(t *testing.T) {
	tests := []struct {
		name, fixture, answer string
		wantArgs              string // "" for none
		wantInput             string
		noTool                bool
	}{
		{name: "an object", fixture: "qwen_structured_request.json", answer: `{"ok": true}`, wantArgs: `{"ok":true}`},
		{name: "not an object: sent as it is", fixture: "qwen_structured_request.json", answer: `["ok"]`, wantInput: `["ok"]`},
		{name: "not JSON: sent as it is", fixture: "qwen_structured_request.json", answer: `{"ok": tru`, wantInput: `{"ok": tru`},
		{name: "no native schema: no such tool", fixture: "qwen_resume_request.json", answer: `{"ok": true}`, noTool: true},
		// A structured answer is scripted on chat completions only.
		{name: "another API", fixture: "claude_tools_request.json", answer: `{"ok": true}`, noTool: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := Chat
			if strings.HasPrefix(tt.fixture, "claude") {
				api = Anthropic
			}
			r := loadRequest(t, tt.fixture, api, "/")
			u, err := resolveTool(r, Structured(tt.answer), "call_1")
			if tt.noTool {
				var e errNoTool
				if !errors.As(err, &e) || len(e.declared) == 0 {
					t.Fatalf("err = %v, want errNoTool listing the declared tools", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != "structured_output" || u.ID != "call_1" {
				t.Errorf("tool %q id %q, want structured_output call_1", u.Name, u.ID)
			}
			if got := chatArguments(&u); tt.wantArgs != "" && got != tt.wantArgs || tt.wantInput != "" && got != tt.wantInput {
				t.Errorf("arguments %s, want %s%s", got, tt.wantArgs, tt.wantInput)
			}
		})
	}
}

// TestStructuredOnTheWire: a structured answer arrives as a chat
// completions tool call, streamed (the name first, the arguments in
// pieces that add up) and not, with finish_reason tool_calls; the call id
// is the one recorded.
func TestStructuredOnTheWire(t *testing.T) {
	answer := `{"ok":true,"notes":"` + strings.Repeat("x", 100) + `"}`
	const tools = `"tools":[{"type":"function","function":{"name":"structured_output","parameters":{"type":"object"}}}]`
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "plain"}[stream]
		t.Run(name, func(t *testing.T) {
			s := Start(t, Call(Structured(answer)))
			body := `{"model":"m1","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,` + tools + `,"messages":[{"role":"user","content":"go"}]}`
			resp := post(t, context.Background(), s, "/v1/chat/completions", body, nil)
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var callName, id, args, finish string
			pieces := 0
			if !stream {
				var v struct {
					Choices []struct {
						FinishReason string `json:"finish_reason"`
						Message      struct {
							ToolCalls []struct {
								ID       string `json:"id"`
								Function struct{ Name, Arguments string }
							} `json:"tool_calls"`
						} `json:"message"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(b, &v); err != nil || len(v.Choices) != 1 || len(v.Choices[0].Message.ToolCalls) != 1 {
					t.Fatalf("decode %s: %v", b, err)
				}
				c := v.Choices[0]
				callName, id, args, finish = c.Message.ToolCalls[0].Function.Name, c.Message.ToolCalls[0].ID, c.Message.ToolCalls[0].Function.Arguments, c.FinishReason
			} else {
				for _, e := range readSSE(t, strings.NewReader(string(b))) {
					if e.data == "[DONE]" {
						continue
					}
					var v struct {
						Choices []struct {
							FinishReason *string `json:"finish_reason"`
							Delta        struct {
								ToolCalls []struct {
									ID       string `json:"id"`
									Function struct{ Name, Arguments string }
								} `json:"tool_calls"`
							} `json:"delta"`
						} `json:"choices"`
					}
					if err := json.Unmarshal([]byte(e.data), &v); err != nil {
						t.Fatalf("decode event %s: %v", e.data, err)
					}
					for _, c := range v.Choices {
						if c.FinishReason != nil {
							finish = *c.FinishReason
						}
						for _, tc := range c.Delta.ToolCalls {
							callName += tc.Function.Name
							id += tc.ID
							args += tc.Function.Arguments
							if tc.Function.Arguments != "" {
								pieces++
							}
						}
					}
				}
				if pieces < 2 {
					t.Errorf("the arguments came in %d piece(s), want several", pieces)
				}
			}
			rec := s.Turns()[0]
			if callName != "structured_output" || id != rec.ToolID || id != "call_mock_0001" || finish != "tool_calls" {
				t.Errorf("call %q id %q finish %q, recorded id %q; want structured_output call_mock_0001 tool_calls", callName, id, finish, rec.ToolID)
			}
			var got, want any
			if err := json.Unmarshal([]byte(args), &got); err != nil {
				t.Fatalf("arguments %q: %v", args, err)
			}
			_ = json.Unmarshal([]byte(answer), &want)
			if jsonString(got) != jsonString(want) {
				t.Errorf("arguments %s, want %s", args, answer)
			}
		})
	}
}

// TestChatToolResults reads the result of a structured_output call that
// Qwen Code refused, as a chat completions request carries it: a message
// of role tool naming the call.
func TestChatToolResults(t *testing.T) {
	r := loadRequest(t, "qwen_structured_request.json", Chat, "/v1/chat/completions")
	if got := r.ToolResults(); len(got) != 0 {
		t.Errorf("first turn has tool results %+v, want none", got)
	}
	body := `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_mock_0001","type":"function","function":{"name":"structured_output","arguments":"{\"ok\":\"yes\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_mock_0001","content":"params/ok must be boolean"}]}`
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	got := Request{API: Chat, JSON: v}.ToolResults()
	if len(got) != 1 || got[0].CallID != "call_mock_0001" || got[0].Output != "params/ok must be boolean" {
		t.Errorf("tool results %+v, want the refusal of call_mock_0001", got)
	}
}
