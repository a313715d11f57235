package agent

import (
	"os"
	"strings"
	"testing"
)

// TestClaudeAnswerFromFinalMessage: when result.result holds only the
// first chunk of the final answer (anthropics/claude-code#78686) and no
// JSON handoff, while the final assistant message does, the answer is
// taken from the message and the result says so.
func TestClaudeAnswerFromFinalMessage(t *testing.T) {
	data, err := os.ReadFile("testdata/claude_result_first_chunk.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := feedSpec(t, Spec{Protocol: ProtocolClaudeStream}, data, nil)
	want := "All tests pass. Here is the handoff:\n{\"tasks\": [\"add cart\", \"add checkout\"], \"tests\": \"pass\"}"
	if string(r.Text) != want || !r.AnswerFromMessage {
		t.Errorf("Text %q from message %v, want %q from the final message", r.Text, r.AnswerFromMessage, want)
	}

	lines := func(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	assistant := func(id, text string) string {
		return `{"type":"assistant","message":{"id":"` + id + `","content":[{"type":"text","text":` + quote(text) + `}]}}`
	}
	result := func(text string, isError bool) string {
		e := "false"
		if isError {
			e = "true"
		}
		return `{"type":"result","subtype":"success","is_error":` + e + `,"result":` + quote(text) + `}`
	}
	tests := []struct {
		name, stream, want string
		fromMessage        bool
	}{
		{"the result holds the handoff", string(lines(assistant("m1", `{"a": 1}`), assistant("m2", `done {"a": 2}`), result(`done {"a": 2}`, false))),
			`done {"a": 2}`, false},
		{"a result cut inside the handoff", string(lines(assistant("m1", `{"a": 1}`), result(`{"a": 1`, false))),
			`{"a": 1}`, true},
		{"a broken handoff everywhere stays the result's", string(lines(assistant("m1", `{"a": 1`), result(`{"a": 1`, false))),
			`{"a": 1`, false},
		{"a message that does not start with the result", string(lines(assistant("m1", `Asking: {"q": 1}`), result("Waiting for guidance.", false))),
			"Waiting for guidance.", false},
		{"structured output wins", string(lines(assistant("m1", `{"a": 1}`),
			`{"type":"result","subtype":"success","is_error":false,"result":"ok","structured_output":{"b":2}}`)), "ok", false},
		{"only an earlier message has JSON", string(lines(assistant("m1", `{"a": 1}`), assistant("m2", "Done."), result("Done.", false))),
			"Done.", false},
		{"a failed turn keeps its error text", string(lines(assistant("m1", `{"a": 1}`), result("the model refused", true))),
			"the model refused", false},
		{"blocks of the final message are joined", string(lines(assistant("m1", "Result:"), assistant("m1", `{"a": 3}`), result("Result:", false))),
			"Result:\n{\"a\": 3}", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feedSpec(t, Spec{Protocol: ProtocolClaudeStream}, []byte(tt.stream), nil)
			if string(r.Text) != tt.want || r.AnswerFromMessage != tt.fromMessage {
				t.Errorf("Text %q from message %v, want %q %v", r.Text, r.AnswerFromMessage, tt.want, tt.fromMessage)
			}
		})
	}
}

// TestSessionIDLastWins: `claude --resume` can hand back a new session id
// (anthropics/claude-code#8069, #10806); the id is read again from every
// turn, the last one wins, and OnSession hears of each change. An id that
// is not a plain token never replaces a good one.
func TestSessionIDLastWins(t *testing.T) {
	tests := []struct {
		name     string
		proto    Protocol
		out      string
		want     string
		calls    []string
		rejected bool
	}{
		{"claude: the result names a new id", ProtocolClaudeStream,
			`{"type":"system","subtype":"init","session_id":"old-1"}` + "\n" + `{"type":"result","is_error":false,"result":"x","session_id":"new-2"}`,
			"new-2", []string{"old-1", "new-2"}, false},
		{"claude: a second init", ProtocolClaudeStream,
			`{"type":"system","subtype":"init","session_id":"a"}` + "\n" + `{"type":"system","subtype":"init","session_id":"b"}` + "\n" + `{"type":"result","is_error":false,"result":"x","session_id":"b"}`,
			"b", []string{"a", "b"}, false},
		{"claude: a bad id later is not used", ProtocolClaudeStream,
			`{"type":"system","subtype":"init","session_id":"good"}` + "\n" + `{"type":"result","is_error":false,"result":"x","session_id":"--yolo"}`,
			"good", []string{"good"}, true},
		{"codex: a second thread", ProtocolCodexJSONL,
			`{"type":"thread.started","thread_id":"t1"}` + "\n" + `{"type":"thread.started","thread_id":"t2"}`,
			"t2", []string{"t1", "t2"}, false},
		{"gemini: a second init", ProtocolGeminiStream,
			`{"type":"init","session_id":"g1"}` + "\n" + `{"type":"init","session_id":"g2"}`,
			"g2", []string{"g1", "g2"}, false},
		{"the same id again is no change", ProtocolGeminiStream,
			`{"type":"init","session_id":"g1"}` + "\n" + `{"type":"init","session_id":"g1"}`,
			"g1", []string{"g1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			spec := Spec{Protocol: tt.proto, OnSession: func(id string) { got = append(got, id) }}
			r := feedSpec(t, spec, []byte(tt.out+"\n"), nil)
			if r.SessionID != tt.want || strings.Join(got, ",") != strings.Join(tt.calls, ",") {
				t.Errorf("SessionID %q, OnSession calls %q; want %q %q", r.SessionID, got, tt.want, tt.calls)
			}
			if (r.SessionIDRejected != "") != tt.rejected {
				t.Errorf("SessionIDRejected = %q", r.SessionIDRejected)
			}
		})
	}
	data, err := os.ReadFile("testdata/claude_resume_new_session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := feedSpec(t, Spec{Protocol: ProtocolClaudeStream, Resume: true}, data, nil)
	if r.SessionID != "8d2c4e6f-1a3b-4c5d-9e7f-0a1b2c3d4e5f" {
		t.Errorf("SessionID = %q", r.SessionID)
	}
}
