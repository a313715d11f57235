package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// transcriptDir holds the output of the real agent CLIs recorded against the
// mock model API (internal/mockmodel, build tag agentcli).
const transcriptDir = "../../testdata/transcripts"

// transcript reads a recorded stdout and, when the CLI wrote one, stderr.
func transcript(t *testing.T, cli, name string) (stdout, stderr []byte) {
	t.Helper()
	base := filepath.Join(transcriptDir, cli, name)
	stdout, err := os.ReadFile(base + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	stderr, err = os.ReadFile(base + ".stderr")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return stdout, stderr
}

// feedSpec runs stdout through a session built from spec in small chunks,
// as feed does, and stderr through its stderr tail, and returns the result.
func feedSpec(t *testing.T, spec Spec, stdout, stderr []byte) *Result {
	t.Helper()
	s := newSession(withDefaults(spec), nil)
	for len(stdout) > 0 {
		n := min(7, len(stdout))
		s.consume(stdout[:n])
		stdout = stdout[n:]
	}
	s.endStdout()
	s.stderrTail.write(stderr)
	return s.result()
}
