package agent_test

import (
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		name      string
		inv       agent.Invocation
		wantArgv  []string
		wantStdin string // "<nil>" for no stdin
		wantProto agent.Protocol
	}{
		{
			name:      "claude new session",
			inv:       agent.Invocation{Preset: "claude", Prompt: "plan it", SessionID: "S1", Args: []string{"--model", "sonnet"}},
			wantArgv:  []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--session-id=S1", "--model", "sonnet"},
			wantStdin: "plan it", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "claude resume",
			inv:       agent.Invocation{Preset: "claude", Prompt: "fix it", SessionID: "S1", Resume: true},
			wantArgv:  []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--resume=S1"},
			wantStdin: "fix it", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "claude with pinned command",
			inv:       agent.Invocation{Preset: "claude", Command: []string{"/opt/claude/bin/claude"}, Prompt: "p"},
			wantArgv:  []string{"/opt/claude/bin/claude", "-p", "--output-format", "stream-json", "--verbose"},
			wantStdin: "p", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name: "claude native schema",
			inv: agent.Invocation{Preset: "claude", Prompt: "p", SessionID: "S1", NativeSchema: true,
				SchemaJSON: []byte("{\n  \"type\": \"object\"\n}\n"), Args: []string{"--model", "opus"}},
			wantArgv:  []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--session-id=S1", "--json-schema", `{"type":"object"}`, "--model", "opus"},
			wantStdin: "p", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "claude schema without native_schema",
			inv:       agent.Invocation{Preset: "claude", Prompt: "p", SchemaJSON: []byte(`{"type":"object"}`)},
			wantArgv:  []string{"claude", "-p", "--output-format", "stream-json", "--verbose"},
			wantStdin: "p", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "codex new thread ignores the proposed session id",
			inv:       agent.Invocation{Preset: "codex", Prompt: "plan", SessionID: "S9", Args: []string{"-m", "gpt-5", "--sandbox", "workspace-write"}},
			wantArgv:  []string{"codex", "exec", "--json", "--skip-git-repo-check", "-m", "gpt-5", "--sandbox", "workspace-write", "-"},
			wantStdin: "plan", wantProto: agent.ProtocolCodexJSONL,
		},
		{
			name:      "codex resume repeats the sandbox after resume",
			inv:       agent.Invocation{Preset: "codex", Command: []string{"/opt/codex"}, Prompt: "fix", SessionID: "T1", Resume: true, Args: []string{"-c", "model_provider=mock", "-s", "read-only"}},
			wantArgv:  []string{"/opt/codex", "exec", "--json", "--skip-git-repo-check", "-c", "model_provider=mock", "-s", "read-only", "resume", "-c", "sandbox_mode=read-only", "T1", "-"},
			wantStdin: "fix", wantProto: agent.ProtocolCodexJSONL,
		},
		{
			name: "codex native schema",
			inv: agent.Invocation{Preset: "codex", Prompt: "fix", SessionID: "T1", Resume: true, NativeSchema: true,
				SchemaJSON: []byte(`{"type":"object"}`), SchemaFile: "/p/.cadence/attempts/R/s/2.schema.json", Args: []string{"-s", "read-only"}},
			wantArgv: []string{"codex", "exec", "--json", "--skip-git-repo-check", "--output-schema", "/p/.cadence/attempts/R/s/2.schema.json",
				"-s", "read-only", "resume", "-c", "sandbox_mode=read-only", "T1", "-"},
			wantStdin: "fix", wantProto: agent.ProtocolCodexJSONL,
		},
		{
			name:      "codex schema file without native_schema",
			inv:       agent.Invocation{Preset: "codex", Prompt: "p", SchemaFile: "/s.json"},
			wantArgv:  []string{"codex", "exec", "--json", "--skip-git-repo-check", "-"},
			wantStdin: "p", wantProto: agent.ProtocolCodexJSONL,
		},
		{
			name:      "codex resume without a sandbox",
			inv:       agent.Invocation{Preset: "codex", Prompt: "fix", SessionID: "T1", Resume: true, Args: []string{"--sandbox=danger-full-access", "--sandbox="}},
			wantArgv:  []string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox=danger-full-access", "--sandbox=", "resume", "T1", "-"},
			wantStdin: "fix", wantProto: agent.ProtocolCodexJSONL,
		},
		{
			name:      "gemini new session",
			inv:       agent.Invocation{Preset: "gemini", Prompt: "plan", SessionID: "S9", Args: []string{"-m", "gemini-2.5-pro"}},
			wantArgv:  []string{"gemini", "-o", "stream-json", "--approval-mode", "yolo", "--skip-trust", "-m", "gemini-2.5-pro"},
			wantStdin: "plan", wantProto: agent.ProtocolGeminiStream,
		},
		{
			name:      "qwen new session",
			inv:       agent.Invocation{Preset: "qwen", Prompt: "plan", SessionID: "Q1", Args: []string{"--auth-type", "openai"}},
			wantArgv:  []string{"qwen", "-o", "stream-json", "--approval-mode", "yolo", "--session-id=Q1", "--auth-type", "openai"},
			wantStdin: "plan", wantProto: agent.ProtocolQwenStream,
		},
		{
			name:      "qwen resume with its own approval mode",
			inv:       agent.Invocation{Preset: "qwen", Command: []string{"/opt/qwen"}, Prompt: "fix", SessionID: "Q1", Resume: true, Args: []string{"-y"}},
			wantArgv:  []string{"/opt/qwen", "-o", "stream-json", "--resume=Q1", "-y"},
			wantStdin: "fix", wantProto: agent.ProtocolQwenStream,
		},
		{
			name: "qwen native schema",
			inv: agent.Invocation{Preset: "qwen", Prompt: "p", SessionID: "Q1", NativeSchema: true,
				SchemaJSON: []byte("{\n  \"type\": \"object\"\n}\n")},
			wantArgv:  []string{"qwen", "-o", "stream-json", "--approval-mode", "yolo", "--session-id=Q1", "--json-schema", `{"type":"object"}`},
			wantStdin: "p", wantProto: agent.ProtocolQwenStream,
		},
		{
			name:      "opencode new session ignores the proposed session id",
			inv:       agent.Invocation{Preset: "opencode", Prompt: "plan", SessionID: "S9", Args: []string{"-m", "mock/m1"}},
			wantArgv:  []string{"opencode", "run", "--format", "json", "-m", "mock/m1"},
			wantStdin: "plan", wantProto: agent.ProtocolOpencodeJSON,
		},
		{
			name:      "opencode resume",
			inv:       agent.Invocation{Preset: "opencode", Command: []string{"/opt/opencode"}, Prompt: "fix", SessionID: "ses_1", Resume: true},
			wantArgv:  []string{"/opt/opencode", "run", "--format", "json", "--session=ses_1"},
			wantStdin: "fix", wantProto: agent.ProtocolOpencodeJSON,
		},
		{
			name:      "pi new session",
			inv:       agent.Invocation{Preset: "pi", Prompt: "plan", SessionID: "S9", Args: []string{"--provider", "mock"}},
			wantArgv:  []string{"pi", "-p", "--mode", "json", "--provider", "mock"},
			wantStdin: "plan", wantProto: agent.ProtocolPiJSON,
		},
		{
			name:      "pi resume",
			inv:       agent.Invocation{Preset: "pi", Prompt: "fix", SessionID: "01a21d09-9c0a", Resume: true},
			wantArgv:  []string{"pi", "-p", "--mode", "json", "--session", "01a21d09-9c0a"},
			wantStdin: "fix", wantProto: agent.ProtocolPiJSON,
		},
		{
			name:      "copilot new session",
			inv:       agent.Invocation{Preset: "copilot", Prompt: "--yolo plan", SessionID: "0cb916db-26aa-40f2-86b5-1ba81b225fd2", Args: []string{"--model", "m1"}},
			wantArgv:  []string{"copilot", "--output-format", "json", "--allow-all-tools", "--session-id=0cb916db-26aa-40f2-86b5-1ba81b225fd2", "--model", "m1"},
			wantStdin: "--yolo plan", wantProto: agent.ProtocolCopilotJSON,
		},
		{
			name:      "copilot resume with its own permissions",
			inv:       agent.Invocation{Preset: "copilot", Command: []string{"/opt/copilot"}, Prompt: "fix", SessionID: "C1", Resume: true, Args: []string{"--allow-tool=shell(git:*)"}},
			wantArgv:  []string{"/opt/copilot", "--output-format", "json", "--resume=C1", "--allow-tool=shell(git:*)"},
			wantStdin: "fix", wantProto: agent.ProtocolCopilotJSON,
		},
		{
			name:      "gemini resume with its own approval mode",
			inv:       agent.Invocation{Preset: "gemini", Prompt: "fix", SessionID: "G1", Resume: true, Args: []string{"--approval-mode=auto_edit"}},
			wantArgv:  []string{"gemini", "-o", "stream-json", "--skip-trust", "--resume=G1", "--approval-mode=auto_edit"},
			wantStdin: "fix", wantProto: agent.ProtocolGeminiStream,
		},
		{
			name:      "sim new session",
			inv:       agent.Invocation{Preset: "sim", SelfExe: "/usr/bin/cadence", Scenario: "sc.yaml", SessionID: "S2", Prompt: "go", Args: []string{"--ledger", "l.jsonl"}},
			wantArgv:  []string{"/usr/bin/cadence", "agent", "sim", "--scenario", "sc.yaml", "--session-id=S2", "--ledger", "l.jsonl"},
			wantStdin: "go", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "sim resume",
			inv:       agent.Invocation{Preset: "sim", SelfExe: "/usr/bin/cadence", Scenario: "sc.yaml", SessionID: "S2", Resume: true},
			wantArgv:  []string{"/usr/bin/cadence", "agent", "sim", "--scenario", "sc.yaml", "--resume=S2"},
			wantStdin: "", wantProto: agent.ProtocolClaudeStream,
		},
		{
			name:      "exec prompt on stdin",
			inv:       agent.Invocation{Preset: "exec", Command: []string{"./lint.sh", "-q"}, Args: []string{"--fast"}, ContinueArgs: []string{"--continue"}, Prompt: "p"},
			wantArgv:  []string{"./lint.sh", "-q", "--fast"},
			wantStdin: "p", wantProto: agent.ProtocolText,
		},
		{
			name:      "exec prompt as last argument on a continued session",
			inv:       agent.Invocation{Preset: "exec", Command: []string{"aider"}, Args: []string{"--yes"}, ContinueArgs: []string{"--restore-chat-history"}, Prompt: "do it", PromptVia: "arg", SessionID: "S3", Resume: true},
			wantArgv:  []string{"aider", "--yes", "--restore-chat-history", "do it"},
			wantStdin: "<nil>", wantProto: agent.ProtocolText,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, stdin, proto, err := agent.Command(tt.inv)
			if err != nil {
				t.Fatalf("Command: %v", err)
			}
			if !slices.Equal(argv, tt.wantArgv) {
				t.Errorf("argv = %q\nwant   %q", argv, tt.wantArgv)
			}
			gotStdin := string(stdin)
			if stdin == nil {
				gotStdin = "<nil>"
			}
			if gotStdin != tt.wantStdin || proto != tt.wantProto {
				t.Errorf("stdin %q proto %q, want %q %q", gotStdin, proto, tt.wantStdin, tt.wantProto)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		inv  agent.Invocation
		want error
	}{
		{"unknown preset", agent.Invocation{Preset: "cursor"}, agent.ErrUnknownPreset},
		{"resume without session", agent.Invocation{Preset: "claude", Resume: true}, agent.ErrInvocation},
		{"sim without scenario", agent.Invocation{Preset: "sim", SelfExe: "/x"}, agent.ErrInvocation},
		{"sim without binary", agent.Invocation{Preset: "sim", Scenario: "s.yaml"}, agent.ErrInvocation},
		{"exec without command", agent.Invocation{Preset: "exec"}, agent.ErrInvocation},
		{"exec bad prompt_via", agent.Invocation{Preset: "exec", Command: []string{"x"}, PromptVia: "file"}, agent.ErrInvocation},
		{"openai is not a process", agent.Invocation{Preset: "openai", Prompt: "p"}, agent.ErrInvocation},
		{"codex resume without session", agent.Invocation{Preset: "codex", Resume: true}, agent.ErrInvocation},
		{"claude native schema not JSON", agent.Invocation{Preset: "claude", NativeSchema: true, SchemaJSON: []byte("{")}, agent.ErrInvocation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, err := agent.Command(tt.inv); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewSessionID(t *testing.T) {
	uuid4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := agent.NewSessionID()
		if !uuid4.MatchString(id) {
			t.Fatalf("NewSessionID() = %q, not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewSessionID() repeated %q", id)
		}
		seen[id] = true
	}
}
