package agent

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cadence-dev/cadence/internal/handoff/extract"
)

// claudeStream folds Claude Code stream-json events into a Result. Agent
// output is untrusted: a line that is not a JSON object, or an event whose
// type, session or error flag has the wrong type, is ignored for protocol
// purposes (it is still in the raw output). Lines are parsed as they stream
// (eventScanner): the bulk of a long transcript (tool inputs and results)
// is skipped, and what is kept (the final answer, the assistant text) is
// bounded by Spec.MaxBytes.
type claudeStream struct {
	res      *Result
	help     *helpScanner
	now      func() time.Time
	loc      *time.Location // the zone of the CLI's clock times ("resets 5am")
	maxBytes int64

	assistant tailText // the latest assistant text blocks, joined, at most maxBytes
	// The final assistant message so far: its id, and its text blocks
	// joined (at most maxBytes), for a result that holds only its first
	// chunk.
	messageID   string
	messageText tailText
	gotResult   bool
	result      string
}

// The fields of a Claude Code event that cadence reads, as capture indices.
const (
	clType = iota
	clSubtype
	clSessionID
	clError
	clIsError
	clResult
	clErrors
	clCost
	clTurns
	clUsage
	clAPIStatus
	clStructured
	clRateLimit
	clBlockType
	clBlockText
	clMessageID
)

func (c *claudeStream) captures() []capture {
	return []capture{
		clType:       {path: []string{"type"}, limit: 256},
		clSubtype:    {path: []string{"subtype"}, limit: 256},
		clSessionID:  {path: []string{"session_id"}, limit: 1 << 10},
		clError:      {path: []string{"error"}, limit: 1 << 10},
		clIsError:    {path: []string{"is_error"}, limit: 16},
		clResult:     answerCapture([]string{"result"}, c.maxBytes),
		clErrors:     {path: []string{"errors"}, limit: 64 << 10},
		clCost:       {path: []string{"total_cost_usd"}, limit: 64},
		clTurns:      {path: []string{"num_turns"}, limit: 64},
		clUsage:      {path: []string{"usage"}, limit: 64 << 10},
		clAPIStatus:  {path: []string{"api_error_status"}, limit: 64},
		clStructured: {path: []string{"structured_output"}, limit: int(min(c.maxBytes, 1<<31-2)) + 1},
		clRateLimit:  {path: []string{"rate_limit_info"}, limit: 64 << 10},
		clBlockType:  {path: []string{"message", "content", "*", "type"}, limit: 64},
		clBlockText:  answerCapture([]string{"message", "content", "*", "text"}, c.maxBytes),
		clMessageID:  {path: []string{"message", "id"}, limit: 256},
	}
}

// claudeEvent is an event's header: what it is and which session.
type claudeEvent struct {
	typ, subtype, sessionID string
	isError                 bool
}

// header reads the fields that say what an event is; ok is false when one
// of them has the wrong type (then the line is not trusted as an event).
func claudeHeader(e *eventScanner) (ev claudeEvent, ok bool) {
	ok = true
	text := func(i int) string {
		f, found := e.get(i)
		if !found {
			return ""
		}
		s, good := stringField(f.raw)
		ok = ok && good && !f.over
		return s
	}
	ev.typ, ev.subtype, ev.sessionID = text(clType), text(clSubtype), text(clSessionID)
	if f, found := e.get(clIsError); found {
		switch string(f.raw) {
		case "true":
			ev.isError = true
		case "false", "null":
		default:
			ok = false
		}
	}
	return ev, ok
}

type claudeUsage struct {
	InputTokens         json.RawMessage `json:"input_tokens"`
	CacheCreationTokens json.RawMessage `json:"cache_creation_input_tokens"`
	CacheReadTokens     json.RawMessage `json:"cache_read_input_tokens"`
	OutputTokens        json.RawMessage `json:"output_tokens"`
}

type claudeRateLimitInfo struct {
	Status   string          `json:"status"`
	ResetsAt json.RawMessage `json:"resetsAt"`
}

// noConversation is what Claude Code prints when --resume names a session it
// does not have.
const noConversation = "No conversation found"

func newClaudeStream(res *Result, help *helpScanner, now func() time.Time, maxBytes int64) *claudeStream {
	return &claudeStream{res: res, help: help, now: now, loc: time.Local, maxBytes: maxBytes,
		assistant: newTailText(maxBytes), messageText: newTailText(maxBytes)}
}

// event handles one line that is a JSON object; line is its beginning.
func (c *claudeStream) event(e *eventScanner, line []byte) {
	ev, ok := claudeHeader(e)
	if !ok || ev.typ == "" {
		// Not an event: a JSON object the agent printed, such as the
		// context after a raw help marker, or an unreadable one.
		c.raw(line)
		return
	}
	switch ev.typ {
	case "system":
		if ev.subtype == "init" {
			// Every turn starts with one: read again each time.
			takeSessionID(c.res, ev.sessionID)
		}
		// api_retry and other system events only show the agent is alive;
		// any output already resets the idle timer.
	case "assistant":
		c.assistantEvent(e)
	case "rate_limit_event":
		c.rateLimitEvent(e)
	case "result":
		c.resultEvent(e, ev)
	}
	// "user" events carry tool results, usually the bulk of a transcript;
	// nothing in them concerns cadence.
}

// ended reports whether the result event, the last of a `claude -p` run,
// was seen.
func (c *claudeStream) ended() bool { return c.gotResult }

// raw handles a line that is not a protocol event: agents print warnings
// and errors as plain text too.
func (c *claudeStream) raw(line []byte) {
	c.help.line(line)
	if bytes.Contains(line, []byte(noConversation)) {
		c.res.SessionNotFound = true
		if c.res.ErrorMessage == "" {
			c.res.ErrorMessage = string(bytes.TrimSpace(line))
		}
	}
}

// skipped handles an event line too long to parse. A result event among
// them held the final answer, now lost; a later result event would replace
// it.
func (c *claudeStream) skipped(e *eventScanner) {
	if f, ok := e.get(clType); ok && stringValue(f.raw) == "result" {
		c.res.SkippedResult = true
	}
}

func (c *claudeStream) assistantEvent(e *eventScanner) {
	types := map[int]string{}
	for _, f := range e.all(clBlockType) {
		types[f.elem] = stringValue(f.raw)
	}
	// Each content block comes in an event of its own; the blocks of one
	// message share its id. A message without an id stands alone.
	id := stringValue(value(e, clMessageID))
	if id == "" || id != c.messageID {
		c.messageID, c.messageText = id, newTailText(c.maxBytes)
	}
	var first string
	for _, f := range e.all(clBlockText) {
		if types[f.elem] != "text" || f.over {
			continue
		}
		t, ok := stringField(f.raw)
		if !ok {
			continue
		}
		if first == "" {
			first = t
		}
		c.addAssistant(t)
		c.messageText.add(t)
		c.help.text(t)
	}
	kind := stringValue(value(e, clError))
	if kind == "" {
		return
	}
	switch kind {
	case "authentication_failed", "oauth_org_not_allowed":
		markAuth(c.res)
	case "billing_error":
		c.res.Permanent = true
	case "rate_limit", "overloaded", "server_error":
		c.res.Transient = true
	}
	if c.res.ErrorMessage == "" {
		c.res.ErrorMessage = kind
		if first != "" {
			c.res.ErrorMessage = cutText(first, maxErrorMessage)
		}
	}
}

// value returns the raw JSON of the first capture i of an event, or nil
// when there is none or it was cut at its limit.
func value(e *eventScanner, i int) []byte {
	f, ok := e.get(i)
	if !ok || f.over {
		return nil
	}
	return f.raw
}

// maxErrorMessage bounds an error message taken from the agent's text.
const maxErrorMessage = 4 << 10

// cutText returns at most n bytes of s, cut on a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// addAssistant keeps an assistant text block for the fallback answer (the
// text of a stream that ended without a result event).
func (c *claudeStream) addAssistant(text string) { c.assistant.add(text) }

func (c *claudeStream) rateLimitEvent(e *eventScanner) {
	var info claudeRateLimitInfo
	if json.Unmarshal(value(e, clRateLimit), &info) != nil || info.Status != "rejected" {
		return
	}
	// The subscription's limit (five_hour, seven_day …), not a passing
	// rate limit of the API.
	c.res.Transient, c.res.UsageLimit = true, true
	if c.res.ErrorMessage == "" {
		c.res.ErrorMessage = "rate limit rejected"
	}
	if secs, ok := jsonNumber(info.ResetsAt); ok {
		setReset(c.res, unixReset(secs), c.now())
	}
}

func (c *claudeStream) resultEvent(e *eventScanner, ev claudeEvent) {
	c.gotResult = true
	c.res.SkippedResult = false
	c.res.IsError = ev.isError
	takeSessionID(c.res, ev.sessionID)
	if v, ok := jsonNumber(value(e, clCost)); ok && v >= 0 {
		c.res.CostUSD, c.res.CostKnown = v, true
	}
	if v, ok := jsonNumber(value(e, clTurns)); ok && v >= 0 && v <= math.MaxInt32 {
		c.res.Turns = int(v)
	}
	var usage claudeUsage
	if u := value(e, clUsage); len(u) > 0 && json.Unmarshal(u, &usage) == nil {
		// The cache is reported apart from input_tokens: all three are
		// input.
		c.res.CachedTokens = jsonInt64(usage.CacheReadTokens)
		c.res.InputTokens = jsonInt64(usage.InputTokens) + jsonInt64(usage.CacheCreationTokens) + c.res.CachedTokens
		c.res.OutputTokens = jsonInt64(usage.OutputTokens)
	}
	f, ok := e.get(clStructured)
	takeStructured(c.res, f, ok, c.maxBytes)
	c.result = c.answer(e)
	c.help.text(c.result)

	message := c.result
	if errs := jsonStrings(value(e, clErrors)); len(errs) > 0 && (message == "" || !ev.isError) {
		message = strings.Join(errs, "; ")
	}
	if strings.Contains(message, noConversation) {
		c.res.SessionNotFound = true
	}
	if !ev.isError {
		// The agent recovered (it retries rate limits and overloads
		// itself): earlier error events no longer describe the attempt.
		c.res.Transient, c.res.Permanent, c.res.Auth, c.res.UsageLimit = false, false, false, false
		c.res.ErrorMessage, c.res.RetryAfter, c.res.ResetAt = "", 0, time.Time{}
		// Unless the "answer" is the API's error itself, with exit 0
		// and subtype success (anthropics/claude-code#79500).
		if len(c.res.StructuredOutput) == 0 && claudeNotice(c.res, c.result, c.now(), c.loc) {
			c.res.IsError = true
			c.res.ErrorMessage = strings.TrimSpace(c.result)
		}
		return
	}
	c.res.ErrorMessage = cutText(message, maxErrorMessage)
	status, ok := jsonNumber(value(e, clAPIStatus))
	if !ok {
		status = float64(apiErrorStatus(message))
	}
	classifyClaudeStatus(c.res, int(status))
	// The text says more than the status: a usage limit and its reset,
	// a login to renew.
	var said Result
	if claudeNotice(&said, message, c.now(), c.loc) {
		c.res.Transient = c.res.Transient || said.Transient
		c.res.UsageLimit = c.res.UsageLimit || said.UsageLimit
		if said.Auth {
			markAuth(c.res)
		}
		if c.res.ResetAt.IsZero() {
			setReset(c.res, said.ResetAt, c.now())
		}
	}
	switch {
	case c.res.Permanent || c.res.Transient:
	case authText(message):
		markAuth(c.res)
	case transientText(message):
		c.res.Transient = true
	}
}

// answer decodes the result event's final answer (see keepAnswer).
func (c *claudeStream) answer(e *eventScanner) string {
	c.res.TextTooLarge, c.res.TextBytes = false, 0
	f, ok := e.get(clResult)
	if !ok {
		return ""
	}
	return keepAnswer(c.res, f, c.maxBytes)
}

// keepAnswer decodes a captured JSON string that is a final answer, unless
// it is over maxBytes: then it is dropped, res.TextTooLarge is set, and
// res.TextBytes says how long it is (its raw length, when it was too long
// even to capture).
func keepAnswer(res *Result, f field, maxBytes int64) string {
	if f.over || minDecodedLen(f.raw) > maxBytes {
		res.TextTooLarge, res.TextBytes = true, f.size-2
		return ""
	}
	s := stringValue(f.raw)
	res.TextBytes = int64(len(s))
	if int64(len(s)) > maxBytes {
		res.TextTooLarge = true
		return ""
	}
	return s
}

// minDecodedLen is a lower bound on the length of a raw JSON string once
// decoded: an escape takes at most six bytes for one. It lets an answer
// far over the limit be refused without decoding it.
func minDecodedLen(raw []byte) int64 {
	n := int64(max(len(raw)-2, 0))
	return n - 5*int64(bytes.Count(raw, []byte{'\\'}))
}

// finish sets the candidate text once the stream has ended.
func (c *claudeStream) finish(string) {
	if c.gotResult {
		c.res.Text = []byte(c.result)
		if c.answerInMessage() {
			c.res.Text, c.res.AnswerFromMessage = c.messageText.bytes(), true
			c.res.TextBytes = int64(len(c.res.Text))
		}
		return
	}
	c.res.Text = c.assistant.bytes()
	c.res.TextBytes = int64(len(c.res.Text))
}

// answerInMessage reports whether the answer is to be taken from the
// final assistant message rather than result.result: a turn that did not
// fail, with no structured output, whose result is the start of the final
// message (its first chunk, anthropics/claude-code#78686) and holds no
// JSON object or array, while the whole message does. A result that says
// something else (a help request's "Waiting for guidance.") stays the
// answer.
func (c *claudeStream) answerInMessage() bool {
	if c.res.IsError || c.res.TextTooLarge || len(c.res.StructuredOutput) > 0 || c.messageText.size == 0 {
		return false
	}
	message := c.messageText.bytes()
	return bytes.HasPrefix(bytes.TrimSpace(message), []byte(strings.TrimSpace(c.result))) &&
		!hasJSONValue([]byte(c.result), c.maxBytes) && hasJSONValue(message, c.maxBytes)
}

// hasJSONValue reports whether text holds a complete JSON object or
// array, as the handoff pipeline's extractor finds them.
func hasJSONValue(text []byte, maxBytes int64) bool {
	if !bytes.ContainsAny(text, "{[") {
		return false
	}
	values, _, _ := extract.Scan(text, extract.Options{MaxBytes: maxBytes})
	return len(values) > 0
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonStrings reads an array of strings, skipping elements of other types.
func jsonStrings(raw json.RawMessage) []string {
	var items []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if s := jsonString(it); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// jsonNumber reads a number, or a string holding one.
func jsonNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	if s := jsonString(raw); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	return 0, false
}

func jsonInt64(raw json.RawMessage) int64 {
	f, ok := jsonNumber(raw)
	if !ok || f < 0 || f > math.MaxInt64/2 {
		return 0
	}
	return int64(f)
}

// takeStructured sets res's structured answer from a result event's field
// (Claude Code's structured_output, Qwen Code's structured_result, under
// native_schema): kept when it is valid JSON of at most maxBytes, marked
// too large past that, and nothing when the field is absent or null.
func takeStructured(res *Result, f field, ok bool, maxBytes int64) {
	res.StructuredOutput = nil
	if !ok || string(f.raw) == "null" {
		return
	}
	switch {
	case f.over || f.size > maxBytes:
		res.TextTooLarge, res.TextBytes = true, f.size
	case json.Valid(f.raw):
		res.StructuredOutput = append(json.RawMessage(nil), f.raw...)
	}
}
