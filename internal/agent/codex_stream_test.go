package agent

import (
	"strings"
	"testing"
)

func TestCodexStreamTranscripts(t *testing.T) {
	tests := []struct {
		name                           string
		prior                          [2]int64 // cumulative tokens of the thread's previous attempt
		wantText, wantSession          string
		isError, transient, permanent  bool
		notFound                       bool
		wantIn, wantOut, cumIn, cumOut int64
		wantMessage                    string // a part of ErrorMessage
	}{
		{name: "success", wantText: `{"ok": true}`, wantSession: "01a203de-079f-7fd0-a2e3-12edba764f94",
			wantIn: 13859, wantOut: 4, cumIn: 13859, cumOut: 4},
		// The follow-up in the same thread reports the thread's usage so
		// far: the first turn's 13859/4 plus its own.
		{name: "resume", prior: [2]int64{13859, 4}, wantText: `{"ok": true, "again": true}`,
			wantSession: "01a203de-079f-7fd0-a2e3-12edba764f94", wantIn: 27814 - 13859, wantOut: 11 - 4, cumIn: 27814, cumOut: 11},
		{name: "resume without prior figures", wantText: `{"ok": true, "again": true}`,
			wantSession: "01a203de-079f-7fd0-a2e3-12edba764f94", wantIn: 27814, wantOut: 11, cumIn: 27814, cumOut: 11},
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "01a203de-e0cd-7e31-bacc-6679f23e64d4",
			wantIn: 13857, wantOut: 4, cumIn: 13857, cumOut: 4},
		{name: "rate_limited", wantSession: "01a203de-6e1b-7460-a1d8-33935747fb25", isError: true, transient: true,
			wantMessage: "last status: 429 Too Many Requests"},
		{name: "overloaded", wantSession: "01a203de-76fb-7010-8199-54d7d6852ce9", isError: true, transient: true,
			wantMessage: "unexpected status 529"},
		{name: "auth", wantSession: "01a203de-7e1a-7141-b3c2-891b19fe8449", isError: true, permanent: true,
			wantMessage: "401 Unauthorized"},
		{name: "unknown_session", notFound: true, wantMessage: "no rollout found for thread id 4b9b3e52"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, _, _ := strings.Cut(tt.name, " ")
			stdout, stderr := transcript(t, "codex", file)
			r := feedSpec(t, Spec{Protocol: ProtocolCodexJSONL, PriorInputTokens: tt.prior[0], PriorOutputTokens: tt.prior[1]}, stdout, stderr)
			if string(r.Text) != tt.wantText || r.SessionID != tt.wantSession {
				t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, tt.wantText, tt.wantSession)
			}
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.SessionNotFound != tt.notFound {
				t.Errorf("is_error %v transient %v permanent %v not found %v, want %v %v %v %v",
					r.IsError, r.Transient, r.Permanent, r.SessionNotFound, tt.isError, tt.transient, tt.permanent, tt.notFound)
			}
			if r.InputTokens != tt.wantIn || r.OutputTokens != tt.wantOut ||
				r.CumulativeInputTokens != tt.cumIn || r.CumulativeOutputTokens != tt.cumOut {
				t.Errorf("tokens %d/%d cumulative %d/%d, want %d/%d and %d/%d", r.InputTokens, r.OutputTokens,
					r.CumulativeInputTokens, r.CumulativeOutputTokens, tt.wantIn, tt.wantOut, tt.cumIn, tt.cumOut)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
			if r.CostUSD != 0 {
				t.Errorf("CostUSD = %v; codex reports no cost", r.CostUSD)
			}
		})
	}
}

func TestCodexStreamCases(t *testing.T) {
	tests := []struct {
		name               string
		out                string
		wantText           string
		isError, transient bool
		wantTurns          int
	}{
		{"last agent message wins",
			`{"type":"item.completed","item":{"type":"agent_message","text":"first"}}` + "\n" +
				`{"type":"item.completed","item":{"type":"reasoning","text":"thinking"}}` + "\n" +
				`{"type":"item.completed","item":{"type":"agent_message","text":"{\"a\":1}"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":2}}`,
			`{"a":1}`, false, false, 1},
		{"retry notice alone is no failure",
			`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}` + "\n" +
				`{"type":"item.completed","item":{"type":"agent_message","text":"done"}}` + "\n" +
				`{"type":"turn.completed","usage":{}}`,
			"done", false, false, 1},
		{"error then the stream ends", `{"type":"error","message":"stream error: 503 Service Unavailable"}`, "", false, true, 0},
		{"turn.failed without a status", `{"type":"turn.failed","error":{"message":"the model refused"}}`, "", true, false, 0},
		{"odd lines are ignored",
			"not json\n{\"type\":\"item.completed\",\"item\":\"oops\"}\n{\"type\":\"turn.completed\",\"usage\":[1]}\n[1,2]",
			"", false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feedSpec(t, Spec{Protocol: ProtocolCodexJSONL}, []byte(tt.out+"\n"), nil)
			if string(r.Text) != tt.wantText || r.IsError != tt.isError || r.Transient != tt.transient || r.Turns != tt.wantTurns {
				t.Errorf("Text %q is_error %v transient %v turns %d, want %q %v %v %d",
					r.Text, r.IsError, r.Transient, r.Turns, tt.wantText, tt.isError, tt.transient, tt.wantTurns)
			}
		})
	}
}
