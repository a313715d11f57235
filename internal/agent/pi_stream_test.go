package agent

import (
	"strings"
	"testing"
)

// TestPiStreamTranscripts reads the output of pi 0.73.1 recorded against
// the mock model API (testdata/transcripts/pi). A failed model call exits
// 0 with stopReason "error": it is a failure, never an empty answer.
func TestPiStreamTranscripts(t *testing.T) {
	const session = "01a21d09-9c0a-7499-84f4-1bc552127549"
	tests := []struct {
		name, wantText, wantSession         string
		isError, transient, permanent, auth bool
		notFound, ended                     bool
		wantIn, wantOut                     int64
		wantCost                            float64
		wantMessage                         string
	}{
		{name: "success", wantText: `{"ok": true}`, wantSession: session, ended: true, wantIn: 1405, wantOut: 4, wantCost: 0.001413},
		{name: "resume", wantText: `{"ok": true, "again": true}`, wantSession: session, ended: true, wantIn: 1451, wantOut: 7, wantCost: 0.001465},
		// pi's own retry got through: the failed call before it no longer
		// describes the attempt.
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "01a21d0b-28d8-70be-8731-f036e41fb2cc", ended: true,
			wantIn: 1404, wantOut: 4, wantCost: 0.0014119999999999998},
		{name: "rate_limited", wantSession: "01a21d0a-439c-738f-a5f0-8af3434d2933", isError: true, transient: true, ended: true,
			wantMessage: "429 Rate limit exceeded"},
		{name: "overloaded", wantSession: "01a21d0a-83b2-7788-a586-897011c9b0d4", isError: true, transient: true, ended: true,
			wantMessage: "503 Service Unavailable"},
		{name: "auth", wantSession: "01a21d0a-bb62-77ce-92e0-c6555ac74c4c", isError: true, permanent: true, auth: true, ended: true,
			wantMessage: "401 invalid API key"},
		{name: "unknown_session", notFound: true, wantMessage: "No session found matching"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr := transcript(t, "pi", tt.name)
			s := newSession(withDefaults(Spec{Protocol: ProtocolPiJSON}), nil)
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
			if r.InputTokens != tt.wantIn || r.OutputTokens != tt.wantOut || r.CostUSD != tt.wantCost {
				t.Errorf("tokens %d/%d cost %v, want %d/%d %v", r.InputTokens, r.OutputTokens, r.CostUSD, tt.wantIn, tt.wantOut, tt.wantCost)
			}
			if r.CostKnown != (tt.name != "unknown_session") {
				t.Errorf("CostKnown %v: pi reports a cost with every model call", r.CostKnown)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
		})
	}
}
