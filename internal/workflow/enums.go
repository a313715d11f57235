package workflow

// The closed sets of values the workflow format accepts.
var (
	presets      = []string{"claude", "codex", "gemini", "qwen", "opencode", "pi", "copilot", "openai", "exec", "sim"}
	promptVias   = []string{"stdin", "arg"}
	outputs      = []string{"text", "claude-stream", "codex-jsonl", "gemini-stream", "qwen-stream", "opencode-json", "pi-json", "copilot-json"}
	backoffs     = []string{"fixed", "linear", "exponential"}
	jitters      = []string{"none", "full", "equal"}
	handoffFroms = []string{"stdout", "file"}
)
