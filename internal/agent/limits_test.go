package agent

import (
	"os"
	"strings"
	"testing"
	"time"
)

// feedCodexAt runs a Codex stream through a session whose clock and
// local zone are fixed, with stderr.
func feedCodexAt(t *testing.T, now time.Time, loc *time.Location, stdout []byte) *Result {
	t.Helper()
	s := newSession(withDefaults(Spec{Protocol: ProtocolCodexJSONL}), nil)
	c := s.events.(*codexStream)
	c.now = func() time.Time { return now }
	c.loc = loc
	s.consume(stdout)
	s.endStdout()
	return s.result()
}

// TestCodexUsageLimits: Codex's usage-limit errors are waits until their
// reset, which it gives as resets_at / resets_in_seconds, or as a clock
// time of the machine it runs on ("try again at 12:16 PM", no status
// code: it used to be exit_nonzero and burn the next attempt).
func TestCodexUsageLimits(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		now  time.Time
		want outcome
	}{
		// 10:00 in Berlin: 12:16 PM is today.
		{"codex_usage_limit_clock.jsonl", time.Date(2026, 11, 24, 10, 0, 0, 0, berlin),
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 24, 12, 16, 0, 0, berlin)}},
		// 13:00: the next 12:16 PM is tomorrow's.
		{"codex_usage_limit_clock.jsonl", time.Date(2026, 11, 24, 13, 0, 0, 0, berlin),
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 25, 12, 16, 0, 0, berlin)}},
		{"codex_usage_limit_date.jsonl", time.Date(2026, 11, 24, 13, 0, 0, 0, berlin),
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 12, 1, 15, 14, 0, 0, berlin)}},
		{"codex_usage_limit_resets.jsonl", time.Date(2026, 11, 24, 13, 0, 0, 0, berlin),
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Unix(1796124305, 0)}},
		// Codex 0.171's sentence (read from its binary): a curly
		// apostrophe and no time: a usage limit with no reset, waited out
		// with a normal backoff.
		{"codex_usage_limit_later.jsonl", time.Date(2026, 11, 24, 13, 0, 0, 0, berlin),
			outcome{isError: true, transient: true, usageLimit: true}},
		{"codex_auth_refresh.jsonl", time.Date(2026, 11, 24, 13, 0, 0, 0, berlin),
			outcome{isError: true, permanent: true, auth: true}},
	}
	for _, tt := range tests {
		t.Run(tt.file+"@"+tt.now.Format("15:04"), func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r := feedCodexAt(t, tt.now, berlin, data)
			tt.want.check(t, r)
			if tt.want.usageLimit && !tt.want.resetAt.IsZero() && r.RetryAfter != tt.want.resetAt.Sub(tt.now) {
				t.Errorf("RetryAfter = %v, want the time until the reset, %v", r.RetryAfter, tt.want.resetAt.Sub(tt.now))
			}
		})
	}

	cases := []struct {
		name, msg string
		want      outcome
	}{
		{"resets_in_seconds alone", `unexpected status 429 Too Many Requests: {"error":{"type":"usage_limit_reached","resets_in_seconds":3600}}`,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 24, 14, 0, 0, 0, berlin)}},
		{"try again in a duration", "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours 14 minutes.",
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 27, 6, 14, 0, 0, berlin)}},
		{"usage limit, no time", "You've hit your usage limit. Upgrade to Pro.", outcome{isError: true, transient: true, usageLimit: true}},
		// A reset in the past, or beyond any usage window, is no reset.
		{"a reset in the past", "You've hit your usage limit. Try again at Jan 1st, 2020 3:14 PM.", outcome{isError: true, transient: true, usageLimit: true}},
		{"a reset years away", `{"error":{"type":"usage_limit_reached","resets_at":99999999999}}`, outcome{isError: true, transient: true, usageLimit: true}},
		{"a plain 429 is no usage limit", "exceeded retry limit, last status: 429 Too Many Requests", outcome{isError: true, transient: true}},
		{"401", "unexpected status 401 Unauthorized: invalid API key", outcome{isError: true, permanent: true, auth: true}},
		{"403 is not a login", "unexpected status 403 Forbidden: region not supported", outcome{isError: true, permanent: true}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			line := `{"type":"turn.failed","error":{"message":` + quote(tt.msg) + `}}` + "\n"
			r := feedCodexAt(t, time.Date(2026, 11, 24, 13, 0, 0, 0, berlin), berlin, []byte(line))
			tt.want.check(t, r)
		})
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestAuthAcrossCLIs: a failed login is class auth whichever CLI reports
// it, from the recorded transcripts and from hand-written ones.
func TestAuthAcrossCLIs(t *testing.T) {
	t.Run("codex 401, recorded", func(t *testing.T) {
		stdout, stderr := transcript(t, "codex", "auth")
		r := feedSpec(t, Spec{Protocol: ProtocolCodexJSONL}, stdout, stderr)
		outcome{isError: true, permanent: true, auth: true}.check(t, r)
	})
	t.Run("gemini 401, recorded", func(t *testing.T) {
		stdout, stderr := transcript(t, "gemini", "auth")
		r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, stdout, stderr)
		outcome{isError: true, permanent: true, auth: true}.check(t, r)
	})
	t.Run("claude 401, recorded", func(t *testing.T) {
		stdout, stderr := transcript(t, "claude", "auth")
		r := feedSpec(t, Spec{Protocol: ProtocolClaudeStream}, stdout, stderr)
		outcome{isError: true, permanent: true, auth: true}.check(t, r)
	})
	t.Run("gemini without a login", func(t *testing.T) {
		stdout, _ := os.ReadFile("testdata/gemini_no_auth.jsonl")
		stderr, err := os.ReadFile("testdata/gemini_no_auth.stderr")
		if err != nil {
			t.Fatal(err)
		}
		r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, stdout, stderr)
		outcome{isError: true, permanent: true, auth: true}.check(t, r)
		if !strings.HasPrefix(r.ErrorMessage, "Please set an Auth method") {
			t.Errorf("ErrorMessage = %q, want the line that says so", r.ErrorMessage)
		}
	})
}

// TestGeminiErrorThenSuccess: Gemini CLI stops a turn with an error event
// ("Maximum session turns exceeded", "Loop detected, stopping execution")
// and then reports it successful with no answer. The error is carried on
// the result (TurnError), so the diagnosis can say why there is no
// answer; the turn itself is not a provider failure.
func TestGeminiErrorThenSuccess(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"gemini_max_turns.jsonl", "Maximum session turns exceeded"},
		{"gemini_loop_detected.jsonl", "Loop detected, stopping execution"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, data, nil)
			if r.TurnError != tt.want {
				t.Errorf("TurnError = %q, want %q", r.TurnError, tt.want)
			}
			if r.IsError || r.Transient || r.Permanent || r.ErrorMessage != "" {
				t.Errorf("is_error %v transient %v permanent %v message %q: the turn was reported successful",
					r.IsError, r.Transient, r.Permanent, r.ErrorMessage)
			}
		})
	}
	// An error event followed by a result that fails keeps the result's
	// error, and the event's text too.
	out := `{"type":"error","severity":"error","message":"Maximum session turns exceeded"}` + "\n" +
		`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns for this session."}}` + "\n"
	r := feedSpec(t, Spec{Protocol: ProtocolGeminiStream}, []byte(out), nil)
	if !r.IsError || r.ErrorMessage != "Reached max session turns for this session." || r.TurnError != "Maximum session turns exceeded" {
		t.Errorf("is_error %v message %q turn error %q", r.IsError, r.ErrorMessage, r.TurnError)
	}
}

// TestCodexClockInTheAgentsZone: Codex prints its "try again at" time in
// the zone it runs in, which the agent's environment can set (TZ).
func TestCodexClockInTheAgentsZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/codex_usage_limit_clock.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tz := range []string{"Asia/Tokyo", ":Asia/Tokyo"} {
		before := time.Now()
		r := feedSpec(t, Spec{Protocol: ProtocolCodexJSONL, Env: []string{"TZ=UTC", "TZ=" + tz}}, data, nil)
		at := r.ResetAt.In(tokyo)
		if at.Hour() != 12 || at.Minute() != 16 || !r.ResetAt.After(before) || r.ResetAt.Sub(before) > 24*time.Hour {
			t.Errorf("TZ=%s: ResetAt %v (%v in Tokyo), want the next 12:16 in Tokyo", tz, r.ResetAt, at)
		}
	}
}
