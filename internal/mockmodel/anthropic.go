package mockmodel

import (
	"fmt"
	"net/http"
	"strings"
)

// anthropicErrorType maps a status to Anthropic's error type.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// serveAnthropic answers a Messages or count_tokens request.
func serveAnthropic(w http.ResponseWriter, rec Request) {
	reply := rec.Reply
	reqID := fmt.Sprintf("req_mock%016x", rec.Received.UnixNano())
	w.Header().Set("request-id", reqID)
	if reply.isError() {
		typ := reply.ErrorType
		if typ == "" {
			typ = anthropicErrorType(reply.status())
		}
		setRetryAfter(w, reply)
		writeJSON(w, reply.status(), map[string]any{
			"type":       "error",
			"error":      map[string]any{"type": typ, "message": reply.message()},
			"request_id": reqID,
		})
		return
	}
	if strings.HasSuffix(rec.Path, "/count_tokens") {
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": tokens(len(rec.Body))})
		return
	}
	id := fmt.Sprintf("msg_mock%016x", rec.Received.UnixNano())
	model := rec.Model()
	block, stop := map[string]any{"type": "text", "text": reply.Text}, "end_turn"
	out := tokens(len(reply.Text))
	var input string // a tool call's input, as JSON
	if u := rec.use; u != nil {
		input = jsonString(u.Args)
		block, stop = map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": u.Args}, "tool_use"
		out = tokens(u.size())
	}
	in := tokens(len(rec.Body))
	if !rec.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":       []any{block},
			"stop_reason":   stop,
			"stop_sequence": nil,
			"usage":         map[string]any{"input_tokens": in, "output_tokens": out},
		})
		return
	}
	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": in, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
		},
	}})
	if u := rec.use; u != nil {
		// The block starts with an empty input that the deltas fill in,
		// as the API streams it.
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": u.ID, "name": u.Name, "input": map[string]any{}}})
		for _, c := range chunks(input, jsonChunk) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": c}})
		}
	} else {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		s.event("ping", map[string]any{"type": "ping"})
		for _, c := range chunks(reply.Text, 24) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c}})
		}
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
