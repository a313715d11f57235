package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// copilotStream folds the JSON lines of `copilot --output-format json`
// into a Result.
//
// GitHub Copilot CLI 1.0.102 prints one event a line, {"type", "data",
// "id", "timestamp", "parentId"}: session.* events (skills, MCP servers,
// tools loaded; session.info and session.warning), user.message,
// assistant.turn_start, assistant.message_start/_delta (ephemeral),
// assistant.message, whose data.content is a whole message of the model,
// assistant.turn_retry and model.call_* around its own retries,
// assistant.turn_end, and last {"type":"result","sessionId","exitCode",
// "usage":{"premiumRequests",…}}: the only event that names the session.
// The answer is the last assistant.message's content. The stream carries
// no tokens; the CLI writes them to --usage-output-file when it exits
// (see readCopilotUsage).
//
// A failed turn is a session.error, {"errorType","message","statusCode"},
// printed after the CLI's own retries (five, for a 429 or a 5xx), then
// the result with exitCode 1. errorType is "rate_limit" (a 429, whatever
// its message), "authentication" (a 401 of the provider), "query" (any
// other failed request: the status says what it was), and, by the names
// the CLI uses, "quota" for an exhausted quota of the Copilot plan,
// "authorization" and "configuration".
type copilotStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	maxBytes int64

	answer    string
	gotAnswer bool
	done      bool
}

// The fields of a Copilot CLI event that cadence reads, as capture
// indices.
const (
	cpType = iota
	cpSessionID
	cpContent
	cpErrorType
	cpMessage
	cpStatus
)

func (c *copilotStream) captures() []capture {
	return []capture{
		cpType:      {path: []string{"type"}, limit: 256},
		cpSessionID: {path: []string{"sessionId"}, limit: 1 << 10},
		cpContent:   answerCapture([]string{"data", "content"}, c.maxBytes),
		cpErrorType: {path: []string{"data", "errorType"}, limit: 256},
		cpMessage:   {path: []string{"data", "message"}, limit: 64 << 10},
		cpStatus:    {path: []string{"data", "statusCode"}, limit: 64},
	}
}

func newCopilotStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64) *copilotStream {
	return &copilotStream{res: res, help: help, now: now, maxBytes: maxBytes}
}

func (c *copilotStream) event(e *eventScanner, line []byte) {
	typ, ok := stringField(value(e, cpType))
	if !ok || typ == "" {
		c.raw(line)
		return
	}
	switch typ {
	case "assistant.message":
		c.message(e)
	case "session.error":
		c.sessionError(e)
	case "result":
		takeSessionID(c.res, stringValue(value(e, cpSessionID)))
		c.done = true
	}
}

// message takes an assistant.message as the answer so far: a later one
// (after a tool call, or after the CLI's retry) replaces it, and clears
// a failure reported before it.
func (c *copilotStream) message(e *eventScanner) {
	c.res.Turns++
	c.res.IsError, c.res.Transient, c.res.Permanent, c.res.Auth, c.res.UsageLimit = false, false, false, false, false
	c.res.ErrorMessage, c.res.RetryAfter, c.res.ResetAt = "", 0, time.Time{}
	c.res.TextTooLarge, c.res.TextBytes, c.res.SkippedResult = false, 0, false
	f, _ := e.get(cpContent)
	if f.over {
		c.res.TextTooLarge, c.res.TextBytes = true, f.size-2
		c.answer, c.gotAnswer = "", true
		return
	}
	c.answer, c.gotAnswer = stringValue(f.raw), true
	c.help.text(c.answer)
}

// sessionError records the failure that ends the turn.
func (c *copilotStream) sessionError(e *eventScanner) {
	kind := stringValue(value(e, cpErrorType))
	// The message may span lines ("… (HTTP 401).\n  Check your
	// COPILOT_PROVIDER_API_KEY …"); cadence reports it on one.
	msg := strings.Join(strings.Fields(stringValue(value(e, cpMessage))), " ")
	if msg == "" {
		msg = "Copilot CLI reported an error"
		if kind != "" {
			msg += " (" + kind + ")"
		}
	}
	c.res.IsError = true
	c.res.ErrorMessage = cutText(msg, maxErrorMessage)
	c.res.Transient, c.res.Permanent, c.res.Auth, c.res.UsageLimit = false, false, false, false
	c.answer, c.gotAnswer = "", false
	classifyCopilot(c.res, kind, int(jsonInt64(value(e, cpStatus))), msg, c.now())
}

// classifyCopilot reads the kind of a session.error: its errorType first,
// then the HTTP status it names, then the words of its message.
func classifyCopilot(res *Result, kind string, status int, msg string, now time.Time) {
	switch kind {
	case "quota":
		res.Transient, res.UsageLimit = true, true
	case "rate_limit":
		res.Transient = true
		// A 429 whose message says a quota is exhausted is one too.
		if qwenQuotaRE.MatchString(msg) {
			res.UsageLimit = true
		}
	case "authentication", "authorization":
		markAuth(res)
	case "configuration", "context_limit":
		res.Permanent = true
	}
	if !res.Transient && !res.Permanent {
		if status == 0 {
			status = statusIn(msg)
		}
		classifyStatus(res, status)
	}
	switch {
	case res.Transient || res.Permanent:
	case authText(msg):
		markAuth(res)
	case transientText(msg):
		res.Transient = true
	}
	if res.Transient {
		if d, ok := suggestedRetry(msg); ok {
			setReset(res, now.Add(d), now)
		}
	}
}

func (c *copilotStream) raw(line []byte) { c.help.line(line) }

// ended reports whether the result event, the CLI's last, was seen.
func (c *copilotStream) ended() bool { return c.done }

// skipped handles an event line too long to parse: an assistant.message
// among them held the answer.
func (c *copilotStream) skipped(e *eventScanner) {
	if stringValue(value(e, cpType)) == "assistant.message" {
		c.res.SkippedResult = true
	}
}

// copilotNoSession is what Copilot CLI prints on stderr, exiting 1 with
// no event, when --resume names a session it does not have.
const copilotNoSession = "No session, task, or name matched"

func (c *copilotStream) finish(stderrTail string) {
	if !c.gotAnswer && !c.res.IsError && strings.Contains(stderrTail, copilotNoSession) {
		c.res.SessionNotFound = true
		c.res.ErrorMessage = copilotNoSession
	}
	if c.gotAnswer && !c.res.IsError {
		c.res.Text = []byte(c.answer)
		if !c.res.TextTooLarge {
			c.res.TextBytes = int64(len(c.answer))
		}
	}
}

// UsageFileFlag is the option by which a preset's CLI writes its token
// usage to a file when it exits, "" for a preset that reports it in its
// stream: Copilot CLI's --usage-output-file. See Spec.UsageFileFlag.
func UsageFileFlag(preset string) string {
	if preset == PresetCopilot {
		return "--usage-output-file"
	}
	return ""
}

// maxUsageFile bounds what is read of a usage file: Copilot CLI's is a
// few kilobytes; the agent, which can write anything there, gets no more.
const maxUsageFile = 1 << 20

// copilotUsage is the part of Copilot CLI's usage file cadence reads:
// the tokens of each model the process called.
type copilotUsage struct {
	ModelMetrics map[string]struct {
		Usage struct {
			InputTokens     json.RawMessage `json:"inputTokens"`
			OutputTokens    json.RawMessage `json:"outputTokens"`
			CacheReadTokens json.RawMessage `json:"cacheReadTokens"`
		} `json:"usage"`
	} `json:"modelMetrics"`
}

// readCopilotUsage adds the tokens of Copilot CLI's usage file at path to
// res: inputTokens (which include the cache read, as the chat completions
// API's prompt_tokens do), cacheReadTokens as the cached part, and
// outputTokens, summed over the models. They are the session's, from its
// first turn (checked with 1.0.102: a resumed session's file counts both
// turns), so prior, the session's usage before this attempt
// (Spec.PriorInputTokens…), is taken off, and the session's figures are
// kept as res.Cumulative*. The file is written by the
// agent's process, so it is opened without following a link, read only if
// it is a regular file, and at most maxUsageFile of it; a file that is
// missing (the CLI was killed) or not the CLI's JSON adds nothing.
func readCopilotUsage(path string, res *Result, prior [3]int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("usage file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("usage file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("usage file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUsageFile+1))
	if err != nil {
		return fmt.Errorf("usage file: %w", err)
	}
	if len(data) > maxUsageFile {
		return fmt.Errorf("usage file %s is larger than %d bytes", path, maxUsageFile)
	}
	var u copilotUsage
	if err := json.Unmarshal(data, &u); err != nil {
		return fmt.Errorf("usage file %s: %w", path, err)
	}
	var in, cached, out int64
	for _, m := range u.ModelMetrics {
		in = addTokens(in, jsonInt64(m.Usage.InputTokens))
		cached = addTokens(cached, jsonInt64(m.Usage.CacheReadTokens))
		out = addTokens(out, jsonInt64(m.Usage.OutputTokens))
	}
	cached = min(cached, in)
	res.CumulativeInputTokens, res.CumulativeCachedTokens, res.CumulativeOutputTokens = in, cached, out
	res.InputTokens = addTokens(res.InputTokens, delta(in, prior[0]))
	res.CachedTokens = addTokens(res.CachedTokens, delta(cached, prior[1]))
	res.OutputTokens = addTokens(res.OutputTokens, delta(out, prior[2]))
	return nil
}

// addTokens adds a count of tokens to a total, ignoring a negative count
// and stopping at the largest int64 rather than wrapping.
func addTokens(total, n int64) int64 {
	if n <= 0 {
		return total
	}
	const most = 1 << 62
	if total >= most || n >= most-total {
		return most
	}
	return total + n
}
