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
	chunk := func(text string, last bool) map[string]any {
		cand := map[string]any{"index": 0,
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": respID}
		if last {
			cand["finishReason"] = "STOP"
			c["usageMetadata"] = map[string]any{"promptTokenCount": in, "candidatesTokenCount": out,
				"totalTokenCount": in + out}
		}
		return c
	}
	if method != "streamGenerateContent" {
		writeJSON(w, http.StatusOK, chunk(reply.Text, true))
		return
	}
	parts := chunks(reply.Text, 24)
	if len(parts) == 0 {
		parts = []string{""}
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
