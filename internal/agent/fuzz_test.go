package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The stream fuzz targets treat stdout and stderr as untrusted bytes. They
// check that a parser never panics, that what it extracts is bounded by what
// it read, and that the result does not depend on how the pipe happened to
// split the output into reads.

// fuzzNow is the clock of every fuzzed session, so that results computed
// from "now" (rate limit reset times) compare equal between feedings.
var fuzzNow = time.Unix(1771390800-3600, 0)

// fuzzSession builds a session for proto whose parser reads fuzzNow.
func fuzzSession(proto Protocol) *session {
	s := newSession(withDefaults(Spec{Protocol: proto}), nil)
	switch st := s.events.(type) {
	case *claudeStream:
		st.now = func() time.Time { return fuzzNow }
	case *geminiStream:
		st.now = func() time.Time { return fuzzNow }
	case *codexStream:
		st.now = func() time.Time { return fuzzNow }
	case *qwenStream:
		st.now = func() time.Time { return fuzzNow }
	case *opencodeStream:
		st.now = func() time.Time { return fuzzNow }
	case *piStream:
		st.now = func() time.Time { return fuzzNow }
	}
	return s
}

// feedPieces runs stdout through a fresh session piece by piece, as the
// stdout reader would, then stderr through its tail, and returns the result.
func feedPieces(proto Protocol, pieces [][]byte, stderr []byte) *Result {
	s := fuzzSession(proto)
	for _, p := range pieces {
		s.consume(p)
	}
	s.endStdout()
	s.stderrTail.write(stderr)
	return s.result()
}

// chunked splits data into pieces of size n (the last may be shorter).
func chunked(data []byte, n int) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		k := min(n, len(data))
		out = append(out, data[:k:k])
		data = data[k:]
	}
	return out
}

// fuzzStream is the body shared by the three stream targets.
func fuzzStream(t *testing.T, proto Protocol, stdout, stderr []byte, chunk uint8) *Result {
	t.Helper()
	whole := feedPieces(proto, [][]byte{stdout}, stderr)
	checkStreamBounds(t, proto, stdout, stderr, whole)

	byLine := feedPieces(proto, bytes.SplitAfter(stdout, []byte("\n")), stderr)
	if !reflect.DeepEqual(whole, byLine) {
		t.Fatalf("one chunk and line by line differ:\n whole  %+v\n byLine %+v", whole, byLine)
	}
	n := int(chunk)%64 + 1
	small := feedPieces(proto, chunked(stdout, n), stderr)
	if !reflect.DeepEqual(whole, small) {
		t.Fatalf("one chunk and %d-byte chunks differ:\n whole %+v\n small %+v", n, whole, small)
	}
	return whole
}

// checkStreamBounds asserts what any stream parse must satisfy, whatever the
// input: nothing extracted is larger than the output it came from.
func checkStreamBounds(t *testing.T, proto Protocol, stdout, stderr []byte, r *Result) {
	t.Helper()
	in := len(stdout)
	// encoding/json replaces each invalid UTF-8 byte inside a string with
	// U+FFFD (3 bytes), so decoded text can outgrow non-UTF-8 input.
	textLimit := in
	if !utf8.Valid(stdout) {
		textLimit = 3 * in
	}
	if len(r.Text) > textLimit {
		t.Errorf("Text is %d bytes from %d bytes of stdout", len(r.Text), in)
	}
	if len(r.SessionID) > textLimit {
		t.Errorf("SessionID is %d bytes from %d bytes of stdout", len(r.SessionID), in)
	}
	if len(r.StructuredOutput) > in {
		t.Errorf("StructuredOutput is %d bytes from %d bytes of stdout", len(r.StructuredOutput), in)
	}
	if r.StructuredOutput != nil && !json.Valid(r.StructuredOutput) {
		t.Errorf("StructuredOutput %q is not JSON", r.StructuredOutput)
	}
	// Messages may be a fixed phrase ("gemini reported status …") around
	// a quoted piece of the input; quoting at most quadruples a byte.
	if limit := 4*textLimit + len(stderr) + 64; len(r.ErrorMessage) > limit {
		t.Errorf("ErrorMessage is %d bytes from %d+%d bytes of output", len(r.ErrorMessage), in, len(stderr))
	}
	if r.HelpContext != nil {
		if !r.Help {
			t.Errorf("HelpContext %q without Help", r.HelpContext)
		}
		if len(r.HelpContext) > textLimit || !json.Valid(r.HelpContext) || r.HelpContext[0] != '{' {
			t.Errorf("HelpContext %q is not a JSON object from the output", r.HelpContext)
		}
	}
	if r.StdoutBytes != int64(in) {
		t.Errorf("StdoutBytes = %d, want %d", r.StdoutBytes, in)
	}
	if len(r.StderrTail) > min(len(stderr), stderrTailSz) {
		t.Errorf("StderrTail is %d bytes from %d bytes of stderr", len(r.StderrTail), len(stderr))
	}
	// Claude and Qwen Code report num_turns themselves; Codex and Gemini
	// turns are counted one per event line.
	turnLimit := bytes.Count(stdout, []byte("\n")) + 1
	if proto == ProtocolClaudeStream || proto == ProtocolQwenStream {
		turnLimit = math.MaxInt32
	}
	if r.Turns < 0 || r.Turns > turnLimit {
		t.Errorf("Turns = %d, want at most %d", r.Turns, turnLimit)
	}
	if r.InputTokens < 0 || r.OutputTokens < 0 || r.CumulativeInputTokens < 0 || r.CumulativeOutputTokens < 0 {
		t.Errorf("negative tokens %d/%d cumulative %d/%d", r.InputTokens, r.OutputTokens, r.CumulativeInputTokens, r.CumulativeOutputTokens)
	}
	if r.CostUSD < 0 || math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0) {
		t.Errorf("CostUSD = %v", r.CostUSD)
	}
	if r.RetryAfter < 0 {
		t.Errorf("RetryAfter = %v", r.RetryAfter)
	}
	if r.RetryAfter > 0 && r.ResetAt.IsZero() {
		t.Errorf("RetryAfter %v without ResetAt", r.RetryAfter)
	}
}

// streamWant is what the table tests expect of a recorded transcript; the
// fuzz targets check it again when the fuzzer hands them that transcript
// unchanged, so that a seed is known to be parsed correctly, not just
// without a panic.
type streamWant struct {
	text, session                 string
	isError, transient, permanent bool
	notFound                      bool
	message                       string // a part of ErrorMessage
	in, out                       int64
	// partial: the table test asserts only the non-zero text, session
	// and token fields above.
	partial bool
}

func (w streamWant) check(t *testing.T, r *Result) {
	t.Helper()
	if (string(r.Text) != w.text && (!w.partial || w.text != "")) ||
		(r.SessionID != w.session && (!w.partial || w.session != "")) {
		t.Errorf("Text %q session %q, want %q %q", r.Text, r.SessionID, w.text, w.session)
	}
	if r.IsError != w.isError || r.Transient != w.transient || r.Permanent != w.permanent || r.SessionNotFound != w.notFound {
		t.Errorf("is_error %v transient %v permanent %v not found %v, want %v %v %v %v",
			r.IsError, r.Transient, r.Permanent, r.SessionNotFound, w.isError, w.transient, w.permanent, w.notFound)
	}
	if !strings.Contains(r.ErrorMessage, w.message) {
		t.Errorf("ErrorMessage = %q, want it to contain %q", r.ErrorMessage, w.message)
	}
	if (r.InputTokens != w.in || r.OutputTokens != w.out) && (!w.partial || w.in != 0 || w.out != 0) {
		t.Errorf("tokens %d/%d, want %d/%d", r.InputTokens, r.OutputTokens, w.in, w.out)
	}
}

// streamSeed is one recorded output with what its parse must give, if the
// table tests say.
type streamSeed struct {
	stdout, stderr []byte
	want           *streamWant
}

// loadSeeds reads the named stdout files (and a .stderr beside each, if
// any), keyed by stdout+NUL+stderr.
func loadSeeds(f *testing.F, wants map[string]*streamWant, paths ...string) map[string]streamSeed {
	f.Helper()
	seeds := make(map[string]streamSeed)
	for _, p := range paths {
		stdout, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		stderr, err := os.ReadFile(strings.TrimSuffix(p, ".jsonl") + ".stderr")
		if err != nil && !os.IsNotExist(err) {
			f.Fatal(err)
		}
		seeds[string(stdout)+"\x00"+string(stderr)] = streamSeed{stdout: stdout, stderr: stderr, want: wants[p]}
		f.Add(stdout, stderr, uint8(6))
	}
	return seeds
}

// globSeeds lists the files matching pattern.
func globSeeds(f *testing.F, pattern string) []string {
	f.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds match %s: %v", pattern, err)
	}
	return paths
}

// addLineSeeds adds hand-written outputs without recorded expectations:
// odd lines a parser must survive.
func addLineSeeds(f *testing.F, lines ...string) {
	for i, l := range lines {
		f.Add([]byte(l), []byte(nil), uint8(i))
	}
}

func runStreamFuzz(f *testing.F, proto Protocol, seeds map[string]streamSeed) {
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, chunk uint8) {
		r := fuzzStream(t, proto, stdout, stderr, chunk)
		if s, ok := seeds[string(stdout)+"\x00"+string(stderr)]; ok && s.want != nil {
			s.want.check(t, r)
		}
	})
}

func FuzzClaudeStream(f *testing.F) {
	wants := map[string]*streamWant{
		"testdata/claude_success.jsonl": {text: `{"tasks": ["add cart", "add checkout"]}`,
			session: "6f1c2a4e-8d3b-4c7a-9e21-5b0d7f3a1c88", in: 11 + 9120 + 14200, out: 80}, // input_tokens and both cache figures
		"testdata/claude_overloaded.jsonl": {session: "a3d9e1f0-1111-4b2c-8d3e-222233334444",
			isError: true, transient: true, message: "overloaded_error", partial: true},
		"testdata/claude_help_escaped.jsonl": {text: "Waiting for guidance.",
			session: "5d4c3b2a-aaaa-4bbb-8ccc-dddddddddddd", in: 120, out: 40},
		"testdata/claude_result_not_last.jsonl": {text: `{"done": true}`, partial: true},
		"testdata/claude_untrusted.jsonl": {text: "Here: {\"ok\": true}\nsecond part",
			session: "77777777-8888-4999-8aaa-bbbbbbbbbbbb"},
	}
	paths := append(globSeeds(f, "testdata/claude_*.jsonl"), globSeeds(f, filepath.Join(transcriptDir, "claude", "*.jsonl"))...)
	seeds := loadSeeds(f, wants, paths...)
	addLineSeeds(f,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":"1e300"}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1771390800123.5}}`,
		`{"type":"result","is_error":true,"api_error_status":"-1e18","num_turns":"2147483648","errors":["a",1,"No conversation found"]}`,
		`{"type":"assistant","message":{"content":["x",{"type":"text","text":">>>HELP<<< {\"q\":1}"}]},"error":"rate_limit"}`,
		`{"type":"result","structured_output":null,"usage":{"input_tokens":-5,"output_tokens":1e30}}`,
		">>>HELP<<<\r\n\r\n{\"a\": [1]}\r\nNo conversation found\n",
	)
	runStreamFuzz(f, ProtocolClaudeStream, seeds)
}

func FuzzCodexStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "codex")
	wants := map[string]*streamWant{
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: "01a203de-079f-7fd0-a2e3-12edba764f94", in: 13859, out: 4},
		filepath.Join(dir, "resume.jsonl"): {text: `{"ok": true, "again": true}`,
			session: "01a203de-079f-7fd0-a2e3-12edba764f94", in: 27814, out: 11},
		filepath.Join(dir, "rate_limited_then_ok.jsonl"): {text: `{"ok": true}`,
			session: "01a203de-e0cd-7e31-bacc-6679f23e64d4", in: 13857, out: 4},
		filepath.Join(dir, "rate_limited.jsonl"): {session: "01a203de-6e1b-7460-a1d8-33935747fb25",
			isError: true, transient: true, message: "last status: 429 Too Many Requests"},
		filepath.Join(dir, "overloaded.jsonl"): {session: "01a203de-76fb-7010-8199-54d7d6852ce9",
			isError: true, transient: true, message: "unexpected status 529"},
		filepath.Join(dir, "auth.jsonl"): {session: "01a203de-7e1a-7141-b3c2-891b19fe8449",
			isError: true, permanent: true, message: "401 Unauthorized"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "no rollout found for thread id 4b9b3e52"},
	}
	// The hand-written failure transcripts too (their checks are in
	// TestCodexUsageLimits).
	paths := append(globSeeds(f, filepath.Join(dir, "*.jsonl")), globSeeds(f, "testdata/codex_*.jsonl")...)
	seeds := loadSeeds(f, wants, paths...)
	addLineSeeds(f,
		`{"type":"error","message":"stream error: 503 Service Unavailable"}`,
		`{"type":"turn.failed","error":"not an object"}`+"\n"+`{"type":"turn.completed","usage":{"input_tokens":"9e18"}}`,
		"not json\n{\"type\":\"item.completed\",\"item\":\"oops\"}\n{\"type\":\"turn.completed\",\"usage\":[1]}\n[1,2]",
		`{"type":"item.completed","item":{"type":"agent_message","text":"\u003e\u003e\u003eHELP\u003c\u003c\u003c\n{}"}}`,
	)
	runStreamFuzz(f, ProtocolCodexJSONL, seeds)
}

func FuzzGeminiStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "gemini")
	wants := map[string]*streamWant{
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: "918a5e13-4cb7-434f-8ee1-3576b981251b", in: 10617, out: 24},
		filepath.Join(dir, "resume.jsonl"): {text: `{"ok": true, "again": true}`,
			session: "918a5e13-4cb7-434f-8ee1-3576b981251b", in: 10697, out: 27},
		filepath.Join(dir, "rate_limited_then_ok.jsonl"): {text: `{"ok": true}`,
			session: "5b0c5392-b0cb-469f-bef7-3af4b807aadd", in: 10611, out: 24},
		filepath.Join(dir, "rate_limited.jsonl"): {session: "176d21ce-073d-4540-a2a9-18ed06e28546",
			isError: true, transient: true, in: 889, out: 20, message: "Rate limit exceeded"},
		filepath.Join(dir, "overloaded.jsonl"): {session: "3676040d-8bea-4c92-8ef8-3fbc4eb2a6ad",
			isError: true, transient: true, in: 888, out: 20, message: "Service Unavailable"},
		filepath.Join(dir, "auth.jsonl"): {session: "20d600ff-b2be-416f-be40-9ca045000942",
			isError: true, permanent: true, in: 883, out: 20, message: "UNAUTHENTICATED"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "Error resuming session: No previous sessions found"},
		filepath.Join(dir, "untrusted.jsonl"):       {},
	}
	paths := append(globSeeds(f, filepath.Join(dir, "*.jsonl")), globSeeds(f, "testdata/gemini_*.jsonl")...)
	seeds := loadSeeds(f, wants, paths...)
	addLineSeeds(f,
		`{"type":"result","status":"error","error":{"type":"RetryableQuotaError","message":"Suggested retry after 1500ms."}}`,
		`{"type":"result","status":"error","error":{"type":"TerminalQuotaError","message":"Your quota will reset after 99999h1m1s."}}`,
		`{"type":"result","status":"\u0000\ufffd","error":[]}`,
		`{"type":"result","status":"error","error":{"message":"retry in 86400000ms"}}`,
		`{"type":"message","role":"assistant","content":"stuck >>>HE"}`+"\n"+`{"type":"message","role":"assistant","content":"LP<<<\n{\"q\":"}`,
	)
	runStreamFuzz(f, ProtocolGeminiStream, seeds)
}

func FuzzQwenStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "qwen")
	const session = "d441224f-b792-4d5a-86ea-df79f57e0949"
	wants := map[string]*streamWant{
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: session, in: 30464, out: 12},
		filepath.Join(dir, "resume.jsonl"):  {text: `{"ok": true, "again": true}`, session: session, in: 61026, out: 27},
		filepath.Join(dir, "rate_limited.jsonl"): {session: "66dbe8b7-ef15-4125-b343-6f1df87a062d",
			isError: true, transient: true, message: "API Error: 429"},
		filepath.Join(dir, "auth.jsonl"): {session: "ac740a4d-7588-475d-8571-2c0205a1c858",
			isError: true, permanent: true, message: "API Error: 401"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "No saved session found with ID"},
	}
	paths := append(globSeeds(f, filepath.Join(dir, "*.jsonl")), globSeeds(f, "testdata/qwen_*.jsonl")...)
	seeds := loadSeeds(f, wants, paths...)
	addLineSeeds(f,
		`{"type":"result","is_error":true,"error":{"message":"Quota exhausted: the quota will reset after 99999h1m1s."}}`,
		`{"type":"result","is_error":true,"error":"[API Error: 429]"}`,
		`{"type":"result","is_error":false,"result":"{}","structured_result":{"a":[1,2,{"b":null}]}}`,
		`{"type":"result","is_error":false,"structured_result":"\u0000\ufffd","usage":{"input_tokens":-5,"cache_read_input_tokens":1e308}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"[API Error: 503 Service Unavailable]"}]}}`,
	)
	runStreamFuzz(f, ProtocolQwenStream, seeds)
}

func FuzzOpencodeStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "opencode")
	const session = "ses_de2fecf86ffebllsbo6kMSkQxa"
	wants := map[string]*streamWant{
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: session, in: 7706, out: 4},
		filepath.Join(dir, "resume.jsonl"):  {text: `{"ok": true, "again": true}`, session: session, in: 7746, out: 7},
		filepath.Join(dir, "auth.jsonl"): {session: "ses_de303212affe8x8gArNFAZfSYo",
			isError: true, permanent: true, message: "401 invalid API key"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "Session not found"},
	}
	paths := append(globSeeds(f, filepath.Join(dir, "*.jsonl")), globSeeds(f, "testdata/opencode_*.jsonl")...)
	seeds := loadSeeds(f, wants, paths...)
	addLineSeeds(f,
		`{"type":"error","error":{"name":"APIError","data":{"statusCode":"429","isRetryable":true,"responseHeaders":{"Retry-After":"Wed, 21 Oct 2099 07:28:00 GMT"}}}}`,
		`{"type":"error","error":{"data":{"statusCode":1e999,"responseHeaders":{"retry-after":"NaN"}}}}`,
		`{"type":"error","error":"boom"}`+"\n"+`{"type":"step_start"}`+"\n"+`{"type":"text","part":{"text":">>>HELP<<<"}}`,
		`{"type":"step_finish","part":{"tokens":{"input":-1,"output":1e308,"cache":{"read":"7"}},"cost":-3}}`,
	)
	runStreamFuzz(f, ProtocolOpencodeJSON, seeds)
}

func FuzzPiStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "pi")
	const session = "01a21d09-9c0a-7499-84f4-1bc552127549"
	wants := map[string]*streamWant{
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: session, in: 1405, out: 4},
		filepath.Join(dir, "resume.jsonl"):  {text: `{"ok": true, "again": true}`, session: session, in: 1451, out: 7},
		filepath.Join(dir, "rate_limited.jsonl"): {session: "01a21d0a-439c-738f-a5f0-8af3434d2933",
			isError: true, transient: true, message: "429 Rate limit exceeded"},
		filepath.Join(dir, "auth.jsonl"): {session: "01a21d0a-bb62-77ce-92e0-c6555ac74c4c",
			isError: true, permanent: true, message: "401 invalid API key"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "No session found matching"},
	}
	seeds := loadSeeds(f, wants, globSeeds(f, filepath.Join(dir, "*.jsonl"))...)
	addLineSeeds(f,
		`{"type":"message_end","message":{"role":"assistant","stopReason":"error"}}`,
		`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":">>>HELP<<<"},{"type":"text","text":"{}"}],"usage":{"input":-1,"cacheRead":1e308,"cost":{"total":"NaN"}}}}`,
		`{"type":"session","id":"--yolo"}`+"\n"+`{"type":"agent_end"}`,
	)
	runStreamFuzz(f, ProtocolPiJSON, seeds)
}

func FuzzCopilotStream(f *testing.F) {
	dir := filepath.Join(transcriptDir, "copilot")
	const session = "a2feccbd-d849-4508-a560-dc60abde86c5"
	wants := map[string]*streamWant{
		// Tokens come from the usage file, not the stream.
		filepath.Join(dir, "success.jsonl"): {text: `{"ok": true}`, session: session},
		filepath.Join(dir, "resume.jsonl"):  {text: `{"ok": true, "again": true}`, session: session},
		filepath.Join(dir, "rate_limited_then_ok.jsonl"): {text: `{"ok": true}`,
			session: "2a736e11-e693-491d-be24-8c47a7ed84e8"},
		filepath.Join(dir, "rate_limited.jsonl"): {session: "4a6f74e4-a879-42fb-b3a3-5c9a752e9e0a",
			isError: true, transient: true, message: "Last error: 429 Rate limit exceeded"},
		filepath.Join(dir, "overloaded.jsonl"): {session: "27574daa-c20f-485c-94dd-4f3000c6b606",
			isError: true, transient: true, message: "Last error: 503 Service Unavailable"},
		filepath.Join(dir, "auth.jsonl"): {session: "afab2e74-acc6-4e59-a0f0-ef29bd4c8842",
			isError: true, permanent: true, message: "Authentication failed with provider"},
		filepath.Join(dir, "unknown_session.jsonl"): {notFound: true, message: "No session, task, or name matched"},
	}
	seeds := loadSeeds(f, wants, globSeeds(f, filepath.Join(dir, "*.jsonl"))...)
	addLineSeeds(f,
		`{"type":"session.error","data":{"errorType":"quota","statusCode":"1e400"}}`,
		`{"type":"assistant.message","data":{"content":">>>HELP<<< {\"q\": 1}"}}`+"\n"+`{"type":"result","sessionId":"--yolo","exitCode":"x"}`,
		`{"type":"session.error","data":{"errorType":"rate_limit","message":"429 retry after 99999999999 seconds"}}`,
		`{"type":"assistant.message","data":{"content":null}}`+"\n"+`{"type":"session.error","data":null}`,
	)
	runStreamFuzz(f, ProtocolCopilotJSON, seeds)
}

// fuzzChatStatus maps any integer to a three-digit status, the only kind
// net/http's client hands back.
func fuzzChatStatus(n int) int {
	if n >= 100 && n <= 999 {
		return n
	}
	n %= 900
	if n < 0 {
		n = -n
	}
	return 100 + n
}

func FuzzChatResponse(f *testing.F) {
	seeds := []struct {
		status     int
		retryAfter string
		body       string
	}{
		{200, "", `{"choices":[{"message":{"role":"assistant","content":"{\"ok\": true}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5}}`},
		{200, "", `{"choices":[{"message":{"content":"cut"},"finish_reason":"length"}],"usage":{"prompt_tokens":-1,"completion_tokens":1e30}}`},
		{200, "", `{"choices":[]}`},
		{200, "", `not json`},
		{429, "2", `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`},
		{429, "1.5e300", `{"error":{"message":""}}`},
		{503, "Wed, 21 Oct 2015 07:28:00 GMT", `<html>upstream</html>`},
		{503, "Fri, 31 Dec 9999 23:59:59 GMT", ``},
		{503, "NaN", `{"error":{"message":"Service Unavailable"}}`},
		{400, "", `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported"}}`},
		{401, "", `{"error":{"message":"Incorrect API key provided"}}`},
		{500, "", strings.Repeat("x", 600)},
	}
	for _, s := range seeds {
		f.Add(s.status, s.retryAfter, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, retryAfterHeader string, body []byte) {
		code := fuzzChatStatus(status)
		resp := &http.Response{
			StatusCode: code,
			Status:     fmt.Sprintf("%d %s", code, http.StatusText(code)),
			Header:     http.Header{"Retry-After": []string{retryAfterHeader}},
		}
		o := classifyChat(resp, body, fuzzNow)

		textLimit := len(body)
		if !utf8.Valid(body) {
			textLimit = 3 * len(body)
		}
		if len(o.Text) > textLimit {
			t.Errorf("Text is %d bytes from a %d-byte body", len(o.Text), len(body))
		}
		// The message is the status, a fixed phrase and at most the
		// error's message or 500 bytes of the body.
		if limit := len(resp.Status) + max(textLimit, 503) + 128; len(o.ErrorMessage) > limit {
			t.Errorf("ErrorMessage is %d bytes from a %d-byte body", len(o.ErrorMessage), len(body))
		}
		if o.InputTokens < 0 || o.OutputTokens < 0 || o.Turns < 0 || o.Turns > 1 {
			t.Errorf("tokens %d/%d turns %d", o.InputTokens, o.OutputTokens, o.Turns)
		}
		if o.answered == o.IsError {
			t.Errorf("answered %v and is_error %v", o.answered, o.IsError)
		}
		if o.IsError && o.ErrorMessage == "" {
			t.Error("an error without a message")
		}
		if ok := code/100 == 2; ok && (o.Transient || o.Permanent) || !ok && o.answered {
			t.Errorf("status %d: answered %v transient %v permanent %v", code, o.answered, o.Transient, o.Permanent)
		}
		if o.Transient && o.Permanent {
			t.Errorf("status %d is both transient and permanent", code)
		}
		if o.schemaRejected && code != http.StatusBadRequest {
			t.Errorf("schema rejected by a %d", code)
		}
		if o.RetryAfter < 0 || (o.RetryAfter > 0 && !o.Transient) {
			t.Errorf("RetryAfter %v transient %v", o.RetryAfter, o.Transient)
		}
		if o.RetryAfter > 0 && !o.ResetAt.After(fuzzNow) {
			t.Errorf("RetryAfter %v but ResetAt %v is not after now", o.RetryAfter, o.ResetAt)
		}
		if o.RetryAfter == 0 && !o.ResetAt.IsZero() {
			t.Errorf("ResetAt %v without RetryAfter", o.ResetAt)
		}
	})
}

// helpFeeds are the ways the same decoded text reaches the help scanner:
// raw text output, and the text field of each stream protocol's events,
// JSON-escaped (<, > as \u003c, \u003e, as encoding/json writes them) or
// not. Gemini's answer arrives as deltas split at the given cuts.
func helpFeeds(text string, cuts []int, chunk int) map[string]*Result {
	feeds := map[string]*Result{}
	for _, escape := range []bool{true, false} {
		enc := func(v any) string {
			var b bytes.Buffer
			e := json.NewEncoder(&b)
			e.SetEscapeHTML(escape)
			_ = e.Encode(v) // strings and maps of strings always encode
			return b.String()
		}
		type m = map[string]any
		claude := enc(m{"type": "assistant", "message": m{"content": []m{{"type": "text", "text": text}}}})
		codex := enc(m{"type": "item.completed", "item": m{"type": "agent_message", "text": text}})
		var gemini strings.Builder
		prev := 0
		for _, c := range append(cuts, len(text)) {
			gemini.WriteString(enc(m{"type": "message", "role": "assistant", "content": text[prev:c], "delta": true}))
			prev = c
		}
		name := map[bool]string{true: "escaped", false: "raw"}[escape]
		feeds["claude/"+name] = feedPieces(ProtocolClaudeStream, chunked([]byte(claude), chunk), nil)
		feeds["codex/"+name] = feedPieces(ProtocolCodexJSONL, chunked([]byte(codex), chunk), nil)
		feeds["gemini/"+name] = feedPieces(ProtocolGeminiStream, chunked([]byte(gemini.String()), chunk), nil)
	}
	feeds["text"] = feedPieces(ProtocolText, chunked([]byte(text), chunk), nil)
	return feeds
}

// runeCut moves i back to the start of the rune it falls in, so that a cut
// never splits a UTF-8 sequence across two deltas.
func runeCut(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func FuzzHelpMarker(f *testing.F) {
	f.Add("I cannot decide this alone.\n", "\n{\"question\": \"which db?\", \"options\": [\"postgres\", \"sqlite\"]}", false, uint16(3), uint16(20), uint8(7))
	f.Add("working\n", "\n\n\r\n{\"a\": [1]}\nmore\n", false, uint16(0), uint16(0), uint8(1))
	f.Add("note ", " {\"q\": 1}", false, uint16(9), uint16(2), uint8(64))
	f.Add("stuck ", "\n{\"q\":\n 1}", true, uint16(6), uint16(12), uint8(5))
	f.Add("\\u003e\\u003e\\u003eHELP\\u003c\\u003c\\u003c\n", "{}", true, uint16(1), uint16(40), uint8(3))
	f.Add(">>>HELP<<<\n{\"first\": 1}\n", "\n{\"second\": 2}", false, uint16(4), uint16(30), uint8(2))
	f.Fuzz(func(t *testing.T, before, after string, escapedOnly bool, cutA, cutB uint16, chunk uint8) {
		// Event text is JSON, which carries only valid UTF-8.
		before, after = strings.ToValidUTF8(before, "\uFFFD"), strings.ToValidUTF8(after, "\uFFFD")
		marker := DefaultHelpMarker
		if escapedOnly {
			// The marker as escaped JSON text is not the marker: only
			// decoding reveals it, and here nothing decodes it.
			marker = `\u003e\u003e\u003eHELP\u003c\u003c\u003c`
		}
		text := before + marker + after
		cuts := []int{runeCut(text, int(cutA)%(len(text)+1)), runeCut(text, int(cutB)%(len(text)+1))}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		wantHelp := strings.Contains(text, DefaultHelpMarker)
		feeds := helpFeeds(text, cuts, int(chunk)%64+1)
		ref := feeds["text"]
		if ref.Help != wantHelp {
			t.Fatalf("text output: Help = %v, want %v for %q", ref.Help, wantHelp, text)
		}
		if ref.HelpContext != nil && !json.Valid(ref.HelpContext) {
			t.Fatalf("HelpContext %q is not JSON", ref.HelpContext)
		}
		whole := feedPieces(ProtocolText, [][]byte{[]byte(text)}, nil)
		if whole.Help != ref.Help || !bytes.Equal(whole.HelpContext, ref.HelpContext) {
			t.Fatalf("text output in one chunk: Help %v context %q, in pieces %v %q", whole.Help, whole.HelpContext, ref.Help, ref.HelpContext)
		}
		for name, r := range feeds {
			if r.Help != ref.Help || !bytes.Equal(r.HelpContext, ref.HelpContext) {
				t.Errorf("%s: Help %v context %q, text output gives %v %q", name, r.Help, r.HelpContext, ref.Help, ref.HelpContext)
			}
		}
	})
}
