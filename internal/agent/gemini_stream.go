package agent

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// geminiStream folds the JSON lines of `gemini -o stream-json` into a Result.
//
// Gemini CLI 0.61 prints init (the session id), the user message, assistant
// message deltas, and a result whose status is "success" or "error". The
// exit code of a failed turn is the HTTP status modulo 256 rather than a
// documented code, so the outcome is read from result.status and
// result.error: error.type RetryableQuotaError is transient (with the
// suggested retry delay from the message), TerminalQuotaError is a usage
// limit until its reset (terminalQuota), and otherwise the status or words in the message decide. The CLI also
// names the error class in the stack trace it writes to stderr, which is
// used when the result does not say.
//
// A new session is saved only once a turn has been answered: after a failed
// first turn the id from init cannot be resumed (Result.SessionNotSaved).
type geminiStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	maxBytes int64
	// resumed: the session existed before this attempt.
	resumed bool

	answer     strings.Builder // assistant deltas since the last tool call, concatenated
	answerOver int64           // the answer's length once it went past maxBytes (then dropped)
	answered   bool            // an assistant message was seen at all
	gotResult  bool
	errType    string
}

// The fields of a Gemini CLI event that cadence reads, as capture indices.
const (
	gmType = iota
	gmSessionID
	gmRole
	gmStatus
	gmContent
	gmError
	gmStats
	gmMessage
)

func (g *geminiStream) captures() []capture {
	return []capture{
		gmType:      {path: []string{"type"}, limit: 256},
		gmSessionID: {path: []string{"session_id"}, limit: 1 << 10},
		gmRole:      {path: []string{"role"}, limit: 256},
		gmStatus:    {path: []string{"status"}, limit: 256},
		gmContent:   answerCapture([]string{"content"}, g.maxBytes),
		gmError:     {path: []string{"error"}, limit: 64 << 10},
		gmStats:     {path: []string{"stats"}, limit: 64 << 10},
		gmMessage:   {path: []string{"message"}, limit: 64 << 10},
	}
}

type geminiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Gemini CLI's error classes (its classifyGoogleError).
const (
	geminiRetryable = "RetryableQuotaError"
	geminiTerminal  = "TerminalQuotaError"
)

func newGeminiStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64, resumed bool) *geminiStream {
	return &geminiStream{res: res, help: help, now: now, maxBytes: maxBytes, resumed: resumed}
}

func (g *geminiStream) event(e *eventScanner, line []byte) {
	typ, ok := stringField(value(e, gmType))
	if !ok || typ == "" {
		g.raw(line)
		return
	}
	// Any event that names the session (init does) names the session.
	takeSessionID(g.res, stringValue(value(e, gmSessionID)))
	switch typ {
	case "message":
		if stringValue(value(e, gmRole)) == "assistant" {
			f, _ := e.get(gmContent)
			g.addAnswer(f)
		}
	case "tool_use":
		// The model goes on after its tool: the final answer is what it
		// says after its last tool call, as in Claude Code's result.
		g.help.text(g.answer.String())
		g.answer.Reset()
		g.answerOver = 0
		g.res.SkippedResult = false
	case "result":
		g.resultEvent(e)
	case "error":
		// The result decides the outcome, but the turn may have been
		// stopped by it ("Maximum session turns exceeded", "Loop
		// detected, stopping execution") and then reported successful
		// with no answer: TurnError says why.
		if m := stringValue(value(e, gmMessage)); m != "" {
			if g.res.ErrorMessage == "" {
				g.res.ErrorMessage = cutText(m, maxErrorMessage)
			}
			g.addTurnError(m)
		}
	}
}

func (g *geminiStream) raw(line []byte) { g.help.line(line) }

// addTurnError appends an error event's text to Result.TurnError, within
// maxErrorMessage.
func (g *geminiStream) addTurnError(m string) {
	if g.res.TurnError != "" {
		m = g.res.TurnError + "; " + m
	}
	g.res.TurnError = cutText(m, maxErrorMessage)
}

// ended reports whether the result event, the last of a headless run,
// was seen.
func (g *geminiStream) ended() bool { return g.gotResult }

// addAnswer appends an assistant delta to the answer, or only measures it
// once the answer is over maxBytes.
func (g *geminiStream) addAnswer(f field) {
	g.answered = true
	if g.answerOver > 0 || f.over {
		g.answerOver += int64(g.answer.Len()) + max(f.size-2, 0)
		g.answer.Reset()
		return
	}
	text := stringValue(f.raw)
	if int64(g.answer.Len()+len(text)) > g.maxBytes {
		g.answerOver = int64(g.answer.Len() + len(text))
		g.answer.Reset()
		return
	}
	g.answer.WriteString(text)
}

// skipped handles an event line too long to parse: an assistant message
// among them was part of the final answer, lost unless a tool call follows.
func (g *geminiStream) skipped(e *eventScanner) {
	if stringValue(value(e, gmType)) == "message" && stringValue(value(e, gmRole)) != "user" {
		g.res.SkippedResult = true
	}
}

func (g *geminiStream) resultEvent(e *eventScanner) {
	g.gotResult = true
	var stats struct {
		InputTokens  json.RawMessage `json:"input_tokens"` // the cached ones included
		Cached       json.RawMessage `json:"cached"`
		OutputTokens json.RawMessage `json:"output_tokens"`
	}
	if st := value(e, gmStats); len(st) > 0 && json.Unmarshal(st, &stats) == nil {
		g.res.InputTokens = jsonInt64(stats.InputTokens)
		g.res.CachedTokens = jsonInt64(stats.Cached)
		g.res.OutputTokens = jsonInt64(stats.OutputTokens)
	}
	status := stringValue(value(e, gmStatus))
	if status == "success" {
		g.res.Turns++
		g.res.IsError, g.res.Transient, g.res.Permanent = false, false, false
		g.res.ErrorMessage, g.res.RetryAfter = "", 0
		return
	}
	g.res.IsError = true
	var ge geminiError
	if raw := value(e, gmError); len(raw) > 0 && json.Unmarshal(raw, &ge) == nil {
		g.errType = ge.Type
		g.res.ErrorMessage = cutText(ge.Message, maxErrorMessage)
	}
	if g.res.ErrorMessage == "" {
		g.res.ErrorMessage = "gemini reported status " + strconv.Quote(cutText(status, 256))
	}
	switch g.errType {
	case geminiRetryable:
		g.res.Transient = true
	case geminiTerminal:
		g.terminalQuota()
		return
	default:
		classifyMessage(g.res, g.res.ErrorMessage)
	}
	if d, ok := suggestedRetry(g.res.ErrorMessage); ok && !g.res.Permanent {
		g.res.Transient = true
		g.res.RetryAfter = max(g.res.RetryAfter, d)
		g.res.ResetAt = g.now().Add(g.res.RetryAfter).UTC()
	}
}

func (g *geminiStream) finish(stderrTail string) {
	g.res.Text = []byte(g.answer.String())
	g.res.TextBytes = int64(g.answer.Len())
	if g.answerOver > 0 {
		g.res.TextTooLarge, g.res.TextBytes = true, g.answerOver
	}
	g.help.text(g.answer.String())
	if !g.resumed && g.res.SessionID != "" && g.res.Turns == 0 && !g.answered {
		// A new session whose turn was not answered is not on disk.
		g.res.SessionNotSaved = true
	}
	if !g.gotResult && !g.res.IsError && authText(stderrTail) {
		// No turn at all: Gemini CLI found no usable login and said so
		// on stderr ("Please set an Auth method …", exit 41).
		g.res.IsError = true
		markAuth(g.res)
		g.res.ErrorMessage = cutText(lastLineWhere(stderrTail, authText), maxErrorMessage)
		return
	}
	if !g.res.IsError || g.res.Transient || g.res.Permanent {
		return
	}
	// The result named no class the stream could read; the stack trace on
	// stderr does ("RetryableQuotaError: Service Unavailable").
	switch {
	case strings.Contains(stderrTail, geminiTerminal):
		g.terminalQuota()
	case strings.Contains(stderrTail, geminiRetryable):
		g.res.Transient = true
	case authText(stderrTail):
		markAuth(g.res)
	}
}

// terminalQuota handles Gemini CLI's TerminalQuotaError: a quota of the
// account or project is exhausted (a daily one, or Code Assist's
// QUOTA_EXHAUSTED). It is a wait, not a failure: until the reset the
// message gives ("Your quota will reset after 1h49m8s.", "Please retry
// in 1h2m3s."), else until the next midnight Pacific time, when the
// Gemini API's daily quotas reset (geminiQuotaDay).
func (g *geminiStream) terminalQuota() {
	g.res.Transient, g.res.UsageLimit, g.res.Permanent = true, true, false
	now := g.now()
	if d, ok := suggestedRetry(g.res.ErrorMessage); ok {
		setReset(g.res, now.Add(d), now)
		return
	}
	setReset(g.res, nextPacificMidnight(now), now)
}

// nextPacificMidnight is the next midnight in America/Los_Angeles after
// now: "Requests per day (RPD) quotas reset at midnight Pacific time"
// (Gemini API rate limits documentation). Without the zone database it
// takes UTC-8, which errs an hour late in summer, never early.
func nextPacificMidnight(now time.Time) time.Time {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		loc = time.FixedZone("PST", -8*3600)
	}
	local := now.In(loc)
	return time.Date(local.Year(), local.Month(), local.Day()+1, 0, 0, 0, 0, loc)
}

// suggestedRetryRE finds the wait in Gemini CLI's messages: "Suggested
// retry after 2s." (the server's RetryInfo), "Please retry in 12.5s.",
// "Please retry in 1h2m3s.", "Your quota will reset after 1h49m8s.".
var suggestedRetryRE = regexp.MustCompile(`(?i)(?:retry (?:after|in)|reset after) ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)\b`)

// suggestedRetry reads the wait a Gemini error message suggests.
func suggestedRetry(msg string) (time.Duration, bool) {
	m := suggestedRetryRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(strings.ToLower(m[1]))
	if err != nil || d <= 0 || d > 8*24*time.Hour { // beyond any plausible wait
		return 0, false
	}
	return d, true
}
