package agent

import (
	"errors"
	"fmt"
	"slices"
)

// Preset names accepted by Command.
const (
	PresetClaude = "claude"
	PresetSim    = "sim"
	PresetExec   = "exec"
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
	Preset       string   // PresetClaude, PresetSim or PresetExec
	Command      []string // replaces the preset's program when non-empty
	Args         []string // appended after the preset's own flags
	ContinueArgs []string // exec: appended when Resume is set
	Prompt       string
	PromptVia    string // exec: PromptViaStdin (default) or PromptViaArg
	SessionID    string // the session to start, or to resume when Resume is set
	Resume       bool   // continue SessionID instead of starting it
	Scenario     string // sim: the scenario file
	SelfExe      string // sim: the cadence binary, normally os.Executable()
}

// Command builds the argv, the stdin and the stream protocol of an
// invocation. Exec agents default to ProtocolText; the caller overrides the
// protocol when the workflow declares the agent's output format.
//
//	claude: claude -p --output-format stream-json --verbose
//	        (--session-id ID | --resume=ID) ARGS…           prompt on stdin
//	sim:    SELF agent sim --scenario FILE
//	        (--session-id ID | --resume ID) ARGS…           prompt on stdin
//	exec:   COMMAND… ARGS… [CONTINUE_ARGS…] [PROMPT]        prompt on stdin or last
func Command(inv Invocation) (argv []string, stdin []byte, proto Protocol, err error) {
	if inv.Resume && inv.SessionID == "" {
		return nil, nil, "", fmt.Errorf("%w: %s: resume without a session id", ErrInvocation, inv.Preset)
	}
	switch inv.Preset {
	case PresetClaude:
		argv = program(inv.Command, "claude")
		argv = append(argv, "-p", "--output-format", "stream-json", "--verbose")
		switch {
		case inv.Resume:
			argv = append(argv, "--resume="+inv.SessionID)
		case inv.SessionID != "":
			argv = append(argv, "--session-id", inv.SessionID)
		}
		return append(argv, inv.Args...), []byte(inv.Prompt), ProtocolClaudeStream, nil
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
			argv = append(argv, "--resume", inv.SessionID)
		case inv.SessionID != "":
			argv = append(argv, "--session-id", inv.SessionID)
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
