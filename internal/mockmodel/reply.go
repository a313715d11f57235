package mockmodel

import (
	"net/http"
	"time"
)

// Reply is one scripted model answer.
//
// The zero Status means 200: the model answers Text, streamed in small
// chunks when the client asked for a stream, or calls Tool. Any other Status makes the
// server answer with that status and an error body in the wire format of
// the API that was called (Anthropic error JSON, OpenAI error JSON, Google
// RPC status), with RetryAfter, when set, in a retry-after header.
type Reply struct {
	// Text is the answer's text when Status is 0 or 200.
	Text string
	// Tool, when set, makes the answer a call of this tool instead of
	// text (see ToolCall); Text is then ignored.
	Tool *ToolCall
	// Status is the HTTP status to answer with; 0 means 200.
	Status int
	// RetryAfter is sent verbatim as the retry-after header (seconds or an
	// HTTP date) of an error answer.
	RetryAfter string
	// Delay is how long the server waits before it sends anything. The wait
	// ends early when the client goes away or the server is closed.
	Delay time.Duration
	// ErrorType is the provider's error type of an error answer, such as
	// "rate_limit_error" or "overloaded_error" (Anthropic),
	// "rate_limit_exceeded" (OpenAI) or "RESOURCE_EXHAUSTED" (Gemini). When
	// empty it is derived from Status.
	ErrorType string
	// ErrorMessage is the human-readable message of an error answer. When
	// empty it is derived from Status.
	ErrorMessage string
}

// Text returns a Reply that answers text.
func Text(text string) Reply { return Reply{Text: text} }

// RateLimited returns a 429 Reply that asks the client to wait retryAfter
// (in seconds, as the header carries it).
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: retryAfter}
}

// Overloaded returns Anthropic's 529 "overloaded_error" Reply. Other APIs
// answer a 529 with their own error shape; use Status 503 for Gemini's
// UNAVAILABLE.
func Overloaded() Reply { return Reply{Status: 529} }

// status is the HTTP status the reply is answered with.
func (r Reply) status() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// isError reports whether the reply is an error answer.
func (r Reply) isError() bool { return r.status() >= 400 }

// message is the error message, derived from the status when not set.
func (r Reply) message() string {
	if r.ErrorMessage != "" {
		return r.ErrorMessage
	}
	switch r.status() {
	case 529:
		return "Overloaded"
	case http.StatusTooManyRequests:
		return "Rate limit exceeded; retry later."
	case http.StatusUnauthorized:
		return "invalid API key"
	}
	if t := http.StatusText(r.status()); t != "" {
		return t
	}
	return "error"
}
