package workflow

// The closed sets of values the workflow format accepts.
var (
	presets      = []string{"claude", "codex", "gemini", "openai", "exec", "sim"}
	promptVias   = []string{"stdin", "arg"}
	outputs      = []string{"text", "claude-stream", "codex-jsonl", "gemini-stream"}
	backoffs     = []string{"fixed", "linear", "exponential"}
	jitters      = []string{"none", "full", "equal"}
	handoffFroms = []string{"stdout", "file"}
)
