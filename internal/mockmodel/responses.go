package mockmodel

import (
	"fmt"
	"net/http"
)

// openAIErrorType maps a status to the OpenAI error type and code.
func openAIErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "invalid_api_key"
	case 403:
		return "permission_denied"
	case 404:
		return "not_found"
	case 429:
		return "rate_limit_exceeded"
	}
	return "server_error"
}

// writeOpenAIError answers an OpenAI-style error (Responses and chat
// completions share it).
func writeOpenAIError(w http.ResponseWriter, reply Reply) {
	typ := reply.ErrorType
	if typ == "" {
		typ = openAIErrorType(reply.status())
	}
	setRetryAfter(w, reply)
	writeJSON(w, reply.status(), map[string]any{"error": map[string]any{
		"message": reply.message(), "type": typ, "param": nil, "code": typ,
	}})
}

// responsesUsage is the usage object of a Responses answer.
func responsesUsage(in, out int) map[string]any {
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         out,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          in + out,
	}
}

// serveResponses answers an OpenAI Responses request.
func serveResponses(w http.ResponseWriter, rec Request) {
	reply := rec.Reply
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock%016x", rec.Received.UnixNano()))
	if reply.isError() {
		writeOpenAIError(w, reply)
		return
	}
	respID := fmt.Sprintf("resp_mock%016x", rec.Received.UnixNano())
	msgID := fmt.Sprintf("msg_mock%016x", rec.Received.UnixNano())
	created := rec.Received.Unix()
	in, out := tokens(len(rec.Body)), tokens(len(reply.Text))
	part := map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}
	item := map[string]any{"id": msgID, "type": "message", "status": "completed", "role": "assistant",
		"content": []any{part}}
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": created,
			"status": status, "model": rec.Model(), "output": output, "usage": usage}
	}
	if !rec.Stream {
		writeJSON(w, http.StatusOK, response("completed", []any{item}, responsesUsage(in, out)))
		return
	}
	s := startSSE(w)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	emit("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	emit("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
	emit("response.content_part.added", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, c := range chunks(reply.Text, 24) {
		emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0,
			"content_index": 0, "delta": c})
	}
	emit("response.output_text.done", map[string]any{"item_id": msgID, "output_index": 0,
		"content_index": 0, "text": reply.Text})
	emit("response.content_part.done", map[string]any{"item_id": msgID, "output_index": 0,
		"content_index": 0, "part": part})
	emit("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	emit("response.completed", map[string]any{"response": response("completed", []any{item}, responsesUsage(in, out))})
}
