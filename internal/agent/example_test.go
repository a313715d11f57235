package agent_test

import (
	"fmt"
	"strings"

	"github.com/cadence-dev/cadence/internal/agent"
)

// A follow-up attempt continues the Claude Code session of the failed one,
// with the follow-up prompt on stdin.
func ExampleCommand() {
	argv, stdin, proto, err := agent.Command(agent.Invocation{
		Preset:    agent.PresetClaude,
		Args:      []string{"--model", "sonnet"},
		Prompt:    "Your JSON lacked the field \"tasks\". Rewrite the complete, corrected JSON.",
		SessionID: "2f9d1c52-8e0b-4d7e-9a41-6c3b5e7f0a12",
		Resume:    true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(argv, " "))
	fmt.Println(proto, len(stdin) > 0)
	// Output:
	// claude -p --output-format stream-json --verbose --resume=2f9d1c52-8e0b-4d7e-9a41-6c3b5e7f0a12 --model sonnet
	// claude-stream true
}
