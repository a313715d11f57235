package mockmodel

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// geminiPath splits ".../models/{model}:{method}" into model and method.
func geminiPath(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(path[i+len("/models/"):], ":")
	if !ok || model == "" || method == "" {
		return "", "", false
	}
	return model, method, true
}

// geminiStatus maps an HTTP status to the google.rpc status name.
func geminiStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// serveGemini answers generateContent, streamGenerateContent and
// countTokens.
func serveGemini(w http.ResponseWriter, rec Request) {
	reply := rec.Reply
	model, method, _ := geminiPath(rec.Path)
	if reply.isError() {
		status := reply.ErrorType
		if status == "" {
			status = geminiStatus(reply.status())
		}
		body := map[string]any{"code": reply.status(), "message": reply.message(), "status": status}
		if secs, err := strconv.Atoi(reply.RetryAfter); err == nil {
			body["details"] = []any{map[string]any{
				"@type":      "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": fmt.Sprintf("%ds", secs),
			}}
		}
		setRetryAfter(w, reply)
		writeJSON(w, reply.status(), map[string]any{"error": body})
		return
	}
	if method == "countTokens" {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": tokens(len(rec.Body))})
		return
	}
	in, out := tokens(len(rec.Body)), tokens(len(reply.Text))
	respID := fmt.Sprintf("mock%016x", rec.Received.UnixNano())
	chunk := func(part map[string]any, last bool) map[string]any {
		cand := map[string]any{"index": 0,
			"content": map[string]any{"role": "model", "parts": []any{part}}}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": respID}
		if last {
			cand["finishReason"] = "STOP"
			c["usageMetadata"] = map[string]any{"promptTokenCount": in, "candidatesTokenCount": out,
				"totalTokenCount": in + out}
		}
		return c
	}
	var parts []map[string]any
	if u := rec.use; u != nil {
		// A function call comes whole in one chunk, as the API sends it.
		out = tokens(u.size())
		parts = []map[string]any{{"functionCall": map[string]any{"id": u.ID, "name": u.Name, "args": u.Args}}}
	} else {
		for _, p := range chunks(reply.Text, 24) {
			parts = append(parts, map[string]any{"text": p})
		}
		if len(parts) == 0 {
			parts = []map[string]any{{"text": ""}}
		}
	}
	if method != "streamGenerateContent" {
		writeJSON(w, http.StatusOK, chunk(geminiJoin(parts), true))
		return
	}
	var all []any
	for i, p := range parts {
		all = append(all, chunk(p, i == len(parts)-1))
	}
	if !rec.Stream {
		writeJSON(w, http.StatusOK, all)
		return
	}
	s := startSSE(w)
	for _, c := range all {
		s.event("", c)
	}
}

// geminiJoin makes the one part of a non-streamed answer: the text parts
// joined, or the function call.
func geminiJoin(parts []map[string]any) map[string]any {
	if len(parts) == 1 {
		return parts[0]
	}
	var text strings.Builder
	for _, p := range parts {
		s, _ := p["text"].(string)
		text.WriteString(s)
	}
	return map[string]any{"text": text.String()}
}
