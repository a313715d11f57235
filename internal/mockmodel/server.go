package mockmodel

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxBody bounds a request body the server reads; CLI requests with a long
// conversation and tool schemas stay well under it.
const maxBody = 64 << 20

// Server is a scripted model API on a loopback port. It is safe for
// concurrent use.
type Server struct {
	// URL is the server's base URL, "http://127.0.0.1:PORT", without a
	// trailing slash and without an API version: Anthropic and Gemini
	// clients take it as is, OpenAI clients want URL + "/v1".
	URL string

	srv  *httptest.Server
	done chan struct{} // closed by Close: ends every Delay early
	once sync.Once

	mu       sync.Mutex
	script   []Reply
	next     int // index in script of the next turn's reply
	calls    int // tool calls answered so far, for their ids
	requests []Request
	seen     chan struct{} // closed and replaced whenever a request is recorded
}

// Start starts a Server on 127.0.0.1 that answers turns with replies, in
// order, and closes it when the test ends. Once the script is used up, the
// last reply is repeated, so a single RateLimited reply means "always rate
// limited"; with no replies at all, a turn gets a 500.
func Start(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{
		done:   make(chan struct{}),
		script: append([]Reply(nil), replies...),
		seen:   make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server: delayed answers end at once and open connections
// are closed. It is called by the test's cleanup and may be called earlier.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue appends replies to the script, for tests that decide the next
// answers after seeing the earlier requests.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Turns returns the requests that consumed a scripted reply, in order.
func (s *Server) Turns() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Turn {
			out = append(out, r)
		}
	}
	return out
}

// WaitTurns blocks until at least n turns have been received, and returns
// them; it fails the test when timeout passes first. It lets a test act
// while a client waits on a delayed answer, without sleeping.
func (s *Server) WaitTurns(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		seen := s.seen
		s.mu.Unlock()
		if turns := s.Turns(); len(turns) >= n {
			return turns
		}
		select {
		case <-seen:
		case <-deadline.C:
			t.Fatalf("mockmodel: got %d turns, want %d within %v", len(s.Turns()), n, timeout)
			return nil
		}
	}
}

// route says which API a path belongs to.
func route(path string) API {
	switch {
	case strings.HasSuffix(path, "/messages"), strings.HasSuffix(path, "/messages/count_tokens"):
		return Anthropic
	case strings.HasSuffix(path, "/responses"):
		return Responses
	case strings.HasSuffix(path, "/chat/completions"):
		return Chat
	}
	if _, _, ok := geminiPath(path); ok {
		return Gemini
	}
	return Unknown
}

// serveHTTP records the request, picks its reply and answers it in the
// request's API.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusBadRequest)
		return
	}
	rec := newRequest(r, body, time.Now())
	rec.API = route(rec.Path)
	rec.Stream = wantsStream(rec)
	rec.Kind = classify(rec)
	rec.Turn = rec.Kind == KindTurn
	rec.Reply = s.record(&rec)

	if !s.wait(r, rec.Reply.Delay) {
		return
	}
	switch rec.API {
	case Anthropic:
		serveAnthropic(w, rec)
	case Responses:
		serveResponses(w, rec)
	case Gemini:
		serveGemini(w, rec)
	case Chat:
		serveChat(w, rec)
	default:
		serveUnknown(w, rec)
	}
}

// record appends rec to the log, taking the next scripted reply when rec is
// a turn, and returns the reply to send.
func (s *Server) record(rec *Request) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := sideReply(*rec)
	if rec.Turn {
		reply = s.take()
	}
	if reply.Tool != nil && !reply.isError() {
		s.calls++
		use, err := resolveTool(*rec, *reply.Tool, fmt.Sprintf("call_mock_%04d", s.calls))
		if err != nil {
			reply = Reply{Status: http.StatusBadRequest, ErrorMessage: err.Error()}
		} else {
			rec.use, rec.ToolID, rec.ToolName = &use, use.ID, use.Name
		}
	}
	rec.Reply = reply
	s.requests = append(s.requests, *rec)
	close(s.seen)
	s.seen = make(chan struct{})
	return reply
}

// take returns the next scripted reply; s.mu must be held.
func (s *Server) take() Reply {
	switch {
	case len(s.script) == 0:
		return Reply{Status: http.StatusInternalServerError, ErrorMessage: "mockmodel: no reply scripted"}
	case s.next < len(s.script):
		s.next++
		return s.script[s.next-1]
	default:
		return s.script[len(s.script)-1]
	}
}

// wait waits d, and reports false when the client went away or the server
// closed first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// serveUnknown answers a path the server does not implement with a 404, so
// the client's error says which path it tried (the request is recorded).
func serveUnknown(w http.ResponseWriter, rec Request) {
	if rec.Method == http.MethodGet && strings.HasSuffix(rec.Path, "/models") {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"message": "mockmodel: no such endpoint: " + rec.Method + " " + rec.Path,
		"type":    "not_found_error",
	}})
}
