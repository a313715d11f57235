package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cadenceBinary builds cadence from this repository once per test binary,
// with the product's own go.mod (not this module's, whose dependency
// versions may differ), as a user's `go build ./cmd/cadence` would. The
// directory is removed by TestMain.
var cadenceBinary = &shared[string]{make: buildCadence, free: func(bin string) { os.RemoveAll(filepath.Dir(bin)) }}

func buildCadence() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "bench-steps-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cadence")
	// The build's work directory is kept (-work) inside dir, removed
	// with the binary when the harness ends: removed by the build, its
	// files would be freed just before the first benchmark runs (see
	// scratch).
	cmd := exec.Command("go", "build", "-work", "-o", bin, "./cmd/cadence")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/cadence in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// cadence returns the path of the built binary, failing b when the build
// failed.
func cadence(b testing.TB) string {
	bin, err := cadenceBinary.get()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// chainWorkflow is a workflow of n command steps s0…s(n-1), each needing
// the one before it. Step i runs cmd(i).
func chainWorkflow(n int, cmd func(i int) []string) string {
	var sb strings.Builder
	sb.WriteString("version: 1\nname: chain\nsteps:\n")
	for i := range n {
		argv, _ := json.Marshal(cmd(i)) // a JSON array is a YAML flow sequence
		fmt.Fprintf(&sb, "  - id: s%d\n    run: %s\n", i, argv)
		if i > 0 {
			fmt.Fprintf(&sb, "    needs: [s%d]\n", i-1)
		}
	}
	return sb.String()
}

// mapWorkflow is a workflow of one command map step over the n items of
// items.json (beside .cadence), running /bin/true for each, parallel at once.
func mapWorkflow(parallel int) string {
	return fmt.Sprintf("version: 1\nname: fan\nsteps:\n"+
		"  - id: fan\n    run: [\"/bin/true\"]\n    map: {items: {file: items.json}, max_parallel: %d}\n", parallel)
}

// trueCmd is every step's command: one start of /bin/true.
func trueCmd(int) []string { return []string{"/bin/true"} }

// project writes a cadence project holding workflow (and items.json with
// items 0…items-1 when items > 0) in a new scratch directory.
func project(b testing.TB, workflow string, items int) string {
	dir := scratchDir(b)
	if err := os.MkdirAll(filepath.Join(dir, ".cadence"), 0o755); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, ".cadence", "workflow.yaml"), workflow)
	if items > 0 {
		list := make([]int, items)
		for i := range list {
			list[i] = i
		}
		data, _ := json.Marshal(list)
		writeFile(b, filepath.Join(dir, "items.json"), string(data))
	}
	return dir
}

// writeFile writes a file of the benchmark's project, failing b if it cannot.
func writeFile(b testing.TB, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

// state is where a cadence run keeps its state: the default SQLite file
// when url is "", else a PostgreSQL database.
type state struct {
	name string
	url  func(b *testing.B) string
}

// engines are the states every cadence benchmark runs on.
var engines = []state{
	{"sqlite", func(*testing.B) string { return "" }},
	{"postgres", func(b *testing.B) string {
		u, _ := postgres(b).database(b)
		return u
	}},
}

// command prepares `cadence args… dir` on stateURL, with extra environment.
func command(ctx context.Context, bin, stateURL string, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=", "CADENCE_STATE="+stateURL)
	cmd.Env = append(cmd.Env, extraEnv...)
	return cmd
}

// runCadence runs a cadence command to its end and fails b unless it
// exits with want, which is 128+N for death by signal N as in a shell.
func runCadence(b testing.TB, cmd *exec.Cmd, want int) {
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	if code != want {
		b.Fatalf("%s: exit %d, want %d\n%s", cmd, code, want, out)
	}
}

// BenchmarkCadenceChain times `cadence run` of a chain of BENCH_STEPS
// command steps as a whole process, from its exec to its exit.
func BenchmarkCadenceChain(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	bin := cadence(b)
	for _, st := range engines {
		b.Run(st.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := project(b, chainWorkflow(n, trueCmd), 0)
				cmd := command(b.Context(), bin, st.url(b), nil, "run", "--quiet", dir)
				b.StartTimer()
				start := time.Now()
				runCadence(b, cmd, 0)
				total += time.Since(start)
			}
			reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
		})
	}
}

// BenchmarkCadenceMap times `cadence run` of one map step over BENCH_STEPS
// items, 4 at once.
func BenchmarkCadenceMap(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	bin := cadence(b)
	for _, st := range engines {
		b.Run(st.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := project(b, mapWorkflow(4), n)
				cmd := command(b.Context(), bin, st.url(b), nil, "run", "--quiet", dir)
				b.StartTimer()
				start := time.Now()
				runCadence(b, cmd, 0)
				total += time.Since(start)
			}
			reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "item")
		})
	}
}

// BenchmarkCadenceCheck times `cadence check` of a chain of
// BENCH_CHECK_STEPS steps: loading and checking the workflow, nothing run.
func BenchmarkCadenceCheck(b *testing.B) {
	n := size(b, "BENCH_CHECK_STEPS", defaultCheckSteps)
	bin := cadence(b)
	dir := project(b, chainWorkflow(n, trueCmd), 0)
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		runCadence(b, command(b.Context(), bin, "", nil, "check", dir), 0)
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/check")
	reportPerStep(b, total.Nanoseconds()/int64(b.N), n, "step")
}
