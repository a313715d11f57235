package agent

import (
	"encoding/json"
	"strings"
	"time"
)

// piStream folds the JSON lines of `pi -p --mode json` into a Result.
//
// pi 0.73 prints a session header first ({"type":"session","id":…}), then
// its agent events: agent_start, turn_start, message_start/update/end for
// each user, assistant and tool-result message, tool_execution_*, turn_end,
// auto_retry_start/end around its own retries, and agent_end last. The
// answer is the text of the last assistant message_end; each assistant
// message carries its own usage ({input, output, cacheRead, cacheWrite,
// cost: {total}}, input excluding the cache).
//
// A failed model call is an assistant message with stopReason "error" and
// an errorMessage ("429 Rate limit exceeded; retry later."), after pi's own
// retries, and pi still exits 0: that message is a provider failure, never
// an empty answer.
type piStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	maxBytes int64

	answer    string
	gotAnswer bool
	done      bool
}

// The fields of a pi event that cadence reads, as capture indices.
const (
	piType = iota
	piID
	piRole
	piBlockType
	piBlockText
	piUsage
	piStopReason
	piErrorMessage
)

func (p *piStream) captures() []capture {
	return []capture{
		piType:         {path: []string{"type"}, limit: 256},
		piID:           {path: []string{"id"}, limit: 1 << 10},
		piRole:         {path: []string{"message", "role"}, limit: 256},
		piBlockType:    {path: []string{"message", "content", "*", "type"}, limit: 64},
		piBlockText:    answerCapture([]string{"message", "content", "*", "text"}, p.maxBytes),
		piUsage:        {path: []string{"message", "usage"}, limit: 4 << 10},
		piStopReason:   {path: []string{"message", "stopReason"}, limit: 256},
		piErrorMessage: {path: []string{"message", "errorMessage"}, limit: 64 << 10},
	}
}

func newPiStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64) *piStream {
	return &piStream{res: res, help: help, now: now, maxBytes: maxBytes}
}

// piMessageUsage is an assistant message's usage.
type piMessageUsage struct {
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	CacheRead  json.RawMessage `json:"cacheRead"`
	CacheWrite json.RawMessage `json:"cacheWrite"`
	Cost       struct {
		Total json.RawMessage `json:"total"`
	} `json:"cost"`
}

func (p *piStream) event(e *eventScanner, line []byte) {
	typ, ok := stringField(value(e, piType))
	if !ok || typ == "" {
		p.raw(line)
		return
	}
	switch typ {
	case "session":
		takeSessionID(p.res, stringValue(value(e, piID)))
	case "message_end":
		if stringValue(value(e, piRole)) == "assistant" {
			p.assistantEnd(e)
		}
	case "agent_end":
		p.done = true
	}
}

func (p *piStream) assistantEnd(e *eventScanner) {
	p.res.Turns++
	var u piMessageUsage
	if raw := value(e, piUsage); len(raw) > 0 && json.Unmarshal(raw, &u) == nil {
		read, write := jsonInt64(u.CacheRead), jsonInt64(u.CacheWrite)
		p.res.InputTokens += jsonInt64(u.Input) + read + write
		p.res.CachedTokens += read
		p.res.OutputTokens += jsonInt64(u.Output)
		if v, ok := jsonNumber(u.Cost.Total); ok && v >= 0 {
			p.res.CostUSD += v
			p.res.CostKnown = true
		}
	}
	if stringValue(value(e, piStopReason)) == "error" {
		msg := stringValue(value(e, piErrorMessage))
		if msg == "" {
			msg = "pi reported a failed model call with no message"
		}
		p.res.IsError = true
		p.res.ErrorMessage = cutText(msg, maxErrorMessage)
		p.res.Transient, p.res.Permanent, p.res.Auth = false, false, false
		classifyMessage(p.res, msg)
		p.answer, p.gotAnswer = "", false
		return
	}
	// A later answer (after pi's own retry, or its next step) supersedes
	// a failure.
	p.res.IsError, p.res.Transient, p.res.Permanent, p.res.Auth = false, false, false, false
	p.res.ErrorMessage = ""
	p.res.TextTooLarge, p.res.TextBytes, p.res.SkippedResult = false, 0, false
	types := map[int]string{}
	for _, f := range e.all(piBlockType) {
		types[f.elem] = stringValue(f.raw)
	}
	var parts []string
	var size int64
	for _, f := range e.all(piBlockText) {
		if types[f.elem] != "text" {
			continue
		}
		if f.over {
			p.res.TextTooLarge, p.res.TextBytes = true, f.size-2
			p.answer, p.gotAnswer = "", true
			return
		}
		s := stringValue(f.raw)
		size += int64(len(s))
		parts = append(parts, s)
	}
	if size > p.maxBytes {
		p.res.TextTooLarge, p.res.TextBytes = true, size
		p.answer, p.gotAnswer = "", true
		return
	}
	p.answer, p.gotAnswer = strings.Join(parts, ""), true
	p.help.text(p.answer)
}

func (p *piStream) raw(line []byte) { p.help.line(line) }

// ended reports whether agent_end, pi's last event, was seen.
func (p *piStream) ended() bool { return p.done }

// skipped handles an event line too long to parse: an assistant
// message_end among them held the answer.
func (p *piStream) skipped(e *eventScanner) {
	if stringValue(value(e, piType)) == "message_end" && stringValue(value(e, piRole)) != "user" {
		p.res.SkippedResult = true
	}
}

func (p *piStream) finish(string) {
	if p.gotAnswer && !p.res.IsError {
		p.res.Text = []byte(p.answer)
		if !p.res.TextTooLarge {
			p.res.TextBytes = int64(len(p.answer))
		}
	}
}
