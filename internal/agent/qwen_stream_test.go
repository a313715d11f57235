package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQwenStreamTranscripts reads the output of Qwen Code 0.24.4 recorded
// against the mock model API (testdata/transcripts/qwen), and two made
// from it: a --json-schema answer (structured_result, as its
// buildResultMessage writes it) and a stream cut off before its result.
func TestQwenStreamTranscripts(t *testing.T) {
	const session = "d441224f-b792-4d5a-86ea-df79f57e0949"
	tests := []struct {
		name, file, wantText, wantSession   string
		isError, transient, permanent, auth bool
		usageLimit, notFound                bool
		retryAfter                          time.Duration
		wantIn, wantCached, wantOut         int64
		wantMessage, wantStructured         string
	}{
		// The result's usage covers the turn and Qwen Code's background
		// memory extraction: both are billed.
		{name: "success", wantText: `{"ok": true}`, wantSession: session, wantIn: 30464, wantOut: 12},
		{name: "resume", wantText: `{"ok": true, "again": true}`, wantSession: session, wantIn: 61026, wantOut: 27},
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "54429767-9372-422d-bb51-d61099dee58a", wantIn: 30442, wantOut: 12},
		// Qwen Code retried the 429 six times itself, then gave up.
		{name: "rate_limited", wantSession: "66dbe8b7-ef15-4125-b343-6f1df87a062d", isError: true, transient: true,
			wantMessage: "[API Error: 429 Rate limit exceeded; retry later.]"},
		{name: "overloaded", wantSession: "3798bbbf-44a9-4d18-9050-eb3361e9fc2c", isError: true, transient: true,
			wantMessage: "[API Error: 503 Service Unavailable]"},
		{name: "auth", wantSession: "ac740a4d-7588-475d-8571-2c0205a1c858", isError: true, permanent: true, auth: true,
			wantMessage: "[API Error: 401 invalid API key]"},
		// An exhausted quota is not retried by Qwen Code: a usage limit
		// until the reset the provider named.
		{name: "quota", wantSession: "0cf0a001-f184-4159-99d4-0d78a85a12d5", isError: true, transient: true, usageLimit: true,
			retryAfter: 2 * time.Hour, wantMessage: "Quota exhausted: You exceeded your current quota"},
		{name: "unknown_session", notFound: true, wantMessage: "No saved session found with ID 4b9b3e52-6c1e-4f43-9d7a-0c1f5a9e2d11"},
		{name: "structured", file: "testdata/qwen_structured.jsonl", wantText: `{"ok":true}`, wantSession: session,
			wantIn: 19268, wantCached: 19000, wantOut: 9, wantStructured: `{"ok":true}`},
		// Killed after the error notice, before the result: the notice is
		// the failure, not an answer.
		{name: "cut_off", file: "testdata/qwen_cut_off.jsonl", wantSession: "66dbe8b7-ef15-4125-b343-6f1df87a062d",
			isError: true, transient: true, wantMessage: "[API Error: 429 Rate limit exceeded; retry later.]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr []byte
			if tt.file != "" {
				var err error
				if stdout, err = os.ReadFile(filepath.FromSlash(tt.file)); err != nil {
					t.Fatal(err)
				}
			} else {
				stdout, stderr = transcript(t, "qwen", tt.name)
			}
			start := time.Now()
			r := feedSpec(t, Spec{Protocol: ProtocolQwenStream}, stdout, stderr)
			if string(r.Text) != tt.wantText || r.SessionID != tt.wantSession {
				t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, tt.wantText, tt.wantSession)
			}
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.Auth != tt.auth ||
				r.UsageLimit != tt.usageLimit || r.SessionNotFound != tt.notFound {
				t.Errorf("is_error %v transient %v permanent %v auth %v usage limit %v not found %v, want %v %v %v %v %v %v",
					r.IsError, r.Transient, r.Permanent, r.Auth, r.UsageLimit, r.SessionNotFound,
					tt.isError, tt.transient, tt.permanent, tt.auth, tt.usageLimit, tt.notFound)
			}
			if tt.retryAfter > 0 {
				if r.RetryAfter < tt.retryAfter-time.Minute || r.RetryAfter > tt.retryAfter {
					t.Errorf("RetryAfter %v, want about %v", r.RetryAfter, tt.retryAfter)
				}
				if want := start.Add(tt.retryAfter); r.ResetAt.Before(want.Add(-time.Minute)) || r.ResetAt.After(time.Now().Add(tt.retryAfter)) {
					t.Errorf("ResetAt %v, want %v from now", r.ResetAt, tt.retryAfter)
				}
			} else if r.RetryAfter != 0 || !r.ResetAt.IsZero() {
				t.Errorf("RetryAfter %v ResetAt %v, want none", r.RetryAfter, r.ResetAt)
			}
			if r.InputTokens != tt.wantIn || r.CachedTokens != tt.wantCached || r.OutputTokens != tt.wantOut {
				t.Errorf("tokens %d (%d cached)/%d, want %d (%d)/%d", r.InputTokens, r.CachedTokens, r.OutputTokens, tt.wantIn, tt.wantCached, tt.wantOut)
			}
			if r.CostKnown {
				t.Errorf("cost known (%v): Qwen Code reports none", r.CostUSD)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
			if string(r.StructuredOutput) != tt.wantStructured {
				t.Errorf("StructuredOutput %s, want %s", r.StructuredOutput, tt.wantStructured)
			}
		})
	}
}
