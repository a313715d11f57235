package mockmodel

import (
	"fmt"
	"net/http"
)

// serveChat answers an OpenAI chat completions request. response_format is
// accepted and not enforced: the scripted text is the answer, which is how
// a test gets a model that ignores the format it was asked for.
func serveChat(w http.ResponseWriter, rec Request) {
	reply := rec.Reply
	if reply.isError() {
		writeOpenAIError(w, reply)
		return
	}
	id := fmt.Sprintf("chatcmpl-mock%016x", rec.Received.UnixNano())
	created := rec.Received.Unix()
	model := rec.Model()
	in, out := tokens(len(rec.Body)), tokens(len(reply.Text))
	if rec.use != nil {
		out = tokens(rec.use.size())
	}
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if !rec.Stream {
		msg, finish := map[string]any{"role": "assistant", "content": reply.Text}, "stop"
		if u := rec.use; u != nil {
			msg, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": u.ID, "type": "function", "function": map[string]any{"name": u.Name, "arguments": chatArguments(u)}}}}, "tool_calls"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   usage,
		})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s := startSSE(w)
	if u := rec.use; u != nil {
		// The call's name comes first, its arguments in pieces after it,
		// as the API streams them.
		s.event("", chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": u.ID, "type": "function", "function": map[string]any{"name": u.Name, "arguments": ""}}}}, nil))
		for _, c := range chunks(chatArguments(u), 8) {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": c}}}}, nil))
		}
		s.event("", chunk(map[string]any{}, "tool_calls"))
	} else {
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, c := range chunks(reply.Text, 24) {
			s.event("", chunk(map[string]any{"content": c}, nil))
		}
		s.event("", chunk(map[string]any{}, "stop"))
	}
	if opts, _ := rec.JSON["stream_options"].(map[string]any); opts["include_usage"] == true {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": model, "choices": []any{}, "usage": usage})
	}
	s.raw("", "[DONE]")
}

// chatArguments is a tool call's arguments as the chat completions API
// sends them: a string holding JSON (or, for a scripted answer that is
// not a JSON object, that answer verbatim).
func chatArguments(u *toolUse) string {
	if u.Args == nil {
		return u.Input
	}
	return jsonString(u.Args)
}
