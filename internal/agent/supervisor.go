package agent

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cadence-dev/cadence/internal/supervise"
)

// Supervise is the body of `cadence agent supervise` (see supervise.Main),
// for the test binaries that stand in for cadence as the supervisor.
func Supervise(args []string, stderr io.Writer) int {
	return supervise.Main(args, stderr)
}

// withGate adds --gate to a supervisor's argv, before its "--".
func withGate(args []string) []string {
	for i, a := range args {
		if a == "--" {
			out := append(append(append([]string(nil), args[:i]...), "--gate"), args[i:]...)
			return out
		}
	}
	return args
}

// supervised returns the program and argv that run argv under the
// supervisor at self.
func supervised(self, path string, argv []string) (string, []string) {
	wrapped := append([]string{self, "agent", "supervise", "--parent", strconv.Itoa(os.Getpid()), "--", path}, argv[1:]...)
	return self, wrapped
}

// superviseStartError returns the supervisor's report of a program it
// could not start, from the end of the process's stderr.
func superviseStartError(stderrTail string) (string, bool) {
	lines := strings.Split(strings.TrimRight(stderrTail, "\n"), "\n")
	last := lines[len(lines)-1]
	msg, ok := strings.CutPrefix(last, supervise.StartPrefix)
	if !ok {
		return "", false
	}
	return msg, true
}
