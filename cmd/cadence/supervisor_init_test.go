package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSupervisorSkipsCadencesInitialisation starts this binary as the
// agent supervisor with the runtime's trace of package initialisation on,
// and checks that the supervisor ran its program and exited before the
// packages that make cadence's start slow were initialised (package
// supervise/early): a new import of package supervise, or of early, that
// pulls one of them in ahead of it shows here.
func TestSupervisorSkipsCadencesInitialisation(t *testing.T) {
	// Named cadence, so that without the early start this test binary
	// still runs as cadence (TestMain) rather than as the test suite.
	bin := filepath.Join(t.TempDir(), "cadence")
	if err := os.Symlink(selfPath(t), bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "agent", "supervise", "--parent", strconv.Itoa(os.Getpid()), "--", "/bin/sh", "-c", "echo ran")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "GORACE=atexit_sleep_ms=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("supervisor: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "ran\n" {
		t.Fatalf("the program's output %q, want \"ran\\n\"", stdout.String())
	}
	inited := map[string]bool{}
	for line := range strings.Lines(stderr.String()) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
			inited[f[1]] = true
		}
	}
	if !inited["os"] {
		t.Fatalf("no trace of package os's initialisation in the supervisor's stderr:\n%s", stderr.String())
	}
	for _, heavy := range []string{
		"github.com/santhosh-tekuri/jsonschema/v5", // compiles its metaschemas
		"github.com/google/cel-go/common/stdlib",
		"cel.dev/expr",
		"google.golang.org/protobuf/reflect/protodesc",
		"modernc.org/sqlite",
		"github.com/cadence-dev/cadence/internal/agent",
		"github.com/cadence-dev/cadence/internal/report",
		"main",
	} {
		if inited[heavy] {
			t.Errorf("the supervisor initialised %s before it started", heavy)
		}
	}
}
