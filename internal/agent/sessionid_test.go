package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCheckSessionID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"5e55a1d0-0000-4000-8000-000000000001", true},
		{"019a2b3c-thread.v2_x", true},
		{strings.Repeat("a", MaxSessionIDLen), true},
		{"", false},
		{strings.Repeat("a", MaxSessionIDLen+1), false},
		{"--dangerously-bypass-approvals-and-sandbox", false},
		{"--yolo", false},
		{"-y", false},
		{"a b", false},
		{"a=b", false},
		{"x\n--yolo", false},
		{"../../etc", false},
		{"é", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		err := CheckSessionID(tt.id)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadSessionID)) {
			t.Errorf("CheckSessionID(%q) = %v, want ok %v", tt.id, err, tt.ok)
		}
	}
}

// TestStreamSessionIDNotAFlag: a session id that an agent's stream reports
// is used only when it is a plain token; otherwise the result has none,
// and says why.
func TestStreamSessionIDNotAFlag(t *testing.T) {
	tests := []struct {
		proto  Protocol
		stdout string
	}{
		{ProtocolCodexJSONL, `{"type":"thread.started","thread_id":"--dangerously-bypass-approvals-and-sandbox"}
{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"{\"ok\": true}"}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`},
		{ProtocolGeminiStream, `{"type":"init","session_id":"--yolo","model":"m"}
{"type":"message","role":"assistant","content":"{\"ok\": true}","delta":true}
{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}
`},
		{ProtocolClaudeStream, `{"type":"system","subtype":"init","session_id":"--dangerously-skip-permissions"}
{"type":"result","subtype":"success","is_error":false,"result":"{\"ok\": true}","session_id":"--dangerously-skip-permissions"}
`},
	}
	for _, tt := range tests {
		t.Run(string(tt.proto), func(t *testing.T) {
			res := feedSpec(t, Spec{Protocol: tt.proto}, []byte(tt.stdout), nil)
			if res.SessionID != "" {
				t.Errorf("SessionID = %q, want none", res.SessionID)
			}
			if !strings.Contains(res.SessionIDRejected, "starts with '-'") {
				t.Errorf("SessionIDRejected = %q, want the reason", res.SessionIDRejected)
			}
			if string(res.Text) != `{"ok": true}` {
				t.Errorf("Text = %q: the answer must still count", res.Text)
			}
		})
	}
}

// TestCommandRefusesFlagSessionID: whatever its source, a session id that
// is not a plain token never reaches an agent's argv.
func TestCommandRefusesFlagSessionID(t *testing.T) {
	for _, preset := range []string{PresetClaude, PresetCodex, PresetGemini, PresetSim, PresetExec} {
		for _, resume := range []bool{false, true} {
			inv := Invocation{Preset: preset, SessionID: "--yolo", Resume: resume, Scenario: "s.yaml", SelfExe: "/x",
				Command: []string{"agent"}, ContinueArgs: []string{"--resume", "x"}}
			argv, _, _, err := Command(inv)
			if !errors.Is(err, ErrInvocation) || !errors.Is(err, ErrBadSessionID) {
				t.Errorf("%s resume=%v: argv %q, err %v; want ErrBadSessionID", preset, resume, argv, err)
			}
			if slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, "--yolo") }) {
				t.Errorf("%s resume=%v: argv %q holds the id", preset, resume, argv)
			}
		}
	}
}
