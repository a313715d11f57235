package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxNotice bounds the length of a result text that may be one of Claude
// Code's own error messages: they are one line of at most a few hundred
// bytes (an API error quotes the provider's JSON body). An answer is
// usually longer, and one that mentions such a message is never only it.
const maxNotice = 2 << 10

// claudeWindow names a usage window of a Claude account, optionally for
// one model: "5-hour", "session", "weekly", "Opus weekly".
const claudeWindow = `(?:(?:Opus|Sonnet|Haiku) )?(?:\d+-hour|session|daily|weekly|monthly|usage)`

// Claude Code's own messages in place of an answer (shapes from its issue
// tracker: anthropics/claude-code#79500, #28827, #37402).
var (
	// "Claude AI usage limit reached|1771390800": the reset, in Unix seconds.
	claudeLimitEpochRE = regexp.MustCompile(`^Claude AI usage limit reached\|(\d{9,13})$`)
	// "You've hit your session limit · resets 5pm (Australia/Brisbane)",
	// "5-hour limit reached ∙ resets 5am", "Opus weekly limit reached":
	// the limits of the account's usage windows, not others ("Context
	// limit reached").
	claudeLimitRE = regexp.MustCompile(`^(?:You[’']ve hit your (?:` + claudeWindow + ` )?limit|` + claudeWindow + ` limit reached|Claude AI usage limit reached)\s*(?:[·∙•|-]\s*resets\s+(.*))?$`)
	// the reset of claudeLimitRE: "[Sep 24 at ]3pm|10:30am[ (Zone)]".
	claudeResetRE = regexp.MustCompile(`^(?:([A-Z][a-z]{2}) (\d{1,2}) at )?(\d{1,2})(?::(\d{2}))?\s*([ap]m)(?:\s*\(([A-Za-z0-9_+/-]+)\))?$`)
	// "API Error: Request rejected (429) · …"
	parenStatusRE = regexp.MustCompile(`\((\d{3})\)`)
)

// claudeNotice recognises a result text that is one of Claude Code's own
// messages about the API, the account or the login rather than an answer,
// and marks res accordingly: a usage limit (with its reset when the text
// gives one), a transient API error, or a failed login. It reports whether
// it recognised one. Only a text that is the message, one line and short,
// counts; an answer that mentions such a message is an answer.
func claudeNotice(res *Result, text string, now time.Time, loc *time.Location) bool {
	text = strings.TrimSpace(text)
	if text == "" || len(text) > maxNotice || strings.ContainsAny(text, "\n\r") {
		return false
	}
	if m := claudeLimitEpochRE.FindStringSubmatch(text); m != nil {
		res.Transient, res.UsageLimit = true, true
		if secs, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			setReset(res, unixReset(float64(secs)), now)
		}
		return true
	}
	if m := claudeLimitRE.FindStringSubmatch(text); m != nil {
		res.Transient, res.UsageLimit = true, true
		if reset, ok := claudeReset(m[1], now, loc); ok {
			setReset(res, reset, now)
		}
		return true
	}
	lower := strings.ToLower(text)
	switch {
	case strings.HasPrefix(text, "API Error:"), strings.HasPrefix(text, "Failed to authenticate."):
		status := apiErrorStatus(text)
		if status == 0 {
			if m := parenStatusRE.FindStringSubmatch(text); m != nil {
				status, _ = strconv.Atoi(m[1])
			}
		}
		classifyClaudeStatus(res, status)
		switch {
		case res.Transient || res.Permanent:
		case authText(text):
			markAuth(res)
		case transientText(text):
			res.Transient = true
		}
		// An API error of no known kind ("API Error: 400 …") is still
		// no answer.
		return res.Transient || res.Permanent || status >= 400
	case strings.HasPrefix(lower, "invalid api key"), strings.HasPrefix(lower, "not logged in"),
		strings.HasPrefix(lower, "oauth token has expired"), strings.HasPrefix(lower, "session expired"):
		markAuth(res)
		return true
	}
	return false
}

// classifyClaudeStatus is classifyStatus for Claude Code, whose 403s are
// about the login: an organisation that no longer allows it, an OAuth
// token without the right scope.
func classifyClaudeStatus(res *Result, status int) {
	if status == 403 {
		markAuth(res)
		return
	}
	classifyStatus(res, status)
}

// claudeReset reads the reset of a "You've hit your limit · resets …"
// message: an hour of the day ("5am", "10:30pm"), optionally after a day
// ("Sep 24 at 3pm"), in the zone it names or else loc, the zone the CLI
// ran in. An hour alone is its next occurrence after now.
func claudeReset(s string, now time.Time, loc *time.Location) (time.Time, bool) {
	m := claudeResetRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return time.Time{}, false
	}
	if m[6] != "" {
		z, err := time.LoadLocation(m[6])
		if err != nil {
			return time.Time{}, false
		}
		loc = z
	}
	hour, _ := strconv.Atoi(m[3])
	minute := 0
	if m[4] != "" {
		minute, _ = strconv.Atoi(m[4])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if m[5] == "pm" {
		hour += 12
	}
	local := now.In(loc)
	if m[1] != "" {
		mon, err := time.Parse("Jan", m[1])
		day, _ := strconv.Atoi(m[2])
		if err != nil || day < 1 || day > 31 {
			return time.Time{}, false
		}
		t := time.Date(local.Year(), mon.Month(), day, hour, minute, 0, 0, loc)
		if t.Before(local.Add(-24 * time.Hour)) { // a date early next year
			t = t.AddDate(1, 0, 0)
		}
		return t, true
	}
	return nextClock(local, hour, minute), true
}

// nextClock is the first moment after now (in now's zone) whose clock
// reads hour:minute.
func nextClock(now time.Time, hour, minute int) time.Time {
	t := time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, now.Location())
	if !t.After(now) {
		t = time.Date(now.Year(), now.Month(), now.Day()+1, hour, minute, 0, 0, now.Location())
	}
	return t
}

// unixReset turns a reset time in Unix seconds (or milliseconds) into a
// time; zero when it is beyond any plausible reset.
func unixReset(secs float64) time.Time {
	if secs > 1e12 { // milliseconds, not seconds
		secs /= 1000
	}
	if secs <= 0 || secs > 1<<33 {
		return time.Time{}
	}
	return time.Unix(int64(secs), int64((secs-float64(int64(secs)))*1e9)).UTC()
}

// maxReset bounds how far ahead a reset may be: the longest usage window
// of the CLIs is a week (a month would be a billing cycle). A reset
// further ahead, or one well in the past, is a misreading, not a wait.
const maxReset = 31 * 24 * time.Hour

// setReset records when a limit resets, and the wait until then.
func setReset(res *Result, reset, now time.Time) {
	if reset.IsZero() || reset.Before(now.Add(-time.Minute)) || reset.After(now.Add(maxReset)) {
		return
	}
	res.ResetAt = reset.UTC()
	if wait := reset.Sub(now); wait > res.RetryAfter {
		res.RetryAfter = wait
	}
}
