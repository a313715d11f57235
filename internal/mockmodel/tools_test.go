package mockmodel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestResolveRealDeclarations maps each operation onto the tools that the
// real CLIs declared in the first turn of a tool-using session (the
// fixtures TestAgentCLIToolUse saves), and checks the tool and the
// arguments chosen.
func TestResolveRealDeclarations(t *testing.T) {
	const p = "/home/user/project/f.txt"
	tests := []struct {
		name    string
		fixture string
		api     API
		call    ToolCall
		tool    string
		check   func(t *testing.T, u toolUse)
		noTool  bool
	}{
		{name: "claude read whole", fixture: "claude_tools_request.json", api: Anthropic, call: ReadFile(p), tool: "Read",
			check: args(map[string]any{"file_path": p, "allow_large": true})},
		{name: "claude read lines", fixture: "claude_tools_request.json", api: Anthropic, call: ReadLines(p, 3, 2), tool: "Read",
			check: args(map[string]any{"file_path": p, "offset": 3, "limit": 2})},
		{name: "claude shell", fixture: "claude_tools_request.json", api: Anthropic, call: ToolCall{Op: OpShell, Command: "make", Timeout: 1500e6}, tool: "Bash",
			check: argsHave(map[string]any{"command": "make", "timeout": 1500})},
		{name: "claude write", fixture: "claude_tools_request.json", api: Anthropic, call: WriteFile(p, "x\n"), tool: "Write",
			check: args(map[string]any{"file_path": p, "content": "x\n"})},
		{name: "claude edit", fixture: "claude_tools_request.json", api: Anthropic, call: EditFile(p, "a", "b"), tool: "Edit",
			check: args(map[string]any{"file_path": p, "old_string": "a", "new_string": "b"})},

		{name: "codex code mode read", fixture: "codex_tools_request.json", api: Responses, call: ReadLines(p, 3, 2), tool: "exec",
			check: script("tools.exec_command(", `"cmd":"sed -n '3,4p' '/home/user/project/f.txt'"`)},
		{name: "codex code mode shell", fixture: "codex_tools_request.json", api: Responses, call: Shell("go test ./..."), tool: "exec",
			check: script("tools.exec_command(", `"cmd":"go test ./..."`, "text(r.output)")},
		{name: "codex code mode write", fixture: "codex_tools_request.json", api: Responses, call: WriteFile(p, "one\ntwo\n"), tool: "exec",
			check: script("tools.apply_patch(", `*** Add File: /home/user/project/f.txt\n+one\n+two\n*** End Patch`)},
		{name: "codex code mode edit", fixture: "codex_tools_request.json", api: Responses, call: EditFile(p, "old", "new"), tool: "exec",
			check: script("tools.apply_patch(", `*** Update File: /home/user/project/f.txt\n@@\n-old\n+new\n*** End Patch`)},

		{name: "codex functions read", fixture: "codex_functions_tools_request.json", api: Responses, call: ReadFile(p), tool: "exec_command",
			check: argsHave(map[string]any{"cmd": "cat -- '/home/user/project/f.txt'"})},
		{name: "codex functions write", fixture: "codex_functions_tools_request.json", api: Responses, call: WriteFile(p, "it's\n"), tool: "exec_command",
			check: argsHave(map[string]any{"cmd": `printf '%s' 'it'\''s` + "\n" + `' > '/home/user/project/f.txt'`})},
		{name: "codex functions edit", fixture: "codex_functions_tools_request.json", api: Responses, call: EditFile(p, "a", "b"), noTool: true},

		{name: "gemini read lines", fixture: "gemini_tools_request.json", api: Gemini, call: ReadLines(p, 3, 2), tool: "read_file",
			check: args(map[string]any{"file_path": p, "start_line": 3, "end_line": 4})},
		{name: "gemini shell", fixture: "gemini_tools_request.json", api: Gemini, call: Shell("ls"), tool: "run_shell_command",
			check: argsHave(map[string]any{"command": "ls"})},
		{name: "gemini write", fixture: "gemini_tools_request.json", api: Gemini, call: WriteFile(p, "x"), tool: "write_file",
			check: args(map[string]any{"file_path": p, "content": "x"})},
		{name: "gemini edit", fixture: "gemini_tools_request.json", api: Gemini, call: EditFile(p, "a", "b"), tool: "replace",
			check: argsHave(map[string]any{"file_path": p, "old_string": "a", "new_string": "b"})},
		// Without --approval-mode yolo, Gemini CLI declares no shell.
		{name: "gemini without yolo: shell", fixture: "gemini_resume_request.json", api: Gemini, call: Shell("ls"), noTool: true},
		{name: "gemini without yolo: read", fixture: "gemini_resume_request.json", api: Gemini, call: ReadFile(p), tool: "read_file",
			check: args(map[string]any{"file_path": p})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRequest(t, tt.fixture, tt.api, "/")
			u, err := resolveTool(r, tt.call, "call_1")
			if tt.noTool {
				var e errNoTool
				if !errors.As(err, &e) || len(e.declared) == 0 {
					t.Fatalf("err = %v, want errNoTool listing the declared tools", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != tt.tool || u.ID != "call_1" {
				t.Errorf("tool %q id %q, want %q call_1", u.Name, u.ID, tt.tool)
			}
			tt.check(t, u)
		})
	}
}

// args checks that a call's arguments are exactly want, compared as JSON.
func args(want map[string]any) func(*testing.T, toolUse) {
	return func(t *testing.T, u toolUse) {
		t.Helper()
		if got, w := jsonString(u.Args), jsonString(want); got != w {
			t.Errorf("args = %s, want %s", got, w)
		}
	}
}

// argsHave checks that a call's arguments include want.
func argsHave(want map[string]any) func(*testing.T, toolUse) {
	return func(t *testing.T, u toolUse) {
		t.Helper()
		for k, v := range want {
			if got, w := jsonString(u.Args[k]), jsonString(v); got != w {
				t.Errorf("args[%s] = %s, want %s", k, got, w)
			}
		}
	}
}

// script checks that a code-mode call's JavaScript holds each part.
func script(parts ...string) func(*testing.T, toolUse) {
	return func(t *testing.T, u toolUse) {
		t.Helper()
		if !u.Custom {
			t.Errorf("not a custom tool call: %+v", u)
		}
		for _, p := range parts {
			if !strings.Contains(u.Input, p) && !strings.Contains(u.Input, jsonString(p)[1:len(jsonString(p))-1]) {
				t.Errorf("script lacks %q:\n%s", p, u.Input)
			}
		}
	}
}

// bigContent is longer than two stream chunks, so that a tool call's input
// must be put together from several deltas.
var bigContent = strings.Repeat("0123456789abcdef\n", 3*jsonChunk/16)

// TestToolCallOnTheWire checks, for each API, streamed and not, that a
// scripted call arrives in the shape clients parse: the tool's name, the
// call id, and input that adds up to the arguments.
func TestToolCallOnTheWire(t *testing.T) {
	const path = "/p/big.txt"
	wantArgs := map[string]any{"file_path": path, "content": bigContent}
	tests := []struct {
		name string
		url  string
		body string
		// call extracts the tool name, call id and input (JSON arguments
		// or free-form text) from the response body.
		call func(t *testing.T, body string, stream bool) (name, id, input string)
		want string // the input
	}{
		{"anthropic stream", "/v1/messages", `{"stream":true,"tools":[{"name":"Write"}],"messages":[{"role":"user","content":"go"}]}`,
			anthropicCall, jsonString(wantArgs)},
		{"anthropic plain", "/v1/messages", `{"tools":[{"name":"Write"}],"messages":[{"role":"user","content":"go"}]}`,
			anthropicCall, jsonString(wantArgs)},
		{"gemini stream", "/v1beta/models/g:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"write_file"}]}],"contents":[{"role":"user","parts":[{"text":"go"}]}]}`,
			geminiCall, jsonString(wantArgs)},
		{"gemini plain", "/v1beta/models/g:generateContent", `{"tools":[{"functionDeclarations":[{"name":"write_file"}]}],"contents":[{"role":"user","parts":[{"text":"go"}]}]}`,
			geminiCall, jsonString(wantArgs)},
		{"responses function stream", "/v1/responses", `{"stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":"go"}`,
			responsesCall, jsonString(map[string]any{"cmd": shellWrite(path, bigContent), "yield_time_ms": 30000})},
		{"responses function plain", "/v1/responses", `{"tools":[{"type":"function","name":"shell"}],"input":"go"}`,
			responsesCall, jsonString(map[string]any{"command": []string{"bash", "-c", shellWrite(path, bigContent)}})},
		{"responses custom stream", "/v1/responses", `{"stream":true,"tools":[{"type":"custom","name":"apply_patch"}],"input":"go"}`,
			responsesCall, "*** Begin Patch\n*** Add File: " + path + "\n+" + strings.ReplaceAll(strings.TrimSuffix(bigContent, "\n"), "\n", "\n+") + "\n*** End Patch\n"},
		{"responses local shell", "/v1/responses", `{"stream":true,"tools":[{"type":"local_shell"}],"input":"go"}`,
			responsesCall, jsonString([]string{"bash", "-c", shellWrite(path, bigContent)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Call(WriteFile(path, bigContent)))
			resp := post(t, context.Background(), s, tt.url, tt.body, nil)
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			stream := resp.Header.Get("Content-Type") == "text/event-stream"
			name, id, input := tt.call(t, string(b), stream)
			rec := s.Turns()[0]
			if name != rec.ToolName || id != rec.ToolID || id != "call_mock_0001" {
				t.Errorf("call %q %q, recorded %q %q, want id call_mock_0001", name, id, rec.ToolName, rec.ToolID)
			}
			if input != tt.want {
				t.Errorf("input (%d bytes) differs from the arguments (%d bytes):\n%.200s", len(input), len(tt.want), input)
			}
		})
	}
}

// events decodes a response body: the data of each event of a stream, or
// the one JSON document of a plain answer.
func events(t *testing.T, body string, stream bool) []map[string]any {
	t.Helper()
	if !stream {
		var v map[string]any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		return []map[string]any{v}
	}
	var out []map[string]any
	for _, e := range readSSE(t, strings.NewReader(body)) {
		var v map[string]any
		if err := json.Unmarshal([]byte(e.data), &v); err != nil {
			t.Fatalf("decode event %s: %v", e.data, err)
		}
		out = append(out, v)
	}
	return out
}

// anthropicCall reads a tool_use block: from content_block_start and the
// input_json_delta pieces of a stream, or from the message's content.
func anthropicCall(t *testing.T, body string, stream bool) (name, id, input string) {
	t.Helper()
	evs := events(t, body, stream)
	if !stream {
		block, _ := field(evs[0], "content", 0).(map[string]any)
		if evs[0]["stop_reason"] != "tool_use" || block["type"] != "tool_use" {
			t.Errorf("message %v, want a tool_use block and stop_reason tool_use", evs[0])
		}
		name, _ = block["name"].(string)
		id, _ = block["id"].(string)
		return name, id, jsonString(block["input"])
	}
	var b strings.Builder
	var stop any
	for _, e := range evs {
		switch e["type"] {
		case "content_block_start":
			name, _ = field(e, "content_block", "name").(string)
			id, _ = field(e, "content_block", "id").(string)
		case "content_block_delta":
			if field(e, "delta", "type") != "input_json_delta" {
				t.Errorf("delta %v in a tool_use block", e["delta"])
			}
			s, _ := field(e, "delta", "partial_json").(string)
			b.WriteString(s)
		case "message_delta":
			stop = field(e, "delta", "stop_reason")
		}
	}
	if stop != "tool_use" {
		t.Errorf("stop_reason %v, want tool_use", stop)
	}
	return name, id, canonical(t, b.String())
}

// geminiCall reads the functionCall part of the answer's candidate.
func geminiCall(t *testing.T, body string, stream bool) (name, id, input string) {
	t.Helper()
	evs := events(t, body, stream)
	for _, e := range evs {
		fc, ok := field(e, "candidates", 0, "content", "parts", 0, "functionCall").(map[string]any)
		if !ok {
			continue
		}
		name, _ = fc["name"].(string)
		id, _ = fc["id"].(string)
		input = jsonString(fc["args"])
	}
	if field(evs[len(evs)-1], "candidates", 0, "finishReason") != "STOP" {
		t.Errorf("last chunk %v lacks finishReason STOP", evs[len(evs)-1])
	}
	return name, id, input
}

// responsesCall reads the tool call output item: from the deltas and the
// output_item.done of a stream (which must agree), or from the output.
func responsesCall(t *testing.T, body string, stream bool) (name, id, input string) {
	t.Helper()
	evs := events(t, body, stream)
	var item map[string]any
	var deltas strings.Builder
	for _, e := range evs {
		switch typ, _ := e["type"].(string); {
		case !stream:
			item, _ = field(e, "output", 0).(map[string]any)
		case strings.HasSuffix(typ, ".delta"):
			s, _ := e["delta"].(string)
			deltas.WriteString(s)
		case typ == "response.output_item.done":
			item, _ = e["item"].(map[string]any)
		case typ == "response.completed":
			if done, _ := field(e, "response", "output", 0, "call_id").(string); done == "" {
				t.Errorf("response.completed lacks the call: %v", e)
			}
		}
	}
	name, _ = item["name"].(string)
	id, _ = item["call_id"].(string)
	switch item["type"] {
	case "function_call":
		input, _ = item["arguments"].(string)
		input = canonical(t, input)
	case "custom_tool_call":
		input, _ = item["input"].(string)
	case "local_shell_call":
		name = "local_shell"
		input = jsonString(field(item, "action", "command"))
	default:
		t.Fatalf("output item %v is no tool call", item)
	}
	if stream && item["type"] != "local_shell_call" {
		got := deltas.String()
		if item["type"] == "function_call" {
			got = canonical(t, got)
		}
		if got != input {
			t.Errorf("deltas (%d bytes) differ from the done item (%d bytes)", len(got), len(input))
		}
	}
	return name, id, input
}

// canonical re-encodes a JSON document the way jsonString does.
func canonical(t *testing.T, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("tool input is not JSON: %v\n%.200s", err, doc)
	}
	return jsonString(v)
}

// TestSessionTurns checks that a session's turns take its calls in order,
// each with a new id, then the final answer, and that side requests take
// none of them.
func TestSessionTurns(t *testing.T) {
	s := Start(t, Session(`{"ok": true}`, ReadFile("/a"), Shell("ls"), WriteFile("/b", "x"))...)
	ctx := context.Background()
	turn := `{"tools":[{"name":"Read"},{"name":"Bash"},{"name":"Write"}],"messages":[{"role":"user","content":"go"}]}`
	var got []string
	for range 5 {
		resp := post(t, ctx, s, "/v1/messages", turn, nil)
		b, _ := io.ReadAll(resp.Body)
		block, _ := field(decode(t, string(b)), "content", 0).(map[string]any)
		got = append(got, fmtBlock(block))
		post(t, ctx, s, "/v1/messages/count_tokens", turn, nil)
	}
	want := []string{"Read call_mock_0001", "Bash call_mock_0002", "Write call_mock_0003", `text {"ok": true}`, `text {"ok": true}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers = %q, want %q", got, want)
	}
}

func fmtBlock(b map[string]any) string {
	if b["type"] == "tool_use" {
		return b["name"].(string) + " " + b["id"].(string)
	}
	return "text " + b["text"].(string)
}

// TestNoToolForTheCall: a turn whose request declares no tool that can do
// the scripted call is answered with a 400 that says so, naming the tools
// that were declared.
func TestNoToolForTheCall(t *testing.T) {
	s := Start(t, Call(Shell("ls")))
	resp := post(t, context.Background(), s, "/v1beta/models/g:streamGenerateContent?alt=sse",
		`{"tools":[{"functionDeclarations":[{"name":"read_file"},{"name":"glob"}]}],"contents":[]}`, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, b)
	}
	msg, _ := field(decode(t, string(b)), "error", "message").(string)
	for _, want := range []string{"no tool to shell ls", "read_file, glob"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestToolResults reads the results a request carries back, in each API.
func TestToolResults(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
		want []ToolResult
	}{
		{"anthropic", Anthropic, `{"messages":[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"one"}]}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"two","is_error":true}]}]}`,
			[]ToolResult{{"a", "one", false}, {"b", "two", true}}},
		{"responses", Responses, `{"input":[{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{}"},
			{"type":"function_call_output","call_id":"a","output":"one"},
			{"type":"custom_tool_call_output","call_id":"b","output":[{"type":"input_text","text":"two"}]},
			{"type":"local_shell_call_output","call_id":"c","output":"three"}]}`,
			[]ToolResult{{"a", "one", false}, {"b", "two", false}, {"c", "three", false}}},
		{"gemini", Gemini, `{"contents":[{"role":"model","parts":[{"functionCall":{"id":"a","name":"read_file","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"a","name":"read_file","response":{"output":"one"}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"b","name":"x","response":{"error":"bad"}}}]}]}`,
			[]ToolResult{{"a", "one", false}, {"b", `{"error":"bad"}`, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{API: tt.api, Body: []byte(tt.body)}
			if err := json.Unmarshal(r.Body, &r.JSON); err != nil {
				t.Fatal(err)
			}
			got := r.ToolResults()
			if len(got) != len(tt.want) {
				t.Fatalf("results %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("result %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestClassifyCompaction: a request for a summary of the conversation, as
// Codex and Claude Code send when the context fills up, is a side request,
// whatever came before it.
func TestClassifyCompaction(t *testing.T) {
	tests := []struct {
		name, path, body, want string
	}{
		{"codex", "/v1/responses", `{"input":[{"type":"function_call_output","call_id":"a","output":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary."}]}]}`, KindCompact},
		{"claude", "/v1/messages", `{"messages":[{"role":"user","content":[{"type":"text","text":"Your task is to create a detailed summary of the conversation so far, paying close attention"}]}]}`, KindCompact},
		{"an ordinary turn", "/v1/responses", `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Summarise the file."}]}]}`, KindTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{API: route(tt.path), Path: tt.path}
			if err := json.Unmarshal([]byte(tt.body), &r.JSON); err != nil {
				t.Fatal(err)
			}
			if got := classify(r); got != tt.want {
				t.Errorf("classify = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestClassifyLoopCheck: Gemini CLI's loop check is a side request.
func TestClassifyLoopCheck(t *testing.T) {
	r := Request{API: Gemini, Path: "/v1beta/models/gemini-x:generateContent"}
	body := `{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"object","properties":{"unproductive_state_analysis":{"type":"string"},"unproductive_state_confidence":{"type":"number"}}}}}`
	if err := json.Unmarshal([]byte(body), &r.JSON); err != nil {
		t.Fatal(err)
	}
	if got := classify(r); got != KindLoopCheck {
		t.Errorf("classify = %q, want %q", got, KindLoopCheck)
	}
}
