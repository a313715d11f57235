package agent

import (
	"encoding/json"
	"os"
	"testing"
	"time"
	_ "time/tzdata" // the zones Claude Code names in its limit messages, whatever the machine has
)

// feedAt runs a Claude stream through a session whose clock and local
// zone are fixed.
func feedAt(t *testing.T, now time.Time, loc *time.Location, data []byte) *Result {
	t.Helper()
	s := newSession(withDefaults(Spec{Protocol: ProtocolClaudeStream}), nil)
	c := s.events.(*claudeStream)
	c.now = func() time.Time { return now }
	c.loc = loc
	for len(data) > 0 {
		n := min(7, len(data))
		s.consume(data[:n])
		data = data[n:]
	}
	s.endStdout()
	return s.result()
}

// outcome is what a test expects of a failed (or not failed) attempt.
type outcome struct {
	isError, transient, permanent, auth, usageLimit bool
	resetAt                                         time.Time
}

func (o outcome) check(t *testing.T, r *Result) {
	t.Helper()
	got := outcome{r.IsError, r.Transient, r.Permanent, r.Auth, r.UsageLimit, r.ResetAt}
	if got.isError != o.isError || got.transient != o.transient || got.permanent != o.permanent ||
		got.auth != o.auth || got.usageLimit != o.usageLimit || !got.resetAt.Equal(o.resetAt) {
		t.Errorf("is_error %v transient %v permanent %v auth %v usage limit %v reset %v,\nwant     %v %v %v %v %v %v (message %q)",
			got.isError, got.transient, got.permanent, got.auth, got.usageLimit, got.resetAt,
			o.isError, o.transient, o.permanent, o.auth, o.usageLimit, o.resetAt, r.ErrorMessage)
	}
}

// TestClaudeSuccessThatIsAnError: Claude Code can end with exit 0 and a
// result of subtype "success", is_error false, whose text is the API's
// error (anthropics/claude-code#79500). Such a text is recognised as what
// it says, never left for the handoff judge.
func TestClaudeSuccessThatIsAnError(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// The fixtures' resets are at 1771390800: an hour after epochNow.
	epochNow := time.Unix(1771390800-3600, 0)
	files := []struct {
		file string
		want outcome
	}{
		{"claude_limit_success.jsonl", outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Unix(1771390800, 0)}},
		{"claude_403_success.jsonl", outcome{isError: true, permanent: true, auth: true}},
		{"claude_oauth_expired.jsonl", outcome{isError: true, permanent: true, auth: true}},
		{"claude_overloaded_success.jsonl", outcome{isError: true, transient: true}},
		// is_error true and the login message: the same class.
		{"claude_auth.jsonl", outcome{isError: true, permanent: true, auth: true}},
		// A rejected rate_limit_event is the subscription's limit, with
		// its reset time.
		{"claude_rate_limited.jsonl", outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Unix(1771390800, 0)}},
	}
	for _, tt := range files {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r := feedAt(t, epochNow, time.UTC, data)
			tt.want.check(t, r)
			if r.ErrorMessage == "" {
				t.Error("no ErrorMessage")
			}
		})
	}

	brisbane, err := time.LoadLocation("Australia/Brisbane")
	if err != nil {
		t.Fatal(err)
	}
	texts := []struct {
		name, text string
		now        time.Time
		want       outcome
	}{
		{"usage limit with an epoch", "Claude AI usage limit reached|1771390800", epochNow,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Unix(1771390800, 0)}},
		{"session limit, local hour", "You've hit your session limit · resets 5am", now,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)}},
		{"limit with a zone", "You've hit your limit · resets 1pm (Europe/Lisbon)", now,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)}},
		{"limit with minutes", "5-hour limit reached ∙ resets 10:30am", now,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC)}},
		{"weekly limit with a date", "You've hit your weekly limit · resets Sep 24 at 3pm (Australia/Brisbane)", time.Date(2026, 9, 20, 8, 0, 0, 0, time.UTC),
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 9, 24, 15, 0, 0, 0, brisbane)}},
		{"limit with an unreadable reset", "You've hit your limit · resets soon", now,
			outcome{isError: true, transient: true, usageLimit: true}},
		// A reset in the past is a misreading, not a wait.
		{"usage limit with a past epoch", "Claude AI usage limit reached|1771390800", now,
			outcome{isError: true, transient: true, usageLimit: true}},
		{"429 rate limit", `API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, now,
			outcome{isError: true, transient: true}},
		{"429 in words", "API Error: Request rejected (429) · Rate limit exceeded; retry later.", now,
			outcome{isError: true, transient: true}},
		{"500", `API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, now,
			outcome{isError: true, transient: true}},
		{"connection error", "API Error: Connection error.", now, outcome{isError: true, transient: true}},
		// An API error of no known kind is still no answer.
		{"400", `API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212000 tokens > 200000 maximum"}}`, now,
			outcome{isError: true}},
		{"invalid key", "Invalid API key · Please run /login", now, outcome{isError: true, permanent: true, auth: true}},
		{"logged out", "Not logged in · Please run /login", now, outcome{isError: true, permanent: true, auth: true}},
		{"expired token alone", "OAuth token has expired. Please obtain a new token or refresh your existing token.", now,
			outcome{isError: true, permanent: true, auth: true}},
		{"failed to authenticate", `Failed to authenticate. API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, now,
			outcome{isError: true, permanent: true, auth: true}},
		{"opus weekly limit", "Opus weekly limit reached ∙ resets Dec 1 at 9am", now,
			outcome{isError: true, transient: true, usageLimit: true, resetAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}},
		// Another limit is no usage limit of the account.
		{"context limit", "Context limit reached · /compact or /clear to continue", now, outcome{}},
		// Answers that mention such a message are answers.
		{"an answer that quotes a 429", `The registry said API Error: 429 earlier; I retried and it worked. {"ok": true}`, now, outcome{}},
		{"an answer that starts with one", "API Error: 429 was in the log, handled.\n{\"ok\": true}", now, outcome{}},
		{"a handoff holding the text", `{"note": "Claude AI usage limit reached|1771390800"}`, now, outcome{}},
		{"an answer about logging in", "Please run /login to set up the CLI, as the README says.\n\nDone: {\"ok\": true}", now, outcome{}},
		{"API Error with no status or known words", "API Error: something odd", now, outcome{}},
	}
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			text, err := json.Marshal(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			line := `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":` + string(text) + `,"session_id":"s1"}` + "\n"
			r := feedAt(t, tt.now, time.UTC, []byte(line))
			tt.want.check(t, r)
			if tt.want.isError && r.ErrorMessage != tt.text {
				t.Errorf("ErrorMessage = %q, want the result text", r.ErrorMessage)
			}
			if !tt.want.isError && string(r.Text) != tt.text {
				t.Errorf("Text = %q, want the answer kept", r.Text)
			}
		})
	}
}
