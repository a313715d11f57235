package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// model is what the simulated agent reports as its model.
const model = "cadence-sim"

// stream writes Claude Code stream-json events, one JSON object per line, in
// the shape `claude -p --output-format stream-json --verbose` prints. The
// first write error sticks and ends all further output.
type stream struct {
	w         io.Writer
	sessionID string
	started   time.Time
	written   int64
	msgs      int
	err       error
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

type message struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Role       string      `json:"role"`
	Model      string      `json:"model"`
	Content    []textBlock `json:"content"`
	StopReason *string     `json:"stop_reason"`
	Usage      usage       `json:"usage"`
}

type assistantEvent struct {
	Type            string  `json:"type"`
	Message         message `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
	Error           string  `json:"error,omitempty"`
}

type resultEvent struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	IsError        bool     `json:"is_error"`
	DurationMS     int64    `json:"duration_ms"`
	DurationAPIMS  int64    `json:"duration_api_ms"`
	NumTurns       int      `json:"num_turns"`
	Result         *string  `json:"result,omitempty"`
	SessionID      string   `json:"session_id"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          usage    `json:"usage"`
	APIErrorStatus *int     `json:"api_error_status,omitempty"`
	Errors         []string `json:"errors,omitempty"`
}

func (s *stream) emit(v any) {
	if s.err != nil {
		return
	}
	line, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode event: %w", err)
		return
	}
	n, err := s.w.Write(append(line, '\n'))
	s.written += int64(n)
	if err != nil {
		s.err = fmt.Errorf("write event: %w", err)
	}
}

func (s *stream) init(cwd string) {
	s.emit(map[string]any{
		"type": "system", "subtype": "init", "cwd": cwd, "session_id": s.sessionID,
		"tools": []string{}, "mcp_servers": []string{}, "model": model,
		"permissionMode": "default", "apiKeySource": "none",
	})
}

// assistant emits one assistant message holding text; errKind marks a
// synthetic error message such as "rate_limit".
func (s *stream) assistant(text, errKind string, u usage) {
	s.msgs++
	m := model
	if errKind != "" {
		m = "<synthetic>"
	}
	s.emit(assistantEvent{
		Type: "assistant",
		Message: message{
			ID: fmt.Sprintf("msg_sim_%d", s.msgs), Type: "message", Role: "assistant",
			Model: m, Content: []textBlock{{Type: "text", Text: text}}, Usage: u,
		},
		SessionID: s.sessionID,
		Error:     errKind,
	})
}

func (s *stream) rateLimitRejected(resetsAt time.Time) {
	s.emit(map[string]any{
		"type": "rate_limit_event",
		"rate_limit_info": map[string]any{
			"status": "rejected", "resetsAt": resetsAt.Unix(), "rateLimitType": "five_hour",
			"isUsingOverage": false,
		},
		"session_id": s.sessionID,
	})
}

// result emits the final event. status is the api_error_status (0: none).
func (s *stream) result(ev resultEvent, status int) {
	ev.Type = "result"
	if ev.Subtype == "" {
		ev.Subtype = "success"
	}
	ev.SessionID = s.sessionID
	ev.DurationMS = time.Since(s.started).Milliseconds()
	ev.DurationAPIMS = ev.DurationMS
	if status != 0 {
		ev.APIErrorStatus = &status
	}
	s.emit(ev)
}
