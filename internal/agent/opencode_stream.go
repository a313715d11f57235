package agent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// opencodeStream folds the JSON lines of `opencode run --format json` into
// a Result.
//
// opencode 1.18 prints one event a line, each with the session's
// sessionID: step_start and step_finish around each model call (the
// finish carries that call's tokens and cost), text parts (the model's
// text, whole), tool_use parts, and error. There is no closing event: a
// turn ends when the process exits. The answer is the text of the last
// step that had any, as the model's last word after its tools.
//
// An error event is {"type":"error","error":{"name":"APIError","data":
// {"message","statusCode","isRetryable","responseHeaders":{…}}}}. After a
// retryable one (429, 5xx) opencode goes on retrying by itself, silently
// and for as long as it likes; cadence takes the error event as the end
// of the turn instead (ended), so that the attempt stops ExitGrace later
// and cadence waits out the retry-after the response named, under its own
// retry policy. A later step_start (opencode's retry got through before
// ExitGrace) takes the turn up again.
type opencodeStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	maxBytes int64

	answer    strings.Builder // the text parts of the current step
	answerOut int64           // the answer's length once it went past maxBytes (then dropped)
	stepText  bool            // the current step has text
	failed    bool            // the last event was an error
	steps     int
	events    bool // an event was seen
}

// The fields of an opencode event that cadence reads, as capture indices.
const (
	ocType = iota
	ocSessionID
	ocPartType
	ocPartText
	ocTokens
	ocCost
	ocError
)

func (o *opencodeStream) captures() []capture {
	return []capture{
		ocType:      {path: []string{"type"}, limit: 256},
		ocSessionID: {path: []string{"sessionID"}, limit: 1 << 10},
		ocPartType:  {path: []string{"part", "type"}, limit: 256},
		ocPartText:  answerCapture([]string{"part", "text"}, o.maxBytes),
		ocTokens:    {path: []string{"part", "tokens"}, limit: 4 << 10},
		ocCost:      {path: []string{"part", "cost"}, limit: 64},
		ocError:     {path: []string{"error"}, limit: 256 << 10},
	}
}

func newOpencodeStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64) *opencodeStream {
	return &opencodeStream{res: res, help: help, now: now, maxBytes: maxBytes}
}

// opencodeTokens is a step_finish's usage. input is the input not read
// from or written to the cache; output excludes reasoning.
type opencodeTokens struct {
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Reasoning json.RawMessage `json:"reasoning"`
	Cache     struct {
		Read  json.RawMessage `json:"read"`
		Write json.RawMessage `json:"write"`
	} `json:"cache"`
}

// opencodeError is an error event's error.
type opencodeError struct {
	Name string `json:"name"`
	Data struct {
		Message         string            `json:"message"`
		StatusCode      json.RawMessage   `json:"statusCode"`
		IsRetryable     bool              `json:"isRetryable"`
		ResponseHeaders map[string]string `json:"responseHeaders"`
	} `json:"data"`
}

func (o *opencodeStream) event(e *eventScanner, line []byte) {
	typ, ok := stringField(value(e, ocType))
	if !ok || typ == "" {
		o.raw(line)
		return
	}
	o.events = true
	takeSessionID(o.res, stringValue(value(e, ocSessionID)))
	switch typ {
	case "step_start":
		o.stepText = false
		if o.failed {
			// opencode retried the failed request itself and got through.
			o.failed = false
			o.res.IsError, o.res.Transient, o.res.Permanent, o.res.Auth, o.res.UsageLimit = false, false, false, false, false
			o.res.ErrorMessage, o.res.RetryAfter, o.res.ResetAt = "", 0, time.Time{}
		}
	case "text":
		f, _ := e.get(ocPartText)
		o.addText(f)
	case "step_finish":
		o.steps++
		o.res.Turns = o.steps
		var tok opencodeTokens
		if raw := value(e, ocTokens); len(raw) > 0 && json.Unmarshal(raw, &tok) == nil {
			read, write := jsonInt64(tok.Cache.Read), jsonInt64(tok.Cache.Write)
			o.res.InputTokens += jsonInt64(tok.Input) + read + write
			o.res.CachedTokens += read
			o.res.OutputTokens += jsonInt64(tok.Output) + jsonInt64(tok.Reasoning)
		}
		if v, ok := jsonNumber(value(e, ocCost)); ok && v >= 0 {
			o.res.CostUSD += v
			o.res.CostKnown = true
		}
	case "error":
		o.errorEvent(value(e, ocError))
	}
}

// addText adds a text part to the current step's answer, which replaces
// the answer of an earlier step.
func (o *opencodeStream) addText(f field) {
	if !o.stepText {
		o.help.text(o.answer.String())
		o.answer.Reset()
		o.answerOut = 0
		o.res.SkippedResult = false
		o.stepText = true
	}
	if o.answerOut > 0 || f.over {
		o.answerOut += int64(o.answer.Len()) + max(f.size-2, 0)
		o.answer.Reset()
		return
	}
	text := stringValue(f.raw)
	if o.answer.Len() > 0 {
		text = "\n" + text
	}
	if int64(o.answer.Len()+len(text)) > o.maxBytes {
		o.answerOut = int64(o.answer.Len() + len(text))
		o.answer.Reset()
		return
	}
	o.answer.WriteString(text)
}

func (o *opencodeStream) errorEvent(raw []byte) {
	o.failed = true
	o.res.IsError = true
	var oe opencodeError
	if len(raw) == 0 || json.Unmarshal(raw, &oe) != nil {
		o.res.ErrorMessage = "opencode reported an error"
		return
	}
	msg := oe.Data.Message
	if msg == "" {
		msg = oe.Name
	}
	if msg == "" {
		msg = "opencode reported an error"
	}
	status := int(jsonInt64(oe.Data.StatusCode))
	if status != 0 && !strings.Contains(msg, strconv.Itoa(status)) {
		msg = strconv.Itoa(status) + " " + msg
	}
	o.res.ErrorMessage = cutText(msg, maxErrorMessage)
	o.res.Transient, o.res.Permanent, o.res.Auth = false, false, false
	classifyStatus(o.res, status)
	switch {
	case o.res.Transient || o.res.Permanent:
	case authText(msg):
		markAuth(o.res)
	case oe.Data.IsRetryable || transientText(msg):
		o.res.Transient = true
	}
	if !o.res.Transient {
		return
	}
	h := make(http.Header, len(oe.Data.ResponseHeaders))
	for k, v := range oe.Data.ResponseHeaders {
		h.Set(k, v)
	}
	now := o.now()
	if _, at := retryAfter(h, now); !at.IsZero() {
		setReset(o.res, at, now)
	}
}

func (o *opencodeStream) raw(line []byte) { o.help.line(line) }

// ended reports whether the turn is over as far as cadence is concerned:
// opencode prints no closing event, and after an error it may retry for
// ever (see opencodeStream).
func (o *opencodeStream) ended() bool { return o.failed }

// skipped handles an event line too long to parse: a text part among them
// was part of the answer.
func (o *opencodeStream) skipped(e *eventScanner) {
	if stringValue(value(e, ocType)) == "text" {
		o.res.SkippedResult = true
	}
}

// opencodeNoSession is what opencode prints on stderr (in colour) when
// --session names a session it does not have, exiting 1 with no event.
const opencodeNoSession = "Session not found"

func (o *opencodeStream) finish(stderrTail string) {
	if !o.events && strings.Contains(stderrTail, opencodeNoSession) {
		o.res.SessionNotFound = true
		o.res.ErrorMessage = opencodeNoSession
	}
	o.res.Text = []byte(o.answer.String())
	o.res.TextBytes = int64(o.answer.Len())
	if o.answerOut > 0 {
		o.res.Text = nil
		o.res.TextTooLarge, o.res.TextBytes = true, o.answerOut
	}
	o.help.text(o.answer.String())
	if o.res.IsError {
		o.res.Text, o.res.TextBytes = nil, 0
	}
}
