package attempt

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// anyObjectStep is a stdout step whose handoff may be any JSON object,
// with on_help (one round) and the retry policy of testStep.
func anyObjectStep(t *testing.T) *workflow.Step {
	t.Helper()
	schema, err := handoff.CompileSchemaBytes("object.json", []byte(`{"type": "object"}`))
	if err != nil {
		t.Fatal(err)
	}
	ws := testStep(&workflow.OnHelp{Agent: "advisor", MaxRounds: 1})
	ws.Timeout = time.Minute
	ws.Handoff = workflow.Handoff{From: "stdout", Schema: schema, Repair: true, Coerce: true,
		MaxBytes: 1 << 20, MaxEventBytes: 1 << 20, MaxDepth: 64}
	return ws
}

// TestJudgeTranscripts judges what real agent CLIs printed (the streams
// in testdata/transcripts, replayed by the parser that reads them live)
// and takes the decision on the first of three attempts. Each row's
// class, decision and ending are the ones SPEC §5, §6 and §17 give that
// output: a login failure stops the run uncounted, a usage limit with a
// reset waits for it uncounted, a provider's transient error is retried
// in the session, a lost session is retried in a fresh one, a help
// marker runs the advisor, a turn ended without a handoff is followed up.
func TestJudgeTranscripts(t *testing.T) {
	for _, tt := range []struct {
		file      string
		proto     agent.Protocol
		class     string // "ok" or the class
		decision  Decision
		end       end
		uncounted bool
		detail    string // a part of the diagnosis's summary
	}{
		{"claude_success.jsonl", agent.ProtocolClaudeStream, "ok", Succeed, endSucceeded, false, ""},
		{"claude_auth.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassAuth), WaitLogin, endLoginNeeded, true, "Invalid API key"},
		{"claude_oauth_expired.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassAuth), WaitLogin, endLoginNeeded, true, "log in to agent a"},
		{"codex_auth_refresh.jsonl", agent.ProtocolCodexJSONL, string(handoff.ClassAuth), WaitLogin, endLoginNeeded, true, "refresh token"},
		{"claude_rate_limited.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassTransient), WaitUsageLimit, endUsageLimit, true, "usage limit reached"},
		{"codex_usage_limit_resets.jsonl", agent.ProtocolCodexJSONL, string(handoff.ClassTransient), WaitUsageLimit, endUsageLimit, true, "usage limit reached"},
		{"claude_overloaded.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassTransient), RetryInSession, endRetry, false, "529"},
		{"qwen_cut_off.jsonl", agent.ProtocolQwenStream, string(handoff.ClassTransient), RetryInSession, endRetry, false, "429"},
		{"claude_no_conversation.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassExitNonzero), RetryFresh, endRetry, false, "No conversation found"},
		{"claude_help_escaped.jsonl", agent.ProtocolClaudeStream, string(handoff.ClassHelp), HelpRound, endHelp, false, "which db?"},
		{"gemini_max_turns.jsonl", agent.ProtocolGeminiStream, string(handoff.ClassEmpty), RetryFollowup, endRetry, false, "Maximum session turns exceeded"},
		{"gemini_loop_detected.jsonl", agent.ProtocolGeminiStream, string(handoff.ClassEmpty), RetryFollowup, endRetry, false, "Loop detected"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "transcripts", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := agent.Replay(f, tt.proto, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The streams end in an error event; the CLIs then exit 1.
			if res.IsError {
				res.ExitCode = 1
			}
			r := &Runner{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			ws := anyObjectStep(t)
			j := r.judge(ws, res, nil, handoffSource{agent: "a"})
			got := string(j.class)
			if j.ok {
				got = "ok"
			}
			if got != tt.class {
				t.Fatalf("judged %s, want %s (%+v)", got, tt.class, j.diag)
			}
			if !j.ok && !strings.Contains(j.diag.Summary()+j.helpContext, tt.detail) {
				t.Errorf("diagnosis %q (help context %q) does not say %q", j.diag.Summary(), j.helpContext, tt.detail)
			}
			now := time.Now().UTC()
			v := verdict{ok: j.ok, class: j.class, permanent: j.permanent, retryAfter: j.retryAfter, resetAt: j.resetAt,
				fresh: j.lostSess || res.SessionNotFound, used: 1, maxAttempts: 3, now: now, jitter: 0.5}
			d := decide(ws, v)
			if d.Decision != tt.decision || endOf(d.Decision) != tt.end || d.uncounted != tt.uncounted {
				t.Fatalf("decided %s (ending %s, uncounted %v), want %s (%s, %v)",
					d.Decision, endOf(d.Decision), d.uncounted, tt.decision, tt.end, tt.uncounted)
			}
			// A usage limit waits until its reset, which lies ahead.
			if tt.end == endUsageLimit && (d.next == nil || !d.next.After(now) || d.next.Before(j.resetAt)) {
				t.Errorf("usage limit resetting at %s: next attempt at %v", j.resetAt, d.next)
			}
		})
	}
}
