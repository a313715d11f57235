package agent

import (
	"strings"
	"testing"
	"time"
)

func TestGeminiStreamTranscripts(t *testing.T) {
	tests := []struct {
		name, wantText, wantSession   string
		isError, transient, permanent bool
		notFound, resumed, notSaved   bool
		retryAfter                    time.Duration
		wantIn, wantOut               int64
		wantMessage                   string
	}{
		{name: "success", wantText: `{"ok": true}`, wantSession: "918a5e13-4cb7-434f-8ee1-3576b981251b", wantIn: 10617, wantOut: 24},
		// The follow-up's answer came in two deltas; its stats are its own,
		// not the session's.
		{name: "resume", wantText: `{"ok": true, "again": true}`, wantSession: "918a5e13-4cb7-434f-8ee1-3576b981251b", wantIn: 10697, wantOut: 27},
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "5b0c5392-b0cb-469f-bef7-3af4b807aadd", wantIn: 10611, wantOut: 24},
		{name: "rate_limited", wantSession: "176d21ce-073d-4540-a2a9-18ed06e28546", isError: true, transient: true,
			retryAfter: 2 * time.Second, wantIn: 889, wantOut: 20, wantMessage: "Rate limit exceeded", notSaved: true},
		// The same failure in a resumed session leaves the session as it was.
		{name: "rate_limited in a resumed session", wantSession: "176d21ce-073d-4540-a2a9-18ed06e28546", isError: true, transient: true,
			retryAfter: 2 * time.Second, wantIn: 889, wantOut: 20, wantMessage: "Rate limit exceeded", resumed: true},
		// error.type is "unknown" and the message names no status: the
		// class comes from the words, and stderr confirms it.
		{name: "overloaded", wantSession: "3676040d-8bea-4c92-8ef8-3fbc4eb2a6ad", isError: true, transient: true,
			wantIn: 888, wantOut: 20, wantMessage: "Service Unavailable", notSaved: true},
		{name: "auth", wantSession: "20d600ff-b2be-416f-be40-9ca045000942", isError: true, permanent: true,
			wantIn: 883, wantOut: 20, wantMessage: "UNAUTHENTICATED", notSaved: true},
		{name: "unknown_session", notFound: true, wantMessage: "Error resuming session: No previous sessions found"},
		{name: "untrusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, _, _ := strings.Cut(tt.name, " ")
			stdout, stderr := transcript(t, "gemini", file)
			r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream, Resume: tt.resumed}, stdout, stderr)
			if r.SessionNotSaved != tt.notSaved {
				t.Errorf("SessionNotSaved = %v, want %v", r.SessionNotSaved, tt.notSaved)
			}
			if string(r.Text) != tt.wantText || r.SessionID != tt.wantSession {
				t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, tt.wantText, tt.wantSession)
			}
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.SessionNotFound != tt.notFound {
				t.Errorf("is_error %v transient %v permanent %v not found %v, want %v %v %v %v",
					r.IsError, r.Transient, r.Permanent, r.SessionNotFound, tt.isError, tt.transient, tt.permanent, tt.notFound)
			}
			if r.RetryAfter != tt.retryAfter || r.InputTokens != tt.wantIn || r.OutputTokens != tt.wantOut {
				t.Errorf("retry after %v tokens %d/%d, want %v %d/%d", r.RetryAfter, r.InputTokens, r.OutputTokens, tt.retryAfter, tt.wantIn, tt.wantOut)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
		})
	}
}

func TestGeminiStreamErrorTypes(t *testing.T) {
	result := func(typ, msg string) string {
		return `{"type":"result","status":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	pacific, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	// midnightPacific: a TerminalQuotaError that names no reset waits
	// for the next midnight Pacific time, within a day.
	midnightPacific := func(t *testing.T, r *Result, before time.Time) {
		t.Helper()
		at := r.ResetAt.In(pacific)
		if at.Hour() != 0 || at.Minute() != 0 || at.Second() != 0 || !r.ResetAt.After(before) || r.ResetAt.Sub(before) > 24*time.Hour {
			t.Errorf("ResetAt %v (%v Pacific), want the next midnight Pacific after %v", r.ResetAt, at, before)
		}
	}
	tests := []struct {
		name                             string
		out, stderr                      string
		transient, permanent, usageLimit bool
		retryAfter                       time.Duration // exact, unless reset is set
		reset                            func(*testing.T, *Result, time.Time)
	}{
		{name: "retryable quota error", out: result("RetryableQuotaError", "Quota exceeded. Suggested retry after 1500ms."), transient: true, retryAfter: 1500 * time.Millisecond},
		{name: "retryable quota error, hours", out: result("RetryableQuotaError", "Please retry in 1h2m3s."), transient: true, retryAfter: time.Hour + 2*time.Minute + 3*time.Second},
		// A terminal quota is a usage limit until its reset (it used to
		// stop the run as permanent).
		{name: "terminal quota error with a retry", out: result("TerminalQuotaError", "Daily quota exhausted. Suggested retry after 30s."), transient: true, usageLimit: true, retryAfter: 30 * time.Second},
		{name: "terminal quota error with a reset", out: result("TerminalQuotaError", "You have exhausted your capacity on this model. Your quota will reset after 1h49m8s."),
			transient: true, usageLimit: true, retryAfter: time.Hour + 49*time.Minute + 8*time.Second},
		{name: "terminal quota error, daily", out: result("TerminalQuotaError", "You have exhausted your daily quota on this model."),
			transient: true, usageLimit: true, reset: midnightPacific},
		{name: "status in message", out: result("unknown", `[API Error: {\"error\":{\"code\":503}}]`), transient: true},
		{name: "class from stderr", out: result("unknown", "[API Error: something]"), stderr: "TerminalQuotaError: something\n    at x",
			transient: true, usageLimit: true, reset: midnightPacific},
		{name: "plain failure", out: result("unknown", "the model gave up")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, []byte(tt.out+"\n"), []byte(tt.stderr))
			if !r.IsError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.UsageLimit != tt.usageLimit || r.Auth {
				t.Errorf("is_error %v transient %v permanent %v usage limit %v auth %v, want true %v %v %v false",
					r.IsError, r.Transient, r.Permanent, r.UsageLimit, r.Auth, tt.transient, tt.permanent, tt.usageLimit)
			}
			if tt.reset != nil {
				tt.reset(t, r, before)
				return
			}
			if r.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", r.RetryAfter, tt.retryAfter)
			}
			if tt.usageLimit && (r.ResetAt.Before(before.Add(tt.retryAfter)) || r.ResetAt.After(time.Now().Add(tt.retryAfter))) {
				t.Errorf("ResetAt %v, want %v after the message", r.ResetAt, tt.retryAfter)
			}
		})
	}
}

func TestGeminiStreamHelp(t *testing.T) {
	// The marker and its context arrive split across deltas.
	out := `{"type":"init","session_id":"s"}` + "\n" +
		`{"type":"message","role":"assistant","content":"stuck >>>HE","delta":true}` + "\n" +
		`{"type":"message","role":"assistant","content":"LP<<<\n{\"q\":","delta":true}` + "\n" +
		`{"type":"message","role":"assistant","content":" 1}","delta":true}` + "\n" +
		`{"type":"result","status":"success","stats":{}}` + "\n"
	r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, []byte(out), nil)
	if !r.Help || string(r.HelpContext) != `{"q":1}` || r.IsError {
		t.Errorf("Help %v context %q is_error %v, want true {\"q\":1} false", r.Help, r.HelpContext, r.IsError)
	}
}

func TestOnSession(t *testing.T) {
	tests := []struct {
		proto Protocol
		out   string
		want  string
	}{
		{ProtocolClaudeStream, `{"type":"system","subtype":"init","session_id":"c1"}` + "\n" + `{"type":"result","session_id":"c1","result":"x"}`, "c1"},
		{ProtocolCodexJSONL, `{"type":"thread.started","thread_id":"x1"}` + "\n" + `{"type":"turn.started"}`, "x1"},
		{ProtocolGeminiStream, `{"type":"result","status":"success"}`, ""},
		{ProtocolText, `{"type":"init","session_id":"g1"}`, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.proto)+"/"+tt.want, func(t *testing.T) {
			var got []string
			spec := Spec{Protocol: tt.proto, OnSession: func(id string) { got = append(got, id) }}
			r := feedSpec(t, spec, []byte(tt.out+"\n"), nil)
			want := []string{tt.want}
			if tt.want == "" {
				want = nil
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != len(want) {
				t.Errorf("OnSession calls %q, want %q", got, want)
			}
			if r.SessionID != tt.want {
				t.Errorf("SessionID = %q, want %q", r.SessionID, tt.want)
			}
		})
	}
}
