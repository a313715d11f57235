package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Preset names accepted by Command.
const (
	PresetClaude = "claude"
	PresetCodex  = "codex"
	PresetGemini = "gemini"
	PresetQwen   = "qwen"
	// PresetOpencode runs opencode (opencode-ai).
	PresetOpencode = "opencode"
	// PresetPi runs pi (@mariozechner/pi-coding-agent).
	PresetPi = "pi"
	// PresetCopilot runs GitHub Copilot CLI (@github/copilot).
	PresetCopilot = "copilot"
	PresetOpenAI  = "openai" // not a process: see RunChat
	PresetSim     = "sim"
	PresetExec    = "exec"
)

// Ways an exec agent receives its prompt.
const (
	PromptViaStdin = "stdin"
	PromptViaArg   = "arg"
)

// Errors Command returns for an invocation it cannot build.
var (
	ErrUnknownPreset = errors.New("agent: unknown preset")
	ErrInvocation    = errors.New("agent: invalid invocation")
)

// Invocation is one attempt's agent call, with its templates already
// rendered: which preset, how to start it, which session, what prompt.
type Invocation struct {
	Preset       string   // PresetClaude, PresetCodex, PresetGemini, PresetQwen, PresetSim or PresetExec
	Command      []string // replaces the preset's program when non-empty
	Args         []string // appended after the preset's own flags
	ContinueArgs []string // exec: appended when Resume is set
	Prompt       string
	PromptVia    string // exec: PromptViaStdin (default) or PromptViaArg
	SessionID    string // the session to start, or to resume when Resume is set
	Resume       bool   // continue SessionID instead of starting it
	Scenario     string // sim: the scenario file
	SelfExe      string // sim: the cadence binary, normally os.Executable()
	// NativeSchema asks a claude or qwen agent to constrain its answer
	// to SchemaJSON itself (--json-schema), and a codex agent to
	// SchemaFile (--output-schema); claude's and qwen's answer then
	// arrives as Result.StructuredOutput, codex's as its last message,
	// and the caller still validates it.
	NativeSchema bool
	SchemaJSON   []byte // the step's JSON Schema, when it has one
	// SchemaFile is SchemaJSON written to a file, for codex, which reads
	// a native schema from one (--output-schema FILE).
	SchemaFile string
	// IdleTimeout is the step's idle_timeout; a preset bounds its CLI's
	// own tool time limits below it (PresetEnv).
	IdleTimeout time.Duration
	// ConfigDir is the agent entry's config_dir, an absolute path: where
	// the CLI keeps its login, settings and sessions, so that entries of
	// one preset with different directories are different accounts.
	// PresetEnv passes it in the preset's variable (ConfigDirEnv).
	ConfigDir string
}

// ConfigDirEnv names the environment variable that moves a preset's CLI
// configuration directory, "" for a preset that has none:
//
//   - claude: CLAUDE_CONFIG_DIR, the directory itself (~/.claude and
//     ~/.claude.json move into it);
//   - codex: CODEX_HOME, the directory itself (~/.codex);
//   - gemini: GEMINI_CLI_HOME, the directory Gemini CLI uses instead of
//     the home directory: its .gemini folder is created inside it
//     (Gemini CLI's documented environment variables);
//   - qwen: QWEN_HOME, the directory itself (~/.qwen: settings, sessions);
//   - copilot: COPILOT_HOME, the directory itself (~/.copilot: settings,
//     sessions, logs);
//   - sim: CLAUDE_CONFIG_DIR, as the CLI it simulates (and ignores it).
func ConfigDirEnv(preset string) string {
	switch preset {
	case PresetClaude, PresetSim:
		return "CLAUDE_CONFIG_DIR"
	case PresetCodex:
		return "CODEX_HOME"
	case PresetGemini:
		return "GEMINI_CLI_HOME"
	case PresetQwen:
		return "QWEN_HOME"
	case PresetCopilot:
		return "COPILOT_HOME"
	}
	return ""
}

// Command builds the argv, the stdin and the stream protocol of an
// invocation. Exec agents default to ProtocolText; the caller overrides the
// protocol when the workflow declares the agent's output format. The prompt
// never appears in a preset's argv.
//
//	claude: claude -p --output-format stream-json --verbose
//	        (--session-id=ID | --resume=ID) [--json-schema SCHEMA] ARGS…
//	codex:  codex exec --json --skip-git-repo-check [--output-schema FILE] ARGS… -
//	        codex exec --json --skip-git-repo-check [--output-schema FILE] ARGS…
//	              resume [-c sandbox_mode=MODE] ID -
//	gemini: gemini -o stream-json --approval-mode yolo --skip-trust
//	        [--resume=ID] ARGS…
//	qwen:   qwen -o stream-json --approval-mode yolo
//	        (--session-id=ID | --resume=ID) [--json-schema SCHEMA] ARGS…
//	opencode: opencode run --format json [--session=ID] ARGS…
//	pi:     pi -p --mode json [--session ID] ARGS…
//	copilot: copilot --output-format json --allow-all-tools
//	        (--session-id=ID | --resume=ID) ARGS…
//	sim:    SELF agent sim --scenario FILE
//	        (--session-id=ID | --resume=ID) ARGS…
//	exec:   COMMAND… ARGS… [CONTINUE_ARGS…] [PROMPT]        prompt on stdin or last
//
// Every preset but exec with prompt_via arg gets the prompt on stdin. Codex,
// Gemini CLI, opencode and pi choose the id of a new session themselves:
// SessionID is used only to resume, and the new id comes from the stream
// (Result.SessionID, Spec.OnSession).
//
// A session id must pass CheckSessionID, or Command fails with
// ErrInvocation; it is given as --flag=ID wherever the CLI takes that
// form, and codex, whose resume takes it as a positional argument, gets
// one that cannot be read as an option.
func Command(inv Invocation) (argv []string, stdin []byte, proto Protocol, err error) {
	if inv.Resume && inv.SessionID == "" {
		return nil, nil, "", fmt.Errorf("%w: %s: resume without a session id", ErrInvocation, inv.Preset)
	}
	if inv.ConfigDir != "" {
		switch {
		case ConfigDirEnv(inv.Preset) == "":
			return nil, nil, "", fmt.Errorf("%w: %s: a config directory is for the claude, codex, gemini, qwen and copilot presets", ErrInvocation, inv.Preset)
		case !filepath.IsAbs(inv.ConfigDir):
			return nil, nil, "", fmt.Errorf("%w: %s: config directory %q is not an absolute path", ErrInvocation, inv.Preset, inv.ConfigDir)
		}
	}
	if inv.SessionID != "" {
		// The caller checked it already; a session id reaches argv only
		// as a plain token, whatever its source.
		if err := CheckSessionID(inv.SessionID); err != nil {
			return nil, nil, "", fmt.Errorf("%w: %s: %w", ErrInvocation, inv.Preset, err)
		}
	}
	switch inv.Preset {
	case PresetClaude:
		argv = program(inv.Command, "claude")
		argv = append(argv, "-p", "--output-format", "stream-json", "--verbose")
		switch {
		case inv.Resume:
			argv = append(argv, "--resume="+inv.SessionID)
		case inv.SessionID != "":
			argv = append(argv, "--session-id="+inv.SessionID)
		}
		if inv.NativeSchema && len(inv.SchemaJSON) > 0 {
			schema, err := compactJSON(inv.SchemaJSON)
			if err != nil {
				return nil, nil, "", fmt.Errorf("%w: claude: native schema: %w", ErrInvocation, err)
			}
			argv = append(argv, "--json-schema", schema)
		}
		return append(argv, inv.Args...), []byte(inv.Prompt), ProtocolClaudeStream, nil
	case PresetCodex:
		return codexArgv(inv), []byte(inv.Prompt), ProtocolCodexJSONL, nil
	case PresetGemini:
		return geminiArgv(inv), []byte(inv.Prompt), ProtocolGeminiStream, nil
	case PresetOpencode:
		argv = program(inv.Command, "opencode")
		argv = append(argv, "run", "--format", "json")
		if inv.Resume {
			argv = append(argv, "--session="+inv.SessionID)
		}
		return append(argv, inv.Args...), []byte(inv.Prompt), ProtocolOpencodeJSON, nil
	case PresetPi:
		argv = program(inv.Command, "pi")
		argv = append(argv, "-p", "--mode", "json")
		if inv.Resume {
			// pi takes a session file or id; an id could not pass for a
			// path here: CheckSessionID allows no slash.
			argv = append(argv, "--session", inv.SessionID)
		}
		return append(argv, inv.Args...), []byte(inv.Prompt), ProtocolPiJSON, nil
	case PresetCopilot:
		return copilotArgv(inv), []byte(inv.Prompt), ProtocolCopilotJSON, nil
	case PresetQwen:
		argv, err := qwenArgv(inv)
		if err != nil {
			return nil, nil, "", err
		}
		return argv, []byte(inv.Prompt), ProtocolQwenStream, nil
	case PresetOpenAI:
		return nil, nil, "", fmt.Errorf("%w: openai agents are called with RunChat, not started as a process", ErrInvocation)
	case PresetSim:
		if inv.Scenario == "" {
			return nil, nil, "", fmt.Errorf("%w: sim: no scenario file", ErrInvocation)
		}
		if len(inv.Command) == 0 && inv.SelfExe == "" {
			return nil, nil, "", fmt.Errorf("%w: sim: path of the cadence binary unknown", ErrInvocation)
		}
		argv = program(inv.Command, inv.SelfExe)
		argv = append(argv, "agent", "sim", "--scenario", inv.Scenario)
		switch {
		case inv.Resume:
			argv = append(argv, "--resume="+inv.SessionID)
		case inv.SessionID != "":
			argv = append(argv, "--session-id="+inv.SessionID)
		}
		return append(argv, inv.Args...), []byte(inv.Prompt), ProtocolClaudeStream, nil
	case PresetExec:
		if len(inv.Command) == 0 || inv.Command[0] == "" {
			return nil, nil, "", fmt.Errorf("%w: exec: no command", ErrInvocation)
		}
		argv = append(slices.Clone(inv.Command), inv.Args...)
		if inv.Resume {
			argv = append(argv, inv.ContinueArgs...)
		}
		switch inv.PromptVia {
		case "", PromptViaStdin:
			return argv, []byte(inv.Prompt), ProtocolText, nil
		case PromptViaArg:
			return append(argv, inv.Prompt), nil, ProtocolText, nil
		default:
			return nil, nil, "", fmt.Errorf("%w: exec: prompt_via %q (want stdin or arg)", ErrInvocation, inv.PromptVia)
		}
	default:
		return nil, nil, "", fmt.Errorf("%w %q", ErrUnknownPreset, inv.Preset)
	}
}

// program is the preset's program, or the configured command replacing it.
func program(command []string, def string) []string {
	if len(command) > 0 {
		return slices.Clone(command)
	}
	return []string{def}
}
