package mockmodel

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API names the wire protocol a request was made in.
type API string

// The APIs the server speaks.
const (
	Anthropic API = "anthropic" // Anthropic Messages
	Responses API = "responses" // OpenAI Responses
	Gemini    API = "gemini"    // Google Gemini generateContent
	Chat      API = "chat"      // OpenAI chat completions
	Unknown   API = ""          // any other path
)

// Redacted replaces the value of every credential the server records.
const Redacted = "REDACTED"

// Request is one request the server received, as recorded. Credentials
// (authorization, x-api-key, x-goog-api-key, api-key headers and the key
// query parameter) are recorded as Redacted, so recorded requests can be
// printed or saved safely.
type Request struct {
	API    API
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// JSON is the body decoded as JSON (nil when it is not JSON).
	JSON map[string]any
	// Stream reports whether the client asked for a streamed answer.
	Stream bool
	// Turn reports whether the request consumed a scripted reply; side
	// requests (titles, probes, token counts) did not.
	Turn bool
	// Kind says what a side request was, e.g. "count_tokens" or
	// "next_speaker"; it is "turn" for a turn.
	Kind string
	// Reply is the answer the server sent.
	Reply Reply
	// ToolID and ToolName are the id and the tool name of the call the
	// answer made, when Reply.Tool was resolved against the tools the
	// request declares; both are empty otherwise.
	ToolID, ToolName string
	// Received is when the request arrived.
	Received time.Time

	use *toolUse // the resolved Reply.Tool
}

// Message is one message of the conversation a request carries, reduced to
// its role and text so tests can assert on it whatever the API.
type Message struct {
	// Role is "user", "assistant" or "system" ("model" is reported as
	// "assistant", "developer" as "system").
	Role string
	// Text is the concatenated text of the message's text parts, including
	// text returned by tools.
	Text string
}

// credentialHeaders are recorded with their values redacted.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Cookie"}

// newRequest records r with body, redacting credentials.
func newRequest(r *http.Request, body []byte, now time.Time) Request {
	h := r.Header.Clone()
	for _, name := range credentialHeaders {
		if _, ok := h[name]; ok {
			h[name] = []string{Redacted}
		}
	}
	q := r.URL.Query()
	if q.Has("key") {
		q.Set("key", Redacted)
	}
	req := Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		Query:    q,
		Header:   h,
		Body:     body,
		Received: now,
	}
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		req.JSON = m
	}
	return req
}

// Model returns the model the request asked for: the body's "model" field,
// or for Gemini the model in the path.
func (r Request) Model() string {
	if m, ok := r.JSON["model"].(string); ok {
		return m
	}
	if r.API == Gemini {
		if model, _, ok := geminiPath(r.Path); ok {
			return model
		}
	}
	return ""
}

// Conversation returns the request's messages in order, reduced to role and
// text. System prompts are left out: they are large and rarely what a test
// asserts on; read them from JSON when needed.
func (r Request) Conversation() []Message {
	switch r.API {
	case Anthropic, Chat:
		return messagesOf(r.JSON["messages"])
	case Responses:
		return responsesInput(r.JSON["input"])
	case Gemini:
		return geminiContents(r.JSON["contents"])
	}
	return nil
}

// Sees reports whether any message of the conversation contains s.
func (r Request) Sees(s string) bool {
	for _, m := range r.Conversation() {
		if strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// LastUserText is the text of the conversation's last user message.
func (r Request) LastUserText() string {
	conv := r.Conversation()
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == "user" {
			return conv[i].Text
		}
	}
	return ""
}

// messagesOf reads Anthropic and chat-completions messages: a role and a
// content that is a string or a list of blocks.
func messagesOf(v any) []Message {
	list, _ := v.([]any)
	var out []Message
	for _, item := range list {
		m, _ := item.(map[string]any)
		role, _ := m["role"].(string)
		if role == "system" || role == "developer" {
			continue
		}
		out = append(out, Message{Role: role, Text: textOf(m["content"])})
	}
	return out
}

// responsesInput reads an OpenAI Responses input: a string, or items of
// which messages and function-call outputs carry text.
func responsesInput(v any) []Message {
	if s, ok := v.(string); ok {
		return []Message{{Role: "user", Text: s}}
	}
	list, _ := v.([]any)
	var out []Message
	for _, item := range list {
		m, _ := item.(map[string]any)
		switch m["type"] {
		case "message", nil:
			role, _ := m["role"].(string)
			if role == "system" || role == "developer" {
				continue
			}
			out = append(out, Message{Role: role, Text: textOf(m["content"])})
		case "function_call_output":
			out = append(out, Message{Role: "user", Text: textOf(m["output"])})
		}
	}
	return out
}

// geminiContents reads Gemini contents: a role and parts with text.
func geminiContents(v any) []Message {
	list, _ := v.([]any)
	var out []Message
	for _, item := range list {
		m, _ := item.(map[string]any)
		role, _ := m["role"].(string)
		if role == "model" {
			role = "assistant"
		}
		if role == "" {
			role = "user"
		}
		out = append(out, Message{Role: role, Text: textOf(m["parts"])})
	}
	return out
}

// textOf concatenates, with newlines, the text found in a content value: a
// string, or blocks whose "text", "content" or "output" carries text.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if t := textOf(b); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		for _, key := range []string{"text", "content", "output"} {
			if t := textOf(c[key]); t != "" {
				return t
			}
		}
		if fr, ok := c["functionResponse"].(map[string]any); ok {
			b, _ := json.Marshal(fr["response"])
			return string(b)
		}
	}
	return ""
}

// ToolResult is the result of a tool call that a request sends back to
// the model: the call's id and the text the tool returned.
type ToolResult struct {
	CallID string
	Output string
	// Error reports that the agent marked the result as an error
	// (Anthropic is_error, a Gemini functionResponse with an error).
	Error bool
}

// ToolResults returns the tool results the request's conversation
// carries, in order: Anthropic tool_result blocks, OpenAI
// function_call_output, custom_tool_call_output and
// local_shell_call_output items, Gemini functionResponse parts. A CLI
// resends the whole conversation each turn, so a turn carries the results
// of every earlier call, not only of the last one.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	switch r.API {
	case Anthropic:
		for _, m := range listOf(r.JSON["messages"]) {
			for _, b := range listOf(m["content"]) {
				if b["type"] == "tool_result" {
					id, _ := b["tool_use_id"].(string)
					isErr, _ := b["is_error"].(bool)
					out = append(out, ToolResult{CallID: id, Output: textOf(b["content"]), Error: isErr})
				}
			}
		}
	case Responses:
		for _, item := range listOf(r.JSON["input"]) {
			switch item["type"] {
			case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
				id, _ := item["call_id"].(string)
				out = append(out, ToolResult{CallID: id, Output: textOf(item["output"])})
			}
		}
	case Chat:
		for _, m := range listOf(r.JSON["messages"]) {
			if m["role"] == "tool" {
				id, _ := m["tool_call_id"].(string)
				out = append(out, ToolResult{CallID: id, Output: textOf(m["content"])})
			}
		}
	case Gemini:
		for _, c := range listOf(r.JSON["contents"]) {
			for _, p := range listOf(c["parts"]) {
				fr, ok := p["functionResponse"].(map[string]any)
				if !ok {
					continue
				}
				id, _ := fr["id"].(string)
				resp, _ := fr["response"].(map[string]any)
				res := ToolResult{CallID: id, Output: textOf(resp["output"]), Error: resp["error"] != nil}
				if res.Output == "" {
					res.Output = jsonString(resp)
				}
				out = append(out, res)
			}
		}
	}
	return out
}
