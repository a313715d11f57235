//go:build agentcli

package mockmodel

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// toolRun is how one CLI is started for a session that uses its tools:
// with the flags that let it run them unattended, as cadence's presets do.
type toolRun struct {
	name string
	cli  agentCLI
	args func(s *Server, sb sandbox) []string
	// ops are the operations the CLI's declared tools can do.
	ops []ToolOp
}

var toolRuns = []toolRun{
	{
		name: "claude", cli: claudeCLI,
		args: func(*Server, sandbox) []string {
			return []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
		},
		ops: []ToolOp{OpRead, OpShell, OpWrite, OpEdit},
	},
	{
		// Codex's default model runs its tools in code mode: one custom
		// tool, exec, whose JavaScript calls exec_command and apply_patch.
		name: "codex", cli: codexCLI,
		args: func(s *Server, sb sandbox) []string { return codexToolArgs(s, sb) },
		ops:  []ToolOp{OpRead, OpShell, OpWrite, OpEdit},
	},
	{
		// For a model it has no profile of, Codex declares plain function
		// tools (exec_command) and no apply_patch.
		name: "codex-functions", cli: codexCLI,
		args: func(s *Server, sb sandbox) []string { return codexToolArgs(s, sb, "-m", "mock-model") },
		ops:  []ToolOp{OpRead, OpShell, OpWrite},
	},
	{
		name: "gemini", cli: geminiCLI,
		args: func(*Server, sandbox) []string {
			return []string{"-o", "stream-json", "--approval-mode", "yolo", "--skip-trust"}
		},
		ops: []ToolOp{OpRead, OpShell, OpWrite, OpEdit},
	},
}

// codexToolArgs runs codex exec against the mock with no sandbox (the
// scratch home is the only thing it could harm) and extra exec options.
func codexToolArgs(s *Server, sb sandbox, extra ...string) []string {
	args := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"}
	args = append(args, codexProvider(s, sb)...)
	return append(append(args, extra...), "-")
}

// TestAgentCLIToolUse drives each CLI through every operation a script can
// ask for, with the tools it declares: the CLI must run each call and send
// its result back, and the files must show the writes and the edit. The
// first turn's request is saved as a fixture of the unit tests when
// CADENCE_UPDATE_TRANSCRIPTS is set.
func TestAgentCLIToolUse(t *testing.T) {
	for _, tr := range toolRuns {
		t.Run(tr.name, func(t *testing.T) {
			sb := newSandbox(t, tr.cli, 0)
			path := func(name string) string { return filepath.Join(sb.project, name) }
			writeFile(t, path("small.txt"), "SMALL-MARKER\n")
			writeFile(t, path("lines.txt"), "alpha\nbravo\ncharlie\ndelta\necho\n")
			writeFile(t, path("edit.txt"), "keep this line\nold line\nkeep that line\n")

			type step struct {
				call    ToolCall
				want    []string // in the tool's result
				notWant []string
			}
			steps := []step{
				{ReadFile(path("small.txt")), []string{"SMALL-MARKER"}, nil},
				{ReadLines(path("lines.txt"), 2, 2), []string{"bravo", "charlie"}, []string{"alpha", "delta"}},
				// Gemini CLI refuses a command with $(…) or backticks.
				{Shell("echo shell- | tr -d '\\n'; expr 6 '*' 7"), []string{"shell-42"}, nil},
				{WriteFile(path("new.txt"), "written by the tool\n"), nil, nil},
				{EditFile(path("edit.txt"), "old line", "new line"), nil, nil},
			}
			steps = slices.DeleteFunc(steps, func(s step) bool { return !slices.Contains(tr.ops, s.call.Op) })
			var calls []ToolCall
			for _, st := range steps {
				calls = append(calls, st.call)
			}
			s := Start(t, Session(firstAnswer, calls...)...)

			env := tr.cli.env
			tr.cli.env = func(s *Server, sb sandbox) []string {
				// Claude Code refuses to skip permissions as root without it.
				return append(env(s, sb), "IS_SANDBOX=1")
			}
			r := tr.cli.run(t, s, sb, "Do the scripted work.", tr.args(s, sb))
			if r.Exit != 0 {
				t.Fatalf("exit %d, want 0", r.Exit)
			}
			if got := tr.cli.answer(r.Events); got != firstAnswer {
				t.Errorf("answer = %q, want %q", got, firstAnswer)
			}
			turns := s.Turns()
			if len(turns) != len(steps)+1 {
				t.Fatalf("mock saw %d turns, want %d: one per tool call and the last", len(turns), len(steps)+1)
			}
			saveRequest(t, strings.ReplaceAll(tr.name, "-", "_")+"_tools_request", sb, turns[0])
			results := map[string]ToolResult{}
			for _, res := range turns[len(turns)-1].ToolResults() {
				results[res.CallID] = res
			}
			for i, st := range steps {
				id := turns[i].ToolID
				res, ok := results[id]
				if id == "" || !ok {
					t.Errorf("%s: no result for call %q (tool %q) in the last turn", st.call, id, turns[i].ToolName)
					continue
				}
				t.Logf("%s: tool %s, result %.300q", st.call, turns[i].ToolName, res.Output)
				if res.Error {
					t.Errorf("%s: the agent reports an error: %s", st.call, res.Output)
				}
				for _, w := range st.want {
					if !strings.Contains(res.Output, w) {
						t.Errorf("%s: result lacks %q", st.call, w)
					}
				}
				for _, w := range st.notWant {
					if strings.Contains(res.Output, w) {
						t.Errorf("%s: result has %q, outside the lines asked for", st.call, w)
					}
				}
			}
			wantFile(t, path("new.txt"), "written by the tool\n")
			if slices.Contains(tr.ops, OpEdit) {
				wantFile(t, path("edit.txt"), "keep this line\nnew line\nkeep that line\n")
			}
		})
	}
}

func wantFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("the tool's file: %v", err)
		return
	}
	if string(b) != want {
		t.Errorf("%s = %q, want %q", filepath.Base(path), b, want)
	}
}
