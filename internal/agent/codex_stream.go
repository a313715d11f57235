package agent

import (
	"bytes"
	"encoding/json"
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
	res  *Result
	help *helpScanner

	priorIn, priorOut int64
	answer            string // text of the last agent_message item
	gotAnswer         bool
	lastError         string // message of the last error event
}

type codexEvent struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     json.RawMessage `json:"item"`
	Usage    json.RawMessage `json:"usage"`
	Error    json.RawMessage `json:"error"`
	Message  json.RawMessage `json:"message"`
}

type codexItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type codexError struct {
	Message string `json:"message"`
}

func newCodexStream(res *Result, help *helpScanner, priorIn, priorOut int64) *codexStream {
	return &codexStream{res: res, help: help, priorIn: priorIn, priorOut: priorOut}
}

func (c *codexStream) line(line []byte) {
	trimmed := bytes.TrimSpace(line)
	var ev codexEvent
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &ev) != nil || ev.Type == "" {
		c.help.line(string(line))
		return
	}
	switch ev.Type {
	case "thread.started":
		if c.res.SessionID == "" {
			c.res.SessionID = ev.ThreadID
		}
	case "item.completed":
		var item codexItem
		if json.Unmarshal(ev.Item, &item) == nil && item.Type == "agent_message" {
			c.answer, c.gotAnswer = item.Text, true
			c.help.text(item.Text)
		}
	case "turn.completed":
		c.turnCompleted(ev.Usage)
	case "turn.failed":
		var e codexError
		msg := c.lastError
		if json.Unmarshal(ev.Error, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		c.fail(msg)
	case "error":
		// A retry notice or the prelude of turn.failed; kept in case the
		// stream ends without a turn.failed.
		if m := jsonString(ev.Message); m != "" {
			c.lastError = m
		}
	}
}

func (c *codexStream) turnCompleted(raw json.RawMessage) {
	c.res.Turns++
	// A later turn supersedes a failure reported before it.
	c.res.IsError, c.res.Transient, c.res.Permanent = false, false, false
	c.res.ErrorMessage = ""
	var usage claudeUsage // the same two field names
	if len(raw) == 0 || json.Unmarshal(raw, &usage) != nil {
		return
	}
	in, out := jsonInt64(usage.InputTokens), jsonInt64(usage.OutputTokens)
	c.res.CumulativeInputTokens, c.res.CumulativeOutputTokens = in, out
	c.res.InputTokens, c.res.OutputTokens = delta(in, c.priorIn), delta(out, c.priorOut)
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
	c.res.ErrorMessage = msg
	classifyMessage(c.res, msg)
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
		classifyMessage(c.res, c.lastError)
	}
}
