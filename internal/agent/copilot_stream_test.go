package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parseCopilot feeds stdout to a copilot-json session in 5-byte pieces,
// then stderr, and returns the result and whether the stream had ended.
func parseCopilot(t *testing.T, stdout, stderr []byte) (*Result, bool) {
	t.Helper()
	s := newSession(withDefaults(Spec{Protocol: ProtocolCopilotJSON}), nil)
	for len(stdout) > 0 {
		n := min(5, len(stdout))
		s.consume(stdout[:n])
		stdout = stdout[n:]
	}
	ended := s.events.ended()
	s.endStdout()
	s.stderrTail.write(stderr)
	return s.result(), ended
}

// TestCopilotStreamTranscripts reads the output of GitHub Copilot CLI
// 1.0.102 recorded against the mock model API
// (testdata/transcripts/copilot): its answer, the session id of its last
// line, and its session.error after its own five retries.
func TestCopilotStreamTranscripts(t *testing.T) {
	const session = "a2feccbd-d849-4508-a560-dc60abde86c5"
	tests := []struct {
		name, wantText, wantSession         string
		isError, transient, permanent, auth bool
		notFound, ended                     bool
		wantTurns                           int
		wantMessage                         string
	}{
		{name: "success", wantText: `{"ok": true}`, wantSession: session, ended: true, wantTurns: 1},
		{name: "resume", wantText: `{"ok": true, "again": true}`, wantSession: session, ended: true, wantTurns: 1},
		{name: "rate_limited_then_ok", wantText: `{"ok": true}`, wantSession: "2a736e11-e693-491d-be24-8c47a7ed84e8", ended: true, wantTurns: 1},
		{name: "rate_limited", wantSession: "4a6f74e4-a879-42fb-b3a3-5c9a752e9e0a", isError: true, transient: true, ended: true,
			wantMessage: "retried 5 times (total retry wait time: 11.13 seconds) Last error: 429 Rate limit exceeded"},
		{name: "overloaded", wantSession: "27574daa-c20f-485c-94dd-4f3000c6b606", isError: true, transient: true, ended: true,
			wantMessage: "Last error: 503 Service Unavailable"},
		{name: "auth", wantSession: "afab2e74-acc6-4e59-a0f0-ef29bd4c8842", isError: true, permanent: true, auth: true, ended: true,
			wantMessage: "Authentication failed with provider at http://127.0.0.1:PORT/v1 (HTTP 401). Check your COPILOT_PROVIDER_API_KEY,"},
		{name: "unknown_session", notFound: true, wantMessage: "No session, task, or name matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr := transcript(t, "copilot", tt.name)
			r, ended := parseCopilot(t, stdout, stderr)
			if string(r.Text) != tt.wantText || r.SessionID != tt.wantSession {
				t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, tt.wantText, tt.wantSession)
			}
			if r.IsError != tt.isError || r.Transient != tt.transient || r.Permanent != tt.permanent || r.Auth != tt.auth ||
				r.SessionNotFound != tt.notFound || ended != tt.ended || r.UsageLimit {
				t.Errorf("is_error %v transient %v permanent %v auth %v not found %v ended %v usage limit %v, want %v %v %v %v %v %v false",
					r.IsError, r.Transient, r.Permanent, r.Auth, r.SessionNotFound, ended, r.UsageLimit,
					tt.isError, tt.transient, tt.permanent, tt.auth, tt.notFound, tt.ended)
			}
			if r.Turns != tt.wantTurns {
				t.Errorf("turns %d, want %d", r.Turns, tt.wantTurns)
			}
			if !strings.Contains(r.ErrorMessage, tt.wantMessage) || (tt.wantMessage == "") != (r.ErrorMessage == "") {
				t.Errorf("ErrorMessage %q, want it to contain %q", r.ErrorMessage, tt.wantMessage)
			}
			if r.InputTokens != 0 || r.OutputTokens != 0 || r.CostKnown {
				t.Errorf("tokens %d/%d cost known %v from the stream, which reports none", r.InputTokens, r.OutputTokens, r.CostKnown)
			}
		})
	}
}

// TestCopilotErrorKinds: each errorType of a session.error, with the
// status and message it comes with, is the failure class cadence acts on.
func TestCopilotErrorKinds(t *testing.T) {
	tests := []struct {
		name, line                             string
		transient, usageLimit, permanent, auth bool
		wantRetry                              time.Duration
	}{
		{name: "quota", line: `{"type":"session.error","data":{"errorType":"quota","message":"You have exceeded your Copilot premium request quota.","statusCode":402}}`,
			transient: true, usageLimit: true},
		{name: "quota message on a 429", line: `{"type":"session.error","data":{"errorType":"rate_limit","message":"Failed to get response from the AI model; retried 5 times Last error: 429 You exceeded your current quota: the quota will reset after 2h0m0s.","statusCode":429}}`,
			transient: true, usageLimit: true, wantRetry: 2 * time.Hour},
		{name: "rate limit naming a wait", line: `{"type":"session.error","data":{"errorType":"rate_limit","message":"429 Too many requests. Please retry in 30s.","statusCode":429}}`,
			transient: true, wantRetry: 30 * time.Second},
		{name: "authorization", line: `{"type":"session.error","data":{"errorType":"authorization","message":"403 Forbidden","statusCode":403}}`,
			permanent: true, auth: true},
		{name: "configuration", line: `{"type":"session.error","data":{"errorType":"configuration","message":"COPILOT_PROVIDER_TYPE must be one of openai, azure, anthropic"}}`,
			permanent: true},
		{name: "query 402", line: `{"type":"session.error","data":{"errorType":"query","message":"402 Payment Required","statusCode":402}}`,
			permanent: true},
		{name: "query 500", line: `{"type":"session.error","data":{"errorType":"query","message":"500 Internal Server Error","statusCode":500}}`,
			transient: true},
		{name: "query with the status only in its message", line: `{"type":"session.error","data":{"errorType":"query","message":"Last error: 401 invalid API key"}}`,
			permanent: true, auth: true},
		{name: "unknown kind, network words", line: `{"type":"session.error","data":{"errorType":"model_call","message":"fetch failed: ECONNREFUSED"}}`,
			transient: true},
		{name: "session", line: `{"type":"session.error","data":{"errorType":"session","message":"Turn error: something broke"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := parseCopilot(t, []byte(tt.line+"\n"), nil)
			if !r.IsError || r.Text != nil {
				t.Errorf("is_error %v text %q, want a failure with no answer", r.IsError, r.Text)
			}
			if r.Transient != tt.transient || r.UsageLimit != tt.usageLimit || r.Permanent != tt.permanent || r.Auth != tt.auth {
				t.Errorf("transient %v usage limit %v permanent %v auth %v, want %v %v %v %v",
					r.Transient, r.UsageLimit, r.Permanent, r.Auth, tt.transient, tt.usageLimit, tt.permanent, tt.auth)
			}
			if r.RetryAfter != tt.wantRetry {
				t.Errorf("retry after %v, want %v", r.RetryAfter, tt.wantRetry)
			}
		})
	}
}

// TestCopilotAnswerAfterError: an assistant.message after a session.error
// (a turn the CLI went on with) is the answer, and the failure no longer
// describes the attempt; the last assistant.message wins.
func TestCopilotAnswerAfterError(t *testing.T) {
	stdout := []byte(`{"type":"assistant.message","data":{"content":"I will read the file."}}
{"type":"session.error","data":{"errorType":"rate_limit","message":"429","statusCode":429}}
{"type":"assistant.message","data":{"content":"{\"ok\": true}"}}
{"type":"result","sessionId":"s-1","exitCode":0}
`)
	r, ended := parseCopilot(t, stdout, nil)
	if string(r.Text) != `{"ok": true}` || r.IsError || r.Transient || r.ErrorMessage != "" || !ended || r.Turns != 2 || r.SessionID != "s-1" {
		t.Errorf("text %q is_error %v transient %v message %q ended %v turns %d session %q, want the last message, no failure, ended, 2 turns, s-1",
			r.Text, r.IsError, r.Transient, r.ErrorMessage, ended, r.Turns, r.SessionID)
	}
}

// TestReadCopilotUsage reads the usage file Copilot CLI 1.0.102 wrote
// after one turn against the mock, and refuses what an agent could put at
// that path instead.
func TestReadCopilotUsage(t *testing.T) {
	real, err := os.ReadFile("testdata/copilot_usage.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(write("target.json", string(real)), link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path      string
		prior           [3]int64
		in, cached, out int64
		wantErr         string
	}{
		{name: "recorded", path: write("real.json", string(real)), in: 12005, out: 4},
		// The file of a resumed session counts its earlier turns too.
		{name: "a follow-up", path: write("resumed.json", `{"modelMetrics":{"m1":{"usage":{"inputTokens":24075,"outputTokens":11,"cacheReadTokens":100}}}}`),
			prior: [3]int64{12009, 40, 4}, in: 12066, cached: 60, out: 7},
		{name: "a prior larger than the file's", path: write("smaller.json", `{"modelMetrics":{"m1":{"usage":{"inputTokens":50,"outputTokens":3}}}}`),
			prior: [3]int64{12009, 0, 4}, in: 50, out: 3},
		{name: "two models and a cache", path: write("two.json",
			`{"modelMetrics":{"a":{"usage":{"inputTokens":100,"outputTokens":5,"cacheReadTokens":60}},"b":{"usage":{"inputTokens":10,"outputTokens":2}}}}`),
			in: 110, cached: 60, out: 7},
		{name: "hostile numbers", path: write("neg.json",
			`{"modelMetrics":{"a":{"usage":{"inputTokens":-100,"outputTokens":1e300,"cacheReadTokens":"9"}},"b":{"usage":{"inputTokens":4611686018427387904,"outputTokens":4611686018427387904}}}}`),
			// A count given as a string is read, as in every stream.
			in: 1 << 62, cached: 9, out: 1 << 62},
		{name: "missing: the CLI was killed", path: filepath.Join(dir, "none.json")},
		{name: "not JSON", path: write("bad.json", "usage: 5"), wantErr: "bad.json"},
		{name: "a link", path: link, wantErr: "too many levels of symbolic links"},
		{name: "a fifo", path: fifo, wantErr: "not a regular file"},
		{name: "too large", path: write("big.json", `{"modelMetrics":{},"pad":"`+strings.Repeat("x", maxUsageFile)+`"}`), wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			err := readCopilotUsage(tt.path, &r, tt.prior)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if r.InputTokens != tt.in || r.CachedTokens != tt.cached || r.OutputTokens != tt.out {
				t.Errorf("tokens in %d cached %d out %d, want %d %d %d", r.InputTokens, r.CachedTokens, r.OutputTokens, tt.in, tt.cached, tt.out)
			}
		})
	}
}

// TestRunUsageFile: Run gives the agent --usage-output-file=FILE in a
// directory of its own, reads the tokens the agent wrote there, and
// removes the directory.
func TestRunUsageFile(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-copilot")
	body := `#!/bin/sh
for a in "$@"; do
  case "$a" in --usage-output-file=*) f="${a#--usage-output-file=}";; esac
done
[ -n "$f" ] || { echo "no usage file option" >&2; exit 2; }
printf '%s\n' "$f" > "` + filepath.Join(dir, "seen") + `"
printf '{"modelMetrics":{"m1":{"usage":{"inputTokens":321,"outputTokens":12,"cacheReadTokens":300}}}}' > "$f"
echo '{"type":"assistant.message","data":{"content":"{\"ok\": true}"}}'
echo '{"type":"result","sessionId":"0cb916db-26aa-40f2-86b5-1ba81b225fd2","exitCode":0}'
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Spec{Argv: []string{script}, Protocol: ProtocolCopilotJSON, UsageFileFlag: UsageFileFlag(PresetCopilot), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Text) != `{"ok": true}` || res.SessionID != "0cb916db-26aa-40f2-86b5-1ba81b225fd2" {
		t.Fatalf("exit %d text %q session %q, stderr %q", res.ExitCode, res.Text, res.SessionID, res.StderrTail)
	}
	if res.InputTokens != 321 || res.CachedTokens != 300 || res.OutputTokens != 12 {
		t.Errorf("tokens in %d cached %d out %d, want 321 300 12", res.InputTokens, res.CachedTokens, res.OutputTokens)
	}
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	if err != nil {
		t.Fatal(err)
	}
	file := strings.TrimSpace(string(seen))
	if !strings.HasPrefix(filepath.Base(filepath.Dir(file)), "cadence-usage-") {
		t.Errorf("usage file %s, want one in a cadence-usage- directory", file)
	}
	if _, err := os.Stat(filepath.Dir(file)); !os.IsNotExist(err) {
		t.Errorf("the usage file's directory is still there after Run (%v)", err)
	}
}

// BenchmarkCopilotStream measures agent.Run reading a 64 MiB Copilot CLI
// transcript (streamed deltas and whole messages of 32 KiB, the shape of
// a long tool-using session) through a pipe from cat; b.SetBytes makes
// the framework report MB/s, and the answer's bytes are the last message.
func BenchmarkCopilotStream(b *testing.B) {
	path := filepath.Join(b.TempDir(), "copilot.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	chunk := strings.Repeat(`func f() { return \"line\" }\n`, 32<<10/30)
	var size int64
	for i := 0; size < 64<<20; i++ {
		n, err := fmt.Fprintf(f, `{"type":"assistant.message_delta","data":{"messageId":"m%d","deltaContent":"%s"},"ephemeral":true}`+"\n"+
			`{"type":"assistant.message","data":{"messageId":"m%d","content":"%s","toolRequests":[{"name":"edit"}]}}`+"\n", i, chunk, i, chunk)
		if err != nil {
			b.Fatal(err)
		}
		size += int64(n)
	}
	n, _ := fmt.Fprintln(f, `{"type":"assistant.message","data":{"content":"{\"ok\": true}"}}`+"\n"+`{"type":"result","sessionId":"0cb916db-26aa-40f2-86b5-1ba81b225fd2","exitCode":0}`)
	size += int64(n)
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		res, err := Run(context.Background(), Spec{Argv: []string{"cat", path}, Dir: b.TempDir(), Protocol: ProtocolCopilotJSON})
		if err != nil {
			b.Fatal(err)
		}
		if string(res.Text) != `{"ok": true}` || res.StdoutBytes != size {
			b.Fatalf("Text %q after %d of %d bytes", res.Text, res.StdoutBytes, size)
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/op")
}

// TestCopilotAnswerTooLarge: a message over max_bytes is not an answer
// but reported as too large; a later message within it is the answer.
func TestCopilotAnswerTooLarge(t *testing.T) {
	big := `{"type":"assistant.message","data":{"content":"` + strings.Repeat("x", 200) + `"}}` + "\n"
	small := `{"type":"assistant.message","data":{"content":"{\"ok\": true}"}}` + "\n"
	tests := []struct {
		name, stdout string
		wantText     string
		tooLarge     bool
	}{
		{name: "last message too large", stdout: small + big, tooLarge: true},
		{name: "a later one within max_bytes", stdout: big + small, wantText: `{"ok": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(withDefaults(Spec{Protocol: ProtocolCopilotJSON, MaxBytes: 64}), nil)
			s.consume([]byte(tt.stdout))
			s.endStdout()
			r := s.result()
			if string(r.Text) != tt.wantText || r.TextTooLarge != tt.tooLarge {
				t.Errorf("text %q too large %v (%d bytes), want %q %v", r.Text, r.TextTooLarge, r.TextBytes, tt.wantText, tt.tooLarge)
			}
			if tt.tooLarge && r.TextBytes != 200 {
				t.Errorf("TextBytes %d, want the message's 200", r.TextBytes)
			}
		})
	}
}
