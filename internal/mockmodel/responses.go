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
	created := rec.Received.Unix()
	in := tokens(len(rec.Body))
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": created,
			"status": status, "model": rec.Model(), "output": output, "usage": usage}
	}
	item, out := responsesMessage(rec), tokens(len(reply.Text))
	if rec.use != nil {
		item, out = responsesToolItem(*rec.use), tokens(rec.use.size())
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
	if rec.use != nil {
		streamToolItem(emit, item)
	} else {
		streamMessage(emit, item, reply.Text)
	}
	emit("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	emit("response.completed", map[string]any{"response": response("completed", []any{item}, responsesUsage(in, out))})
}

// responsesMessage is the output item of a text answer.
func responsesMessage(rec Request) map[string]any {
	part := map[string]any{"type": "output_text", "text": rec.Reply.Text, "annotations": []any{}}
	return map[string]any{"id": fmt.Sprintf("msg_mock%016x", rec.Received.UnixNano()), "type": "message",
		"status": "completed", "role": "assistant", "content": []any{part}}
}

// streamMessage streams a text answer's item up to its output_item.done.
func streamMessage(emit func(string, map[string]any), item map[string]any, text string) {
	msgID := item["id"]
	part := field0(item["content"])
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"id": msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
	emit("response.content_part.added", map[string]any{"item_id": msgID, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, c := range chunks(text, 24) {
		emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": 0,
			"content_index": 0, "delta": c})
	}
	emit("response.output_text.done", map[string]any{"item_id": msgID, "output_index": 0,
		"content_index": 0, "text": text})
	emit("response.content_part.done", map[string]any{"item_id": msgID, "output_index": 0,
		"content_index": 0, "part": part})
}

// field0 is the first element of a list, or nil.
func field0(v any) any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return l[0]
	}
	return nil
}

// responsesToolItem is the output item of a tool call: a function_call
// with JSON arguments, a custom_tool_call with free-form input, or a
// local_shell_call with an argv.
func responsesToolItem(u toolUse) map[string]any {
	switch {
	case u.LocalShell:
		return map[string]any{"id": "lsc_" + u.ID, "type": "local_shell_call", "status": "completed",
			"call_id": u.ID, "action": map[string]any{"type": "exec", "command": u.Argv, "env": map[string]any{}}}
	case u.Custom:
		return map[string]any{"id": "ctc_" + u.ID, "type": "custom_tool_call", "status": "completed",
			"call_id": u.ID, "name": u.Name, "input": u.Input}
	}
	return map[string]any{"id": "fc_" + u.ID, "type": "function_call", "status": "completed",
		"call_id": u.ID, "name": u.Name, "arguments": jsonString(u.Args)}
}

// streamToolItem streams a tool call's item up to its output_item.done:
// added with empty arguments or input, then their deltas, then done.
func streamToolItem(emit func(string, map[string]any), item map[string]any) {
	added := make(map[string]any, len(item))
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	var event, key string
	switch item["type"] {
	case "function_call":
		event, key = "response.function_call_arguments", "arguments"
	case "custom_tool_call":
		event, key = "response.custom_tool_call_input", "input"
	}
	if key != "" {
		added[key] = ""
	}
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": added})
	if key == "" {
		return
	}
	full, _ := item[key].(string)
	for _, c := range chunks(full, jsonChunk) {
		emit(event+".delta", map[string]any{"item_id": item["id"], "output_index": 0, "delta": c})
	}
	emit(event+".done", map[string]any{"item_id": item["id"], "output_index": 0, key: full})
}
