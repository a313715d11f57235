package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// codexArgv builds a codex invocation. Codex 0.169 accepts the exec options
// both before and after `resume`, but `codex exec resume` has no --sandbox
// (-s) option of its own: the user's args therefore go before `resume`,
// where every exec option is valid, and a sandbox mode among them is
// repeated after it as -c sandbox_mode=MODE so that the resumed thread runs
// under it too. With native_schema, --output-schema names the step's schema
// file; Codex then asks the model for an answer in that shape, printed as
// its last agent_message like any other.
func codexArgv(inv Invocation) []string {
	argv := program(inv.Command, "codex")
	argv = append(argv, "exec", "--json", "--skip-git-repo-check")
	if inv.NativeSchema && inv.SchemaFile != "" {
		argv = append(argv, "--output-schema", inv.SchemaFile)
	}
	argv = append(argv, inv.Args...)
	if inv.Resume {
		argv = append(argv, "resume")
		if mode, ok := sandboxMode(inv.Args); ok {
			argv = append(argv, "-c", "sandbox_mode="+mode)
		}
		argv = append(argv, inv.SessionID)
	}
	return append(argv, "-")
}

// sandboxMode finds codex's --sandbox/-s value in args.
func sandboxMode(args []string) (string, bool) {
	mode, found := "", false
	for i, a := range args {
		switch {
		case (a == "--sandbox" || a == "-s") && i+1 < len(args):
			mode, found = args[i+1], true
		case strings.HasPrefix(a, "--sandbox="):
			mode, found = strings.TrimPrefix(a, "--sandbox="), true
		}
	}
	return mode, found && mode != ""
}

// geminiArgv builds a gemini invocation. Headless mode starts because stdin
// is not a terminal. --approval-mode yolo lets the agent use its tools
// without asking (nobody could answer); args that choose an approval mode
// themselves replace it. --skip-trust runs it in a folder it has not been
// told to trust, which it otherwise refuses with exit code 55.
func geminiArgv(inv Invocation) []string {
	argv := program(inv.Command, "gemini")
	argv = append(argv, "-o", "stream-json")
	if !slices.ContainsFunc(inv.Args, isApprovalArg) {
		argv = append(argv, "--approval-mode", "yolo")
	}
	argv = append(argv, "--skip-trust")
	if inv.Resume {
		argv = append(argv, "--resume="+inv.SessionID)
	}
	return append(argv, inv.Args...)
}

// qwenArgv builds a qwen invocation. The prompt goes on stdin, where
// Qwen Code reads it when no prompt argument is given; like Claude Code it
// takes the new session's id from the caller (--session-id). Headless
// tool use needs --approval-mode yolo, unless args choose a mode.
func qwenArgv(inv Invocation) ([]string, error) {
	argv := program(inv.Command, "qwen")
	argv = append(argv, "-o", "stream-json")
	if !slices.ContainsFunc(inv.Args, isApprovalArg) {
		argv = append(argv, "--approval-mode", "yolo")
	}
	switch {
	case inv.Resume:
		argv = append(argv, "--resume="+inv.SessionID)
	case inv.SessionID != "":
		argv = append(argv, "--session-id="+inv.SessionID)
	}
	if inv.NativeSchema && len(inv.SchemaJSON) > 0 {
		schema, err := compactJSON(inv.SchemaJSON)
		if err != nil {
			return nil, fmt.Errorf("%w: qwen: native schema: %w", ErrInvocation, err)
		}
		argv = append(argv, "--json-schema", schema)
	}
	return append(argv, inv.Args...), nil
}

// copilotArgv builds a copilot invocation. Copilot CLI reads its prompt
// from stdin when no -p is given and stdin is not a terminal (checked with
// 1.0.102: a prompt beginning with "-" is taken as text), so the prompt
// stays out of argv. Like Claude Code it takes the new session's id from
// the caller (--session-id, a UUID); a follow-up resumes it with
// --resume=ID. --allow-all-tools lets it use its tools without asking,
// which non-interactive mode requires, unless args choose their own
// permissions (--allow-all, --yolo, --allow-tool). Its token usage comes
// from --usage-output-file, which Run adds (UsageFileFlag).
func copilotArgv(inv Invocation) []string {
	argv := program(inv.Command, "copilot")
	argv = append(argv, "--output-format", "json")
	if !slices.ContainsFunc(inv.Args, isCopilotPermissionArg) {
		argv = append(argv, "--allow-all-tools")
	}
	switch {
	case inv.Resume:
		argv = append(argv, "--resume="+inv.SessionID)
	case inv.SessionID != "":
		argv = append(argv, "--session-id="+inv.SessionID)
	}
	return append(argv, inv.Args...)
}

func isCopilotPermissionArg(a string) bool {
	name, _, _ := strings.Cut(a, "=")
	switch name {
	case "--allow-all-tools", "--allow-all", "--yolo", "--allow-tool":
		return true
	}
	return false
}

func isApprovalArg(a string) bool {
	return a == "--approval-mode" || strings.HasPrefix(a, "--approval-mode=") || a == "--yolo" || a == "-y"
}

// PresetEnv returns the environment variables a preset needs besides the
// ones the caller sets (the agent's env:, CADENCE_*), leaving out any that
// base, the environment built so far, already sets: what the user chose
// wins. The one exception is the config directory the invocation names
// (Invocation.ConfigDir, in ConfigDirEnv's variable), set whatever base
// says: it is the agent entry's own choice, and one inherited from
// cadence's environment must not make every entry of a pool the same
// account. The caller appends them to Spec.Env (the last setting of a
// variable is the one the agent gets).
//
//   - claude: DISABLE_AUTOUPDATER=1. Claude Code's auto-updater replaces
//     the installation under running sessions and kills them
//     (anthropics/claude-code#78046, #95570); an unattended run updates
//     nothing.
//   - claude with --dangerously-skip-permissions in its args while cadence
//     runs as root: IS_SANDBOX=1, without which Claude Code refuses to
//     bypass permissions as root.
//   - claude: BASH_DEFAULT_TIMEOUT_MS and BASH_MAX_TIMEOUT_MS, the time its
//     Bash tool gives a command by default and at most, bounded below the
//     step's idle_timeout (see toolTimeouts), so that the agent gives up
//     on a command that hangs silently (Claude Code moves it to the
//     background), reports it and goes on, before cadence would stop the
//     whole session as stuck.
//   - gemini: the same bound on its shell tool's limit on silence
//     (tools.shell.inactivityTimeout), which only a settings file sets:
//     GEMINI_CLI_SYSTEM_DEFAULTS_PATH names a system defaults file, kept
//     in the cache directory, that adds it to the machine's (see
//     geminiEnv). Only where the bound is below the CLI's own 5 minutes
//     (an idle_timeout under about 5m30s), and only as root, the one user
//     whose file Gemini CLI reads as a system file.
//
// Codex has no such limit: its unified exec hands a running command back
// to the model after at most 30 s and never stops it (docs/agents.md).
func PresetEnv(inv Invocation, base []string) []string {
	return presetEnvOn(inv, base, presetHost{euid: os.Geteuid(), cacheDir: presetCacheDir(), secure: systemFileSecure})
}

// presetEnvOn is PresetEnv on the given host.
func presetEnvOn(inv Invocation, base []string, host presetHost) []string {
	env := presetEnv(inv, host.euid)
	if inv.Preset == PresetGemini {
		env = append(env, geminiEnv(inv, base, host)...)
	}
	var out []string
	for _, kv := range env {
		key, _, _ := strings.Cut(kv, "=")
		if !setsEnv(base, key) {
			out = append(out, kv)
		}
	}
	if name := ConfigDirEnv(inv.Preset); name != "" && inv.ConfigDir != "" {
		out = append(out, name+"="+inv.ConfigDir)
	}
	return out
}

func presetEnv(inv Invocation, euid int) []string {
	var env []string
	if inv.Preset != PresetClaude {
		return nil
	}
	env = append(env, "DISABLE_AUTOUPDATER=1")
	if euid == 0 && slices.Contains(inv.Args, "--dangerously-skip-permissions") {
		env = append(env, "IS_SANDBOX=1")
	}
	if inv.IdleTimeout > 0 {
		def, most := toolTimeouts(inv.IdleTimeout, claudeBashDefault, claudeBashMax)
		env = append(env,
			"BASH_DEFAULT_TIMEOUT_MS="+strconv.FormatInt(def.Milliseconds(), 10),
			"BASH_MAX_TIMEOUT_MS="+strconv.FormatInt(most.Milliseconds(), 10))
	}
	return env
}

// Claude Code's own limits for a Bash tool command (docs/agents.md):
// 2 minutes unless the model asks for more, 10 minutes at most.
const (
	claudeBashDefault = 2 * time.Minute
	claudeBashMax     = 10 * time.Minute
)

// toolTimeouts bounds an agent CLI's default and maximum time for one tool
// command below idle: the maximum leaves a tenth of idle (at least a
// second, at most a minute) for the agent to stop the command and report,
// and neither limit is raised above the CLI's own.
func toolTimeouts(idle, cliDefault, cliMax time.Duration) (def, most time.Duration) {
	margin := min(max(idle/10, time.Second), time.Minute)
	most = min(cliMax, max(idle-margin, time.Second))
	return min(cliDefault, most), most
}

// setsEnv reports whether env sets key.
func setsEnv(env []string, key string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == key {
			return true
		}
	}
	return false
}

// compactJSON returns a JSON document on one line, as an argv word.
func compactJSON(doc []byte) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// UnansweredSessionResumable reports whether a session whose first turn was
// cut off before the agent answered (cadence was killed mid-attempt) can
// still be resumed. Observed with the versions in docs/agents.md:
//
//   - codex: yes; the thread from thread.started resumes (Spec.OnSession
//     must have recorded it, and the orphaned process be gone, see
//     KillOrphanGroup).
//   - claude: no; `--resume` of the id given with --session-id answers "No
//     conversation found".
//   - gemini: no; a new session is saved only once a turn was answered.
//   - qwen: yes; the chat file of the id cadence chose is written at
//     once.
//   - opencode: no; it keeps the session, but prints its id only with
//     the model's first answer, so cadence never learned it.
//   - pi: no; it prints the id at once but saves the session only with
//     the model's answer (a failed one included): `--session ID` then
//     answers "No session found matching".
//   - copilot: no; `--resume` of the id given with --session-id answers
//     "No session, task, or name matched".
//   - openai: yes; the history is cadence's own and holds nothing of the
//     unanswered turn.
//
// sim and exec agents are assumed resumable. When it returns false the next
// attempt should start a fresh session rather than spend an attempt on a
// resume that must fail.
func UnansweredSessionResumable(preset string) bool {
	switch preset {
	case PresetClaude, PresetGemini, PresetOpencode, PresetPi, PresetCopilot:
		return false
	}
	return true
}
