package agent

import (
	"bytes"
	"encoding/json"
	"math"
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
// suggested retry delay from the message), TerminalQuotaError is permanent,
// and otherwise the status or words in the message decide. The CLI also
// names the error class in the stack trace it writes to stderr, which is
// used when the result does not say.
//
// A new session is saved only once a turn has been answered: after a failed
// first turn the id from init cannot be resumed (Result.SessionNotSaved).
type geminiStream struct {
	res  *Result
	help *helpScanner
	now  func() time.Time
	// resumed: the session existed before this attempt.
	resumed bool

	answer    strings.Builder // assistant deltas, concatenated
	gotResult bool
	errType   string
}

type geminiEvent struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Status    string          `json:"status"`
	Error     json.RawMessage `json:"error"`
	Stats     json.RawMessage `json:"stats"`
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

func newGeminiStream(res *Result, help *helpScanner, now func() time.Time, resumed bool) *geminiStream {
	return &geminiStream{res: res, help: help, now: now, resumed: resumed}
}

func (g *geminiStream) line(line []byte) {
	trimmed := bytes.TrimSpace(line)
	var ev geminiEvent
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &ev) != nil || ev.Type == "" {
		g.help.line(string(line))
		return
	}
	switch ev.Type {
	case "init":
		if g.res.SessionID == "" {
			g.res.SessionID = ev.SessionID
		}
	case "message":
		if ev.Role == "assistant" {
			g.answer.WriteString(jsonString(ev.Content))
		}
	case "result":
		g.resultEvent(&ev)
	case "error":
		// A non-fatal warning; the result decides the outcome.
		var e geminiError
		if json.Unmarshal(trimmed, &e) == nil && g.res.ErrorMessage == "" {
			g.res.ErrorMessage = e.Message
		}
	}
}

func (g *geminiStream) resultEvent(ev *geminiEvent) {
	g.gotResult = true
	var stats struct {
		InputTokens  json.RawMessage `json:"input_tokens"`
		OutputTokens json.RawMessage `json:"output_tokens"`
	}
	if len(ev.Stats) > 0 && json.Unmarshal(ev.Stats, &stats) == nil {
		g.res.InputTokens = jsonInt64(stats.InputTokens)
		g.res.OutputTokens = jsonInt64(stats.OutputTokens)
	}
	if ev.Status == "success" {
		g.res.Turns++
		g.res.IsError, g.res.Transient, g.res.Permanent = false, false, false
		g.res.ErrorMessage, g.res.RetryAfter = "", 0
		return
	}
	g.res.IsError = true
	var e geminiError
	if len(ev.Error) > 0 && json.Unmarshal(ev.Error, &e) == nil {
		g.errType = e.Type
		g.res.ErrorMessage = e.Message
	}
	if g.res.ErrorMessage == "" {
		g.res.ErrorMessage = "gemini reported status " + strconv.Quote(ev.Status)
	}
	switch g.errType {
	case geminiRetryable:
		g.res.Transient = true
	case geminiTerminal:
		g.res.Permanent = true
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
	g.help.text(g.answer.String())
	if !g.resumed && g.res.SessionID != "" && g.res.Turns == 0 && g.answer.Len() == 0 {
		// A new session whose turn was not answered is not on disk.
		g.res.SessionNotSaved = true
	}
	if !g.res.IsError || g.res.Transient || g.res.Permanent {
		return
	}
	// The result named no class the stream could read; the stack trace on
	// stderr does ("RetryableQuotaError: Service Unavailable").
	switch {
	case strings.Contains(stderrTail, geminiTerminal):
		g.res.Permanent = true
	case strings.Contains(stderrTail, geminiRetryable):
		g.res.Transient = true
	}
}

var suggestedRetryRE = regexp.MustCompile(`(?i)retry (?:after|in) (\d+(?:\.\d+)?)\s*(ms|s)\b`)

// suggestedRetry reads Gemini CLI's "Suggested retry after 2s." (the
// server's RetryInfo) from an error message.
func suggestedRetry(msg string) (time.Duration, bool) {
	m := suggestedRetryRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, false
	}
	unit := time.Second
	if strings.EqualFold(m[2], "ms") {
		unit = time.Millisecond
	}
	if v > float64(24*time.Hour/unit) { // beyond any plausible wait
		return 0, false
	}
	return time.Duration(v * float64(unit)), true
}
