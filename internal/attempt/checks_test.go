package attempt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// A check is broken, rather than failing, when its program could not be
// started or could not run a command: exit 127 or 126, whether from
// /bin/sh or from a program given as a list. Any other ending is the
// agent's to fix.
func TestBrokenCheck(t *testing.T) {
	code := func(n int) *int { return &n }
	shell := &workflow.Check{Name: "tests", Shell: true}
	argv := &workflow.Check{Name: "tests"}
	tests := []struct {
		name    string
		c       *workflow.Check
		row     checkpoint.Check
		runErr  error
		broken  bool
		wantWhy string
	}{
		{"shell 127", shell, checkpoint.Check{ExitCode: code(127), Tail: "ok so far\nsh: 1: nope: not found\n"}, nil, true,
			"/bin/sh exited with code 127, a command not found: sh: 1: nope: not found"},
		{"shell 126", shell, checkpoint.Check{ExitCode: code(126)}, nil, true,
			"/bin/sh exited with code 126, a command found but not executable"},
		{"argv 127", argv, checkpoint.Check{ExitCode: code(127)}, nil, true,
			"the program exited with code 127, a command not found"},
		{"not started", argv, checkpoint.Check{}, fmt.Errorf("%w: /p/x: permission denied", agent.ErrStart), true, "/p/x: permission denied"},
		{"other launcher error", argv, checkpoint.Check{}, errors.New("pipe: too many open files"), false, ""},
		{"tests failed", shell, checkpoint.Check{ExitCode: code(1)}, nil, false, ""},
		{"exit 2", argv, checkpoint.Check{ExitCode: code(2)}, nil, false, ""},
		{"timed out", shell, checkpoint.Check{ExitCode: code(127), TimedOut: true}, nil, false, ""},
		{"signal", shell, checkpoint.Check{Signal: "killed"}, nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, broken := brokenCheck(tt.c, &tt.row, tt.runErr)
			if broken != tt.broken || (broken && why != tt.wantWhy) {
				t.Errorf("brokenCheck = %q, %v; want %q, %v", why, broken, tt.wantWhy, tt.broken)
			}
		})
	}
}
