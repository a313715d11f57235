package agent

import (
	"encoding/json"
	"time"
)

// codexStream folds the JSON lines of `codex exec --json` into a Result.
//
// Codex 0.169 prints thread.started (the session id), turn.started,
// item.completed items, and turn.completed with usage or turn.failed with an
// error. An "error" event alone is not a failure: Codex prints one for every
// retry it makes itself ("Reconnecting... 1/5 …") and then may succeed; only
// turn.failed ends a turn in failure, and a non-zero exit without it is left
// to the caller (exit_nonzero).
//
// Usage in turn.completed is cumulative over the thread: a follow-up in a
// resumed thread reports the first turn's tokens plus its own. The figures
// are kept as Result.Cumulative*, and this attempt's usage is the difference
// from the prior figures the caller passed in Spec.
type codexStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	loc      *time.Location // the zone of Codex's clock times ("try again at 12:16 PM")
	maxBytes int64

	priorIn, priorCached, priorOut int64
	answer                         string // text of the last agent_message item
	gotAnswer                      bool
	lastError                      string // message of the last error event
	turnEnded                      bool   // a turn.completed or turn.failed was seen
}

// The fields of a Codex event that cadence reads, as capture indices.
const (
	cxType = iota
	cxThreadID
	cxItemType
	cxItemText
	cxUsage
	cxErrorMessage
	cxMessage
)

func (c *codexStream) captures() []capture {
	return []capture{
		cxType:         {path: []string{"type"}, limit: 256},
		cxThreadID:     {path: []string{"thread_id"}, limit: 1 << 10},
		cxItemType:     {path: []string{"item", "type"}, limit: 256},
		cxItemText:     answerCapture([]string{"item", "text"}, c.maxBytes),
		cxUsage:        {path: []string{"usage"}, limit: 64 << 10},
		cxErrorMessage: {path: []string{"error", "message"}, limit: 64 << 10},
		cxMessage:      {path: []string{"message"}, limit: 64 << 10},
	}
}

func newCodexStream(res *Result, help *helpScanner, maxBytes, priorIn, priorCached, priorOut int64) *codexStream {
	return &codexStream{res: res, help: help, now: time.Now, loc: time.Local, maxBytes: maxBytes,
		priorIn: priorIn, priorCached: priorCached, priorOut: priorOut}
}

func (c *codexStream) event(e *eventScanner, line []byte) {
	typ, ok := stringField(value(e, cxType))
	if !ok || typ == "" {
		c.raw(line)
		return
	}
	// Any event that names the thread names the session.
	takeSessionID(c.res, stringValue(value(e, cxThreadID)))
	switch typ {
	case "item.completed":
		// Items of other types (command output, file changes) are the
		// bulk of a transcript; only their type was read.
		if stringValue(value(e, cxItemType)) == "agent_message" {
			c.res.TextTooLarge, c.res.TextBytes = false, 0
			f, _ := e.get(cxItemText)
			c.answer, c.gotAnswer = keepAnswer(c.res, f, c.maxBytes), true
			c.res.SkippedResult = false
			c.help.text(c.answer)
		}
	case "turn.completed":
		c.turnEnded = true
		c.turnCompleted(value(e, cxUsage))
	case "turn.failed":
		c.turnEnded = true
		msg := c.lastError
		if m := stringValue(value(e, cxErrorMessage)); m != "" {
			msg = m
		}
		c.fail(msg)
	case "error":
		// A retry notice or the prelude of turn.failed; kept in case the
		// stream ends without a turn.failed.
		if m := stringValue(value(e, cxMessage)); m != "" {
			c.lastError = cutText(m, maxErrorMessage)
		}
	}
}

func (c *codexStream) raw(line []byte) { c.help.line(line) }

// ended reports whether the turn ended: `codex exec` runs one.
func (c *codexStream) ended() bool { return c.turnEnded }

// skipped handles an event line too long to parse: an agent_message item
// among them was the final answer, lost unless a later one replaces it.
func (c *codexStream) skipped(e *eventScanner) {
	if stringValue(value(e, cxType)) == "item.completed" && stringValue(value(e, cxItemType)) == "agent_message" {
		c.res.SkippedResult = true
	}
}

func (c *codexStream) turnCompleted(raw json.RawMessage) {
	c.res.Turns++
	// A later turn supersedes a failure reported before it.
	c.res.IsError, c.res.Transient, c.res.Permanent, c.res.Auth, c.res.UsageLimit = false, false, false, false, false
	c.res.ErrorMessage, c.res.RetryAfter, c.res.ResetAt = "", 0, time.Time{}
	var usage struct {
		InputTokens  json.RawMessage `json:"input_tokens"` // the cached ones included
		CachedTokens json.RawMessage `json:"cached_input_tokens"`
		OutputTokens json.RawMessage `json:"output_tokens"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &usage) != nil {
		return
	}
	in, cached, out := jsonInt64(usage.InputTokens), jsonInt64(usage.CachedTokens), jsonInt64(usage.OutputTokens)
	c.res.CumulativeInputTokens, c.res.CumulativeCachedTokens, c.res.CumulativeOutputTokens = in, cached, out
	c.res.InputTokens, c.res.OutputTokens = delta(in, c.priorIn), delta(out, c.priorOut)
	c.res.CachedTokens = delta(cached, c.priorCached)
}

// delta is total minus prior, or total when prior cannot be part of it (a
// new thread after a lost one).
func delta(total, prior int64) int64 {
	if prior <= 0 || prior > total {
		return total
	}
	return total - prior
}

func (c *codexStream) fail(msg string) {
	c.res.IsError = true
	c.res.ErrorMessage = cutText(msg, maxErrorMessage)
	c.classify(msg)
}

// classify reads what kind of failure an error message reports.
func (c *codexStream) classify(msg string) {
	classifyMessage(c.res, msg)
	codexLimit(c.res, msg, c.now(), c.loc)
}

func (c *codexStream) finish(string) {
	if c.gotAnswer {
		c.res.Text = []byte(c.answer)
		return
	}
	if !c.res.IsError && c.lastError != "" {
		// The stream ended (killed, crashed) after an error event but
		// without turn.failed: the error is the best account of it.
		c.res.ErrorMessage = c.lastError
		c.classify(c.lastError)
	}
}
