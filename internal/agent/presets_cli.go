package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
)

// codexArgv builds a codex invocation. Codex 0.169 accepts the exec options
// both before and after `resume`, but `codex exec resume` has no --sandbox
// (-s) option of its own: the user's args therefore go before `resume`,
// where every exec option is valid, and a sandbox mode among them is
// repeated after it as -c sandbox_mode=MODE so that the resumed thread runs
// under it too.
func codexArgv(inv Invocation) []string {
	argv := program(inv.Command, "codex")
	argv = append(argv, "exec", "--json", "--skip-git-repo-check")
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
		argv = append(argv, "--resume", inv.SessionID)
	}
	return append(argv, inv.Args...)
}

func isApprovalArg(a string) bool {
	return a == "--approval-mode" || strings.HasPrefix(a, "--approval-mode=") || a == "--yolo" || a == "-y"
}

// PresetEnv returns the environment variables a preset needs besides the
// ones the caller sets (the agent's env:, CADENCE_*): for claude with
// --dangerously-skip-permissions in its args while cadence runs as root,
// IS_SANDBOX=1, without which Claude Code refuses to bypass permissions as
// root. The caller appends them to Spec.Env.
func PresetEnv(inv Invocation) []string {
	return presetEnv(inv, os.Geteuid())
}

func presetEnv(inv Invocation, euid int) []string {
	if inv.Preset == PresetClaude && euid == 0 && slices.Contains(inv.Args, "--dangerously-skip-permissions") {
		return []string{"IS_SANDBOX=1"}
	}
	return nil
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
//   - openai: yes; the history is cadence's own and holds nothing of the
//     unanswered turn.
//
// sim and exec agents are assumed resumable. When it returns false the next
// attempt should start a fresh session rather than spend an attempt on a
// resume that must fail.
func UnansweredSessionResumable(preset string) bool {
	switch preset {
	case PresetClaude, PresetGemini:
		return false
	}
	return true
}
