package agent

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"time"
)

// qwenStream folds the JSON lines of `qwen -o stream-json` into a Result.
//
// Qwen Code 0.24 prints Claude Code's events (system/init with the session
// id, assistant messages, user tool results, a closing result), so it is
// read by claudeStream, except for the result, which differs in three
// ways:
//
//   - a failed turn has subtype error_during_execution, is_error true, no
//     result text and its reason in error.message ("[API Error: 429 Rate
//     limit exceeded; retry later.]"), after an assistant message with the
//     same text;
//   - usage.input_tokens is the provider's prompt tokens, the cached ones
//     included (cache_read_input_tokens is that part), and no cost is
//     reported;
//   - with --json-schema the answer is structured_result (result then
//     holds the same value as JSON text).
//
// A resume of a session Qwen Code does not have prints "No saved session
// found with ID …" on stderr and exits 1 with no event
// (sessionNotFoundMarkers).
type qwenStream struct {
	*claudeStream
}

// qwStructured is the capture of structured_result, following
// claudeStream's.
const qwStructured = clMessageID + 1

func newQwenStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64) *qwenStream {
	return &qwenStream{claudeStream: newClaudeStream(res, help, now, maxBytes)}
}

// captures are Claude Code's, with room for a result's error object
// (whose message can be long) and structured_result.
func (q *qwenStream) captures() []capture {
	caps := q.claudeStream.captures()
	caps[clError].limit = 64 << 10
	return append(caps, capture{path: []string{"structured_result"}, limit: int(min(q.maxBytes, 1<<31-2)) + 1})
}

func (q *qwenStream) event(e *eventScanner, line []byte) {
	ev, ok := claudeHeader(e)
	if ok && ev.typ == "result" {
		q.resultEvent(e, ev)
		return
	}
	q.claudeStream.event(e, line)
}

func (q *qwenStream) resultEvent(e *eventScanner, ev claudeEvent) {
	c := q.claudeStream
	c.gotResult = true
	c.res.SkippedResult = false
	c.res.IsError = ev.isError
	takeSessionID(c.res, ev.sessionID)
	if v, ok := jsonNumber(value(e, clTurns)); ok && v >= 0 && v <= math.MaxInt32 {
		c.res.Turns = int(v)
	}
	var usage claudeUsage
	if u := value(e, clUsage); len(u) > 0 && json.Unmarshal(u, &usage) == nil {
		c.res.InputTokens = jsonInt64(usage.InputTokens) // the cached ones included
		c.res.CachedTokens = jsonInt64(usage.CacheReadTokens)
		c.res.OutputTokens = jsonInt64(usage.OutputTokens)
	}
	f, ok := e.get(qwStructured)
	takeStructured(c.res, f, ok, c.maxBytes)
	c.result = c.answer(e)
	c.help.text(c.result)
	if !ev.isError {
		// Qwen Code retries failed requests itself: errors before a
		// successful result no longer describe the attempt.
		c.res.Transient, c.res.Permanent, c.res.Auth, c.res.UsageLimit = false, false, false, false
		c.res.ErrorMessage, c.res.RetryAfter, c.res.ResetAt = "", 0, time.Time{}
		return
	}
	var failure struct {
		Message string `json:"message"`
	}
	if raw := value(e, clError); len(raw) > 0 {
		_ = json.Unmarshal(raw, &failure) // a malformed error says nothing
	}
	message := failure.Message
	if message == "" {
		message = c.result
	}
	if message == "" {
		message = "qwen reported an error with no message"
	}
	c.result = ""
	c.res.ErrorMessage = cutText(message, maxErrorMessage)
	classifyQwen(c.res, message, c.now())
}

// finish sets the candidate text. A stream cut off before its result
// whose last assistant text is one of Qwen Code's API error notices has
// no answer but that failure.
func (q *qwenStream) finish(stderrTail string) {
	q.claudeStream.finish(stderrTail)
	if q.gotResult {
		return
	}
	text := strings.TrimSpace(string(q.res.Text))
	if strings.HasPrefix(text, "[API Error:") {
		q.res.IsError = true
		q.res.ErrorMessage = cutText(text, maxErrorMessage)
		q.res.Text, q.res.TextBytes = nil, 0
		classifyQwen(q.res, text, q.now())
	}
}

// qwenQuotaRE matches Qwen Code's test for an exhausted quota (its
// isQuotaExhaustedError): "quota" with "exhausted" or "exceeded", and a
// reset it names ("will reset", "reset at").
var qwenQuotaRE = regexp.MustCompile(`(?is)quota.*(?:exhausted|exceeded)|(?:exhausted|exceeded).*quota`)

// classifyQwen reads the kind of failure from Qwen Code's error message:
// the status of "[API Error: 429 …]", an exhausted quota (a usage limit
// that Qwen Code itself does not retry, "Quota exhausted … will reset
// …"), else words of a login or of a transient failure.
func classifyQwen(res *Result, msg string, now time.Time) {
	lower := strings.ToLower(msg)
	if qwenQuotaRE.MatchString(msg) && (strings.Contains(lower, "will reset") || strings.Contains(lower, "reset at") ||
		strings.Contains(lower, "reset after")) {
		res.Transient, res.UsageLimit, res.Permanent = true, true, false
		if d, ok := suggestedRetry(msg); ok {
			setReset(res, now.Add(d), now)
		}
		return
	}
	classifyStatus(res, apiErrorStatus(msg))
	switch {
	case res.Transient || res.Permanent:
	case authText(msg):
		markAuth(res)
	case transientText(msg):
		res.Transient = true
	}
}
