package agent

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// claudeStream folds Claude Code stream-json events into a Result. Agent
// output is untrusted: a line that is not a JSON object, or an event whose
// fields have unexpected types, is ignored for protocol purposes (it is still
// in the raw output). Each line is at most Spec.MaxBytes long, and
// encoding/json bounds nesting depth, so no single event can exhaust memory
// or the stack.
type claudeStream struct {
	res  *Result
	help *helpScanner
	now  func() time.Time

	assistant [][]byte // assistant text blocks, in order
	gotResult bool
	result    string
}

// claudeEvent holds the fields cadence reads from any event. Type-dependent
// fields are decoded leniently (json.RawMessage) so that one odd field does
// not make the whole event unreadable.
type claudeEvent struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	SessionID        string          `json:"session_id"`
	Message          json.RawMessage `json:"message"`
	Error            json.RawMessage `json:"error"`
	IsError          bool            `json:"is_error"`
	Result           json.RawMessage `json:"result"`
	Errors           json.RawMessage `json:"errors"`
	TotalCostUSD     json.RawMessage `json:"total_cost_usd"`
	NumTurns         json.RawMessage `json:"num_turns"`
	Usage            json.RawMessage `json:"usage"`
	APIErrorStatus   json.RawMessage `json:"api_error_status"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	RateLimitInfo    json.RawMessage `json:"rate_limit_info"`
}

type claudeMessage struct {
	Content []json.RawMessage `json:"content"`
}

// claudeBlock is one content block; blocks are decoded one by one so that a
// malformed block does not hide the others.
type claudeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type claudeUsage struct {
	InputTokens  json.RawMessage `json:"input_tokens"`
	OutputTokens json.RawMessage `json:"output_tokens"`
}

type claudeRateLimitInfo struct {
	Status   string          `json:"status"`
	ResetsAt json.RawMessage `json:"resetsAt"`
}

// noConversation is what Claude Code prints when --resume names a session it
// does not have.
const noConversation = "No conversation found"

func newClaudeStream(res *Result, help *helpScanner, now func() time.Time) *claudeStream {
	return &claudeStream{res: res, help: help, now: now}
}

// line handles one stdout line (without its newline).
func (c *claudeStream) line(line []byte) {
	trimmed := bytes.TrimSpace(line)
	var ev claudeEvent
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &ev) != nil {
		c.rawLine(string(line))
		return
	}
	switch ev.Type {
	case "":
		// Not an event: a JSON object the agent printed, such as the
		// context after a raw help marker.
		c.rawLine(string(line))
	case "system":
		if ev.Subtype == "init" && c.res.SessionID == "" {
			c.res.SessionID = ev.SessionID
		}
		// api_retry and other system events only show the agent is alive;
		// any output already resets the idle timer.
	case "assistant":
		c.assistantEvent(&ev)
	case "rate_limit_event":
		c.rateLimitEvent(&ev)
	case "result":
		c.resultEvent(&ev)
	}
}

// rawLine handles a line that is not a protocol event: agents print warnings
// and errors as plain text too.
func (c *claudeStream) rawLine(line string) {
	c.help.line(line)
	if strings.Contains(line, noConversation) {
		c.res.SessionNotFound = true
		if c.res.ErrorMessage == "" {
			c.res.ErrorMessage = strings.TrimSpace(line)
		}
	}
}

func (c *claudeStream) assistantEvent(ev *claudeEvent) {
	var msg claudeMessage
	var first string
	if len(ev.Message) > 0 && json.Unmarshal(ev.Message, &msg) == nil {
		for _, raw := range msg.Content {
			var block claudeBlock
			if json.Unmarshal(raw, &block) != nil || block.Type != "text" {
				continue
			}
			if first == "" {
				first = block.Text
			}
			c.assistant = append(c.assistant, []byte(block.Text))
			c.help.text(block.Text)
		}
	}
	kind := jsonString(ev.Error)
	if kind == "" {
		return
	}
	switch kind {
	case "authentication_failed", "billing_error":
		c.res.Permanent = true
	case "rate_limit", "overloaded", "server_error":
		c.res.Transient = true
	}
	if c.res.ErrorMessage == "" {
		c.res.ErrorMessage = kind
		if first != "" {
			c.res.ErrorMessage = first
		}
	}
}

func (c *claudeStream) rateLimitEvent(ev *claudeEvent) {
	var info claudeRateLimitInfo
	if json.Unmarshal(ev.RateLimitInfo, &info) != nil || info.Status != "rejected" {
		return
	}
	c.res.Transient = true
	if c.res.ErrorMessage == "" {
		c.res.ErrorMessage = "rate limit rejected"
	}
	secs, ok := jsonNumber(info.ResetsAt)
	if !ok || secs <= 0 {
		return
	}
	if secs > 1e12 { // milliseconds, not seconds
		secs /= 1000
	}
	if secs > math.MaxInt32*4 { // far beyond any plausible reset time
		return
	}
	whole, frac := math.Modf(secs)
	reset := time.Unix(int64(whole), int64(frac*1e9)).UTC()
	c.res.ResetAt = reset
	if wait := reset.Sub(c.now()); wait > c.res.RetryAfter {
		c.res.RetryAfter = wait
	}
}

func (c *claudeStream) resultEvent(ev *claudeEvent) {
	c.gotResult = true
	c.result = jsonString(ev.Result)
	c.res.IsError = ev.IsError
	if c.res.SessionID == "" {
		c.res.SessionID = ev.SessionID
	}
	if v, ok := jsonNumber(ev.TotalCostUSD); ok && v >= 0 {
		c.res.CostUSD = v
	}
	if v, ok := jsonNumber(ev.NumTurns); ok && v >= 0 && v <= math.MaxInt32 {
		c.res.Turns = int(v)
	}
	var usage claudeUsage
	if len(ev.Usage) > 0 && json.Unmarshal(ev.Usage, &usage) == nil {
		c.res.InputTokens = jsonInt64(usage.InputTokens)
		c.res.OutputTokens = jsonInt64(usage.OutputTokens)
	}
	if len(ev.StructuredOutput) > 0 && !bytes.Equal(ev.StructuredOutput, []byte("null")) {
		c.res.StructuredOutput = append(json.RawMessage(nil), ev.StructuredOutput...)
	}
	c.help.text(c.result)

	message := c.result
	if errs := jsonStrings(ev.Errors); len(errs) > 0 && (message == "" || !ev.IsError) {
		message = strings.Join(errs, "; ")
	}
	if strings.Contains(message, noConversation) {
		c.res.SessionNotFound = true
	}
	if !ev.IsError {
		// The agent recovered (it retries rate limits and overloads
		// itself): earlier error events no longer describe the attempt.
		c.res.Transient, c.res.Permanent = false, false
		c.res.ErrorMessage, c.res.RetryAfter, c.res.ResetAt = "", 0, time.Time{}
		return
	}
	c.res.ErrorMessage = message
	status, ok := jsonNumber(ev.APIErrorStatus)
	if !ok {
		status = float64(apiErrorStatus(message))
	}
	classifyStatus(c.res, int(status))
	if !c.res.Permanent && !c.res.Transient && transientText(message) {
		c.res.Transient = true
	}
}

// finish sets the candidate text once the stream has ended.
func (c *claudeStream) finish(string) {
	if c.gotResult {
		c.res.Text = []byte(c.result)
		return
	}
	c.res.Text = bytes.Join(c.assistant, []byte("\n"))
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
	if len(raw) == 0 {
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
