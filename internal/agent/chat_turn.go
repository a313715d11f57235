package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Causes of a chat turn's cancellation, mapped to stop reasons.
var (
	errChatTimeout  = errors.New("chat turn timed out")
	errChatStuck    = errors.New("chat endpoint sent nothing for the idle timeout")
	errChatTooLarge = errors.New("chat response too large")
)

// chatTurn is one RunChat call: its deadlines, as a context cancelled with a
// cause, and the raw output copy.
type chatTurn struct {
	spec   ChatSpec
	url    string
	out    *outputCopy
	ctx    context.Context
	cancel context.CancelCauseFunc
	total  *time.Timer // nil without Timeout
	idle   *time.Timer // nil without IdleTimeout
}

// chatOutcome is one HTTP exchange's Result and what RunChat needs besides.
type chatOutcome struct {
	Result
	answered       bool // a 2xx answer with a choice came
	schemaRejected bool // a 400 that names response_format
}

func newChatTurn(ctx context.Context, spec ChatSpec, url string, out *outputCopy) *chatTurn {
	t := &chatTurn{spec: spec, url: url, out: out}
	t.ctx, t.cancel = context.WithCancelCause(ctx)
	if spec.Timeout > 0 {
		t.total = time.AfterFunc(spec.Timeout, func() { t.cancel(errChatTimeout) })
	}
	if spec.IdleTimeout > 0 {
		t.idle = time.AfterFunc(spec.IdleTimeout, func() { t.cancel(errChatStuck) })
	}
	return t
}

func (t *chatTurn) close() {
	if t.total != nil {
		t.total.Stop()
	}
	if t.idle != nil {
		t.idle.Stop()
	}
	t.cancel(nil)
	t.out.close()
}

// alive restarts the idle timer: bytes arrived.
func (t *chatTurn) alive() {
	if t.idle != nil {
		t.idle.Reset(t.spec.IdleTimeout)
	}
}

// send makes one request and reads its answer.
func (t *chatTurn) send(messages []ChatMessage, format json.RawMessage) chatOutcome {
	body, err := json.Marshal(chatRequest{Model: t.spec.Model, Messages: messages, ResponseFormat: format})
	if err != nil {
		return chatFailure(fmt.Sprintf("encode the chat request: %v", err), false)
	}
	fmt.Fprintf(outWriter{t.out}, "POST %s\n%s\n", t.url, body)
	req, err := http.NewRequestWithContext(t.ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return chatFailure(fmt.Sprintf("build the chat request: %v", err), false)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if t.spec.APIKeyEnv != "" {
		if key := lookupEnv(t.spec.Env, t.spec.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := t.spec.Client.Do(req)
	if err != nil {
		return t.interrupted(err)
	}
	defer resp.Body.Close()
	t.alive()
	fmt.Fprintf(outWriter{t.out}, "\nHTTP %s\n", resp.Status)
	raw, err := t.readBody(resp.Body)
	t.out.write(raw)
	t.out.write([]byte("\n"))
	if err != nil {
		o := t.interrupted(err)
		o.StdoutBytes = int64(len(raw))
		return o
	}
	o := classifyChat(resp, raw, time.Now())
	o.StdoutBytes = int64(len(raw))
	return o
}

// readBody reads the answer, restarting the idle timer on every read and
// stopping at MaxBytes.
func (t *chatTurn) readBody(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, readChunk)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			t.alive()
			if int64(buf.Len()+n) > t.spec.MaxBytes {
				buf.Write(chunk[:int(t.spec.MaxBytes)-buf.Len()])
				t.cancel(errChatTooLarge)
				return buf.Bytes(), errChatTooLarge
			}
			buf.Write(chunk[:n])
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return buf.Bytes(), err
		}
	}
}

// interrupted describes a request that ended without a complete answer:
// stopped by a deadline, by the caller, by size, or by the network.
func (t *chatTurn) interrupted(err error) chatOutcome {
	cause := context.Cause(t.ctx)
	var o chatOutcome
	switch {
	case errors.Is(err, errChatTooLarge) || errors.Is(cause, errChatTooLarge):
		o.Stop = StopTooLarge
	case errors.Is(cause, errChatTimeout):
		o.Stop = StopTimeout
	case errors.Is(cause, errChatStuck):
		o.Stop = StopStuck
	case cause != nil:
		o.Stop = StopInterrupted
	default:
		return chatFailure(fmt.Sprintf("chat request failed: %v", err), true)
	}
	o.IsError = true
	o.ErrorMessage = fmt.Sprintf("chat request stopped: %v", cause)
	if o.Stop == StopTooLarge {
		o.ErrorMessage = fmt.Sprintf("chat response larger than %d bytes", t.spec.MaxBytes)
	}
	fmt.Fprintf(outWriter{t.out}, "\n[cadence: %s]\n", o.ErrorMessage)
	return o
}

func chatFailure(msg string, transient bool) chatOutcome {
	var o chatOutcome
	o.IsError, o.ErrorMessage, o.Transient = true, msg, transient
	return o
}

// classifyChat reads a complete HTTP answer.
func classifyChat(resp *http.Response, raw []byte, now time.Time) chatOutcome {
	var o chatOutcome
	if resp.StatusCode/100 != 2 {
		o.IsError = true
		o.ErrorMessage = fmt.Sprintf("HTTP %s: %s", resp.Status, errorText(raw))
		classifyStatus(&o.Result, resp.StatusCode)
		if o.Transient {
			o.RetryAfter, o.ResetAt = retryAfter(resp.Header, now)
		}
		o.schemaRejected = resp.StatusCode == http.StatusBadRequest &&
			strings.Contains(strings.ToLower(string(raw)), "response_format")
		return o
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		o.IsError = true
		o.ErrorMessage = fmt.Sprintf("chat answer is not JSON: %v", err)
		return o
	}
	if len(cr.Choices) == 0 {
		o.IsError = true
		o.ErrorMessage = "chat answer has no choices"
		return o
	}
	c := cr.Choices[0]
	o.answered = true
	o.Text = []byte(c.Message.Content)
	o.Truncated = c.FinishReason == "length"
	o.Turns = 1
	o.InputTokens, o.OutputTokens = max(cr.Usage.PromptTokens, 0), max(cr.Usage.CompletionTokens, 0)
	o.CachedTokens = min(max(cr.Usage.PromptTokensDetails.CachedTokens, 0), o.InputTokens)
	return o
}

// errorText is the message of an OpenAI-style error body, or the body.
func errorText(raw []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	const limit = 500
	s := strings.TrimSpace(string(raw))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, time.Time) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, time.Time{}
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if !(secs > 0 && secs <= 7*24*3600) { // also rejects NaN
			return 0, time.Time{}
		}
		d := time.Duration(secs * float64(time.Second))
		return d, now.Add(d).UTC()
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now), at.UTC()
	}
	return 0, time.Time{}
}

// outWriter adapts an outputCopy to io.Writer for fmt.Fprintf.
type outWriter struct{ o *outputCopy }

func (w outWriter) Write(p []byte) (int, error) {
	w.o.write(p)
	return len(p), nil
}
