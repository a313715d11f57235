package agent

import (
	"os"
	"testing"
)

// TestTokensComparableAcrossAgents: input tokens are all the input, the
// cached part included, and the cached part is also recorded apart, so
// that the figures of Claude Code, Codex and Gemini CLI compare. Claude
// reports the cache apart from input_tokens (an 18-turn session printed
// input_tokens 1); Codex and Gemini CLI count it in.
func TestTokensComparableAcrossAgents(t *testing.T) {
	type tokens struct{ in, cached, out int64 }
	tests := []struct {
		name   string
		proto  Protocol
		file   string // in testdata, or
		stream string
		prior  tokens
		want   tokens
		cumul  tokens // Codex's thread totals
	}{
		// input_tokens 11 + cache_creation_input_tokens 9120 +
		// cache_read_input_tokens 14200; cached: the cache read.
		{name: "claude", proto: ProtocolClaudeStream, file: "claude_success.jsonl", want: tokens{11 + 9120 + 14200, 14200, 80}},
		{name: "claude, no cache fields", proto: ProtocolClaudeStream,
			stream: `{"type":"result","is_error":false,"result":"x","usage":{"input_tokens":30,"output_tokens":4}}`, want: tokens{30, 0, 4}},
		{name: "codex", proto: ProtocolCodexJSONL,
			stream: `{"type":"turn.completed","usage":{"input_tokens":20000,"cached_input_tokens":15000,"output_tokens":50}}`,
			want:   tokens{20000, 15000, 50}, cumul: tokens{20000, 15000, 50}},
		// Codex's usage is the thread's so far: the attempt's is the
		// difference from the previous attempt's totals.
		{name: "codex, resumed", proto: ProtocolCodexJSONL,
			stream: `{"type":"turn.completed","usage":{"input_tokens":45000,"cached_input_tokens":38000,"output_tokens":90}}`,
			prior:  tokens{20000, 15000, 50}, want: tokens{25000, 23000, 40}, cumul: tokens{45000, 38000, 90}},
		{name: "gemini", proto: ProtocolGeminiStream, file: "gemini_max_turns.jsonl", want: tokens{24102, 18040, 209}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.stream + "\n")
			if tt.file != "" {
				var err error
				if data, err = os.ReadFile("testdata/" + tt.file); err != nil {
					t.Fatal(err)
				}
			}
			spec := Spec{Protocol: tt.proto, PriorInputTokens: tt.prior.in, PriorCachedTokens: tt.prior.cached, PriorOutputTokens: tt.prior.out}
			r := feedSpec(t, spec, data, nil)
			if got := (tokens{r.InputTokens, r.CachedTokens, r.OutputTokens}); got != tt.want {
				t.Errorf("input/cached/output %v, want %v", got, tt.want)
			}
			if got := (tokens{r.CumulativeInputTokens, r.CumulativeCachedTokens, r.CumulativeOutputTokens}); got != tt.cumul {
				t.Errorf("cumulative %v, want %v", got, tt.cumul)
			}
		})
	}
}

// TestCostKnown: a stream that reports total_cost_usd has a known cost,
// 0 included (an exec agent speaking claude-stream against a free
// model); one that does not has none.
func TestCostKnown(t *testing.T) {
	tests := []struct {
		name  string
		proto Protocol
		out   string
		known bool
		cost  float64
	}{
		{"zero", ProtocolClaudeStream, `{"type":"result","is_error":false,"result":"x","total_cost_usd":0}`, true, 0},
		{"some", ProtocolClaudeStream, `{"type":"result","is_error":false,"result":"x","total_cost_usd":0.25}`, true, 0.25},
		{"absent", ProtocolClaudeStream, `{"type":"result","is_error":false,"result":"x"}`, false, 0},
		{"null", ProtocolClaudeStream, `{"type":"result","is_error":false,"result":"x","total_cost_usd":null}`, false, 0},
		{"negative", ProtocolClaudeStream, `{"type":"result","is_error":false,"result":"x","total_cost_usd":-1}`, false, 0},
		{"codex reports none", ProtocolCodexJSONL, `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`, false, 0},
		{"gemini reports none", ProtocolGeminiStream, `{"type":"result","status":"success","stats":{"input_tokens":1}}`, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feedSpec(t, Spec{Protocol: tt.proto}, []byte(tt.out+"\n"), nil)
			if r.CostKnown != tt.known || r.CostUSD != tt.cost {
				t.Errorf("CostKnown %v CostUSD %v, want %v %v", r.CostKnown, r.CostUSD, tt.known, tt.cost)
			}
		})
	}
}
