package agent

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestOpencodeStreamTranscripts reads the output of opencode 1.18.33
// recorded against the mock model API (testdata/transcripts/opencode), and
// made from it: a turn of two steps around a tool call, and failures
// (a 429 after which opencode went on retrying, a 503, an error followed
// by a step that got through).
func TestOpencodeStreamTranscripts(t *testing.T) {
	const session = "ses_de2fecf86ffebllsbo6kMSkQxa"
	tests := []struct {
		name, file, wantText, wantSession string
		isError, transient, permanent     bool
		auth, notFound, ended             bool
		retryAfter                        time.Duration
		wantIn, wantCached, wantOut       int64
		wantCost                          float64
		wantMessage                       string
	}{
		{name: "success", wantText: `{"ok": true}`, wantSession: session, wantIn: 7706, wantOut: 4},
		{name: "resume", wantText: `{"ok": true, "again": true}`, wantSession: session, wantIn: 7746, wantOut: 7},
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "ses_de300e761ffe4j3KgB3MqeDGxA", wantIn: 7704, wantOut: 4},
		{name: "auth", wantSession: "ses_de303212affe8x8gArNFAZfSYo", isError: true, permanent: true, auth: true, ended: true,
			wantMessage: "401 invalid API key"},
		{name: "unknown_session", notFound: true, wantMessage: "Session not found"},
		// Printed after six requests that got a 429 (retry-after: 2) or
		// a 503 (retry-after: 1); opencode then hung until killed.
		{name: "rate_limited", wantSession: "ses_de2fb1196ffeiw3gNc3TJIz4Ha", isError: true, transient: true, ended: true,
			retryAfter: 2 * time.Second, wantMessage: "429 Rate limit exceeded"},
		{name: "overloaded", wantSession: "ses_de2fa0e7dffevxgEWw9OFMhDe9", isError: true, transient: true, ended: true,
			retryAfter: time.Second, wantMessage: "503 Service Unavailable"},
		// The answer is the last step's text; tokens and cost add up
		// over the steps, cache and reasoning included.
		{name: "tool steps", file: "testdata/opencode_tool_steps.jsonl", wantText: `{"ok": true}`, wantSession: "ses_de3088ac2ffelyjFDCj7M6yVRB",
			wantIn: 1685 + 6000 + 20 + 100 + 7596, wantCached: 6000 + 7596, wantOut: 10 + 5 + 4, wantCost: 0.015},
		{name: "429 from an earlier run", file: "testdata/opencode_rate_limited.jsonl", wantSession: "ses_de305feccffeFpcbPZvTlYh3Zi",
			isError: true, transient: true, ended: true, retryAfter: 2 * time.Second, wantMessage: "429 Rate limit exceeded"},
		// opencode's own retry got through before cadence stopped it.
		{name: "error then a step", file: "testdata/opencode_error_then_ok.jsonl", wantText: `{"ok": true}`,
			wantSession: "ses_de300e761ffe4j3KgB3MqeDGxA", wantIn: 7704, wantOut: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr []byte
			if tt.file != "" {
				var err error
				if stdout, err = os.ReadFile(tt.file); err != nil {
					t.Fatal(err)
				}
			} else {
				stdout, stderr = transcript(t, "opencode", tt.name)
			}
			start := time.Now()
			s := newSession(withDefaults(Spec{Protocol: ProtocolOpencodeJSON}), nil)
			for len(stdout) > 0 {
				n := min(7, len(stdout))
				s.consume(stdout[:n])
				stdout = stdout[n:]
			}
			ended := s.events.ended()
			s.endStdout()
			s.stderrTail.write(stderr)
			r := s.result()
			if string(r.Text) != tt.wantText || r.SessionID != tt.wantSession {
				t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, tt.wantText, tt.wantSession)
			}
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.Auth != tt.auth ||
				r.SessionNotFound != tt.notFound || ended != tt.ended {
				t.Errorf("is_error %v transient %v permanent %v auth %v not found %v ended %v, want %v %v %v %v %v %v",
					r.IsError, r.Transient, r.Permanent, r.Auth, r.SessionNotFound, ended,
					tt.isError, tt.transient, tt.permanent, tt.auth, tt.notFound, tt.ended)
			}
			if r.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter %v, want %v", r.RetryAfter, tt.retryAfter)
			}
			if tt.retryAfter > 0 && (r.ResetAt.Before(start.Add(tt.retryAfter).Add(-time.Second)) || r.ResetAt.After(time.Now().Add(tt.retryAfter))) {
				t.Errorf("ResetAt %v, want %v from now", r.ResetAt, tt.retryAfter)
			}
			if r.InputTokens != tt.wantIn || r.CachedTokens != tt.wantCached || r.OutputTokens != tt.wantOut {
				t.Errorf("tokens %d (%d cached)/%d, want %d (%d)/%d", r.InputTokens, r.CachedTokens, r.OutputTokens, tt.wantIn, tt.wantCached, tt.wantOut)
			}
			if diff := r.CostUSD - tt.wantCost; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("cost %v, want %v", r.CostUSD, tt.wantCost)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
		})
	}
}
