//go:build agentcli

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/mockmodel"
)

// A session of the size and shape of real work, scaled down in time only:
// the agent reads many large files, so that its transcript runs to tens of
// MB while the model sees far less; runs a shell command that writes
// nothing for longer than idle_timeout while it burns CPU, as a build or a
// test suite does; writes a file; and only then answers.
const (
	// scaleFiles large files of scaleFileBytes each: Codex streams at most
	// 1 MiB of a command's output, so 22 of them make over 22 MiB.
	scaleFiles     = 22
	scaleFileBytes = 1100 << 10
	// scaleIdle is seconds, as CI wants, but not so few that a busy machine
	// (make e2e runs two packages of real CLIs at once) holds a CLI or the
	// mock off the CPU for a whole idle_timeout.
	scaleIdle       = 5 * time.Second
	scaleBurn       = 2 * scaleIdle // the silent, busy command runs this long
	scaleTranscript = 20 << 20      // the least transcript a session must stream
	scaleCalls      = 50            // the fewest tool calls in a session
	scaleRSSKiB     = 64 << 10      // SPEC §15: peak RSS of cadence under 64 MiB
	scaleAnswer     = `{"ok": true, "files": 22}`
	scaleSchema     = `{"type": "object", "required": ["ok", "files"], "properties": {"ok": {"type": "boolean"}, "files": {"type": "integer"}}}`
	scaleResultFile = "RESULT.md"
	scaleResult     = "# Result\n\nEvery file was read; the build burned its CPU in silence.\n"
)

// scaleAgent is one preset in the scale test: how to run it against the
// mock, which tool call puts a file's bytes into its transcript, and how
// its CLI bounds a silent tool command.
type scaleAgent struct {
	preset string
	// entry is the agent's settings under the mock, with the tools
	// allowed to run unattended and the preset's own tool time limits.
	entry func(t *testing.T, s *mockmodel.Server, home string) map[string]any
	// lift raises the CLI's limit on a silent tool command far above
	// idle_timeout, as a user may; nil for a CLI without such a limit.
	lift func(t *testing.T, e map[string]any, home string)
	// bulk is the call that makes the CLI stream the whole file i at
	// path. Claude Code neither shows a large read nor a long command
	// output whole (its Read and Bash keep to the model's context), but
	// an Edit reports the file as it was before, whole; Gemini CLI
	// streams a command's whole output, Codex its first MiB.
	bulk func(path string, i int) mockmodel.ToolCall
	// stopped is what the CLI tells the model when it stops waiting for
	// a silent command at the preset's bound; "" for a CLI with no such
	// limit.
	stopped string
}

var scaleAgents = []scaleAgent{
	{
		preset: "claude",
		entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
			e := claudeAgent.entry(t, s, home)
			// Its tools run unattended only without permission prompts,
			// and as root only with IS_SANDBOX=1, which the preset adds
			// unless the environment already sets IS_SANDBOX, as some CI
			// containers do to another value.
			e["args"] = []string{"--dangerously-skip-permissions"}
			e["env"].(map[string]string)["IS_SANDBOX"] = "1"
			return e
		},
		// The agent's env: wins over the preset's Bash limits.
		lift: func(t *testing.T, e map[string]any, home string) {
			env := e["env"].(map[string]string)
			env["BASH_DEFAULT_TIMEOUT_MS"] = "60000"
			env["BASH_MAX_TIMEOUT_MS"] = "60000"
		},
		bulk: func(path string, i int) mockmodel.ToolCall {
			return mockmodel.EditFile(path, scaleLine(i, 1), strings.Replace(scaleLine(i, 1), "line", "LINE", 1))
		},
		stopped: "did not complete within its",
	},
	{
		preset: "codex",
		entry: func(t *testing.T, s *mockmodel.Server, home string) map[string]any {
			e := codexAgent.entry(t, s, home)
			// The write needs a sandbox that lets it write; the scratch
			// home and project are all it can reach.
			args := slices.Clone(e["args"].([]string))
			args[slices.Index(args, "read-only")] = "danger-full-access"
			e["args"] = args
			return e
		},
		bulk: func(path string, _ int) mockmodel.ToolCall { return mockmodel.Shell("cat " + path) },
	},
	{
		preset: "gemini",
		entry:  geminiAgent.entry,
		// The user's settings win over the preset's system defaults.
		lift: func(t *testing.T, e map[string]any, home string) {
			settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":1},"tools":{"shell":{"inactivityTimeout":60}}}`
			if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		bulk:    func(path string, _ int) mockmodel.ToolCall { return mockmodel.Shell("cat " + path) },
		stopped: "exceeded the timeout",
	},
}

// scaleLine is line n of large file i; each line of each file is unique.
func scaleLine(i, n int) string {
	return fmt.Sprintf("file %02d line %06d of a large source file, padded to the length of real code", i, n)
}

// writeScaleFiles writes the large files into dir, generated on the fly,
// and returns their paths.
func writeScaleFiles(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for i := range scaleFiles {
		var b bytes.Buffer
		for n := 0; b.Len() < scaleFileBytes; n++ {
			b.WriteString(scaleLine(i, n))
			b.WriteByte('\n')
		}
		path := filepath.Join(dir, "src", fmt.Sprintf("large%02d.txt", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// scaleStep is one scripted tool call and what its result must show.
type scaleStep struct {
	call mockmodel.ToolCall
	want string // in the result the model gets back; "" for no check
}

// scaleScript is the session: per file a read of its first lines, the
// bulk call and a shell command that counts its bytes; then the silent
// busy command, the write, and the answer.
func scaleScript(a scaleAgent, dir string, files []string) []scaleStep {
	var steps []scaleStep
	for i, f := range files {
		steps = append(steps,
			scaleStep{mockmodel.ReadLines(f, 1, 3), scaleLine(i, 2)},
			scaleStep{a.bulk(f, i), ""},
			scaleStep{mockmodel.Shell("wc -c < " + f), strconv.Itoa(fileSize(f))},
		)
	}
	burn := fmt.Sprintf("timeout %d sh -c 'while :; do :; done'; echo burned", int(scaleBurn.Seconds()))
	return append(steps,
		scaleStep{mockmodel.Shell(burn), "burned"},
		scaleStep{mockmodel.WriteFile(filepath.Join(dir, scaleResultFile), scaleResult), ""},
	)
}

func fileSize(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return int(fi.Size())
}

// TestAgentCLIScale runs, for each CLI preset, one step whose agent works
// through a scripted session of realistic size and shape with the real
// CLI: over 50 tool calls, a transcript over 20 MB, a command silent for
// twice idle_timeout while it burns CPU, a file written by a tool, then
// the handoff. The step must succeed on its first attempt with the right
// handoff, the transcript must be kept whole, and cadence (built without
// the race detector) and its supervisor must stay under 64 MiB resident.
func TestAgentCLIScale(t *testing.T) {
	bin := plainBinary(t)
	hermeticCache(t)
	for _, a := range scaleAgents {
		t.Run(a.preset, func(t *testing.T) {
			s := mockmodel.Start(t)
			// The busy command must outlive idle_timeout, so that only its
			// CPU keeps the session alive: the CLI's own limit is lifted.
			p := scaleProject(t, a, s, true)
			files := writeScaleFiles(t, p.dir)
			steps := scaleScript(a, p.dir, files)
			var calls []mockmodel.ToolCall
			for _, st := range steps {
				calls = append(calls, st.call)
			}
			s.Enqueue(mockmodel.Session(scaleAnswer, calls...)...)

			start := time.Now()
			code, cadenceKiB, superKiB := scalePeaks(t, bin, p.dir)
			elapsed := time.Since(start)
			if code != 0 {
				t.Fatalf("cadence run exited %d, want 0; attempts: %+v\nlast requests to the mock:%s%s", code, step(p.inspect(), "work").Attempts, lastRequests(s, 3), scaleOutputs(p))
			}

			st := step(p.inspect(), "work")
			if st.Status != "succeeded" || len(st.Attempts) != 1 {
				t.Fatalf("step %s after %d attempts, want succeeded at once: %+v%s", st.Status, len(st.Attempts), st.Attempts, scaleOutputs(p))
			}
			checkHandoff(t, p, st.Handoff)
			transcript := fileSize(filepath.Join(p.dir, st.Attempts[0].OutputFile))
			if transcript < scaleTranscript {
				t.Errorf("transcript %s is %d bytes, want at least %d", st.Attempts[0].OutputFile, transcript, scaleTranscript)
			}
			checkToolResults(t, s, steps)
			if b, err := os.ReadFile(filepath.Join(p.dir, scaleResultFile)); err != nil || string(b) != scaleResult {
				t.Errorf("%s written by the tool = %q (%v), want %q", scaleResultFile, b, err, scaleResult)
			}

			t.Logf("%s: %d tool calls, transcript %.1f MiB, %v; peak RSS cadence %.1f MiB, supervisor %.1f MiB",
				a.preset, len(steps), float64(transcript)/(1<<20), elapsed.Round(100*time.Millisecond),
				float64(cadenceKiB)/1024, float64(superKiB)/1024)
			if cadenceKiB >= scaleRSSKiB || superKiB >= scaleRSSKiB {
				t.Errorf("peak RSS cadence %d KiB, supervisor %d KiB; want both under %d KiB", cadenceKiB, superKiB, scaleRSSKiB)
			}
		})
	}
}

// scalePeaks runs `cadence run` on dir, like runPeaks, and reads the peak
// resident set (VmHWM, KiB) of cadence and of its children (the
// supervisor) every 20 ms until it exits. It finds the children through
// /proc/PID/task/*/children rather than a scan of /proc, so that the
// sampling costs little CPU: on a busy machine a test process that burns
// a core delays the mock's answers, which the agent waits for in silence.
func scalePeaks(t *testing.T, bin, dir string) (code int, cadenceKiB, superKiB int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", dir)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := itoa(cmd.Process.Pid)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		cadenceKiB = max(cadenceKiB, vmHWM(filepath.Join("/proc", pid, "status")))
		for _, child := range taskChildren(pid) {
			superKiB = max(superKiB, vmHWM(filepath.Join("/proc", child, "status")))
		}
		select {
		case err := <-done:
			if err != nil {
				t.Logf("stderr: %s", errb.String())
				return cmd.ProcessState.ExitCode(), cadenceKiB, superKiB
			}
			return 0, cadenceKiB, superKiB
		case <-tick.C:
		}
	}
}

// taskChildren lists the children of every thread of process pid.
func taskChildren(pid string) []string {
	lists, _ := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "children"))
	var out []string
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// scaleProject writes the one-step project: the agent under the mock, an
// idle_timeout of seconds and no retry, so that any stop shows at once.
// With lift, the CLI's limit on a silent tool command is lifted.
func scaleProject(t *testing.T, a scaleAgent, s *mockmodel.Server, lift bool) *project {
	t.Helper()
	home := t.TempDir()
	entry := a.entry(t, s, home)
	if lift && a.lift != nil {
		a.lift(t, entry, home)
	}
	entry["preset"] = a.preset
	agentJSON, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	wf := fmt.Sprintf(`version: 1
defaults:
  agent: a
  retry: {max_attempts: 1}
  timeout: 5m
  idle_timeout: %s
agents:
  a: %s
steps:
  - id: work
    prompt: "Read every file under src/, build, write %s, and answer {\"ok\": true, \"files\": <how many>}."
    handoff: {schema: s.json}
`, scaleIdle, agentJSON, scaleResultFile)
	return newProject(t, wf, map[string]string{"s.json": scaleSchema})
}

// checkHandoff compares the accepted handoff's data with the answer.
func checkHandoff(t *testing.T, p *project, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, path))
	if err != nil {
		t.Fatalf("handoff: %v", err)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("handoff %s: %v", b, err)
	}
	var got, want any
	if err := json.Unmarshal(env.Data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(scaleAnswer), &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handoff data %s, want %s", env.Data, scaleAnswer)
	}
}

// checkToolResults checks that the CLI ran every scripted call and sent its
// result back, with what the step expects in it, and that the busy command
// held the session for its whole run, past idle_timeout, without being
// stopped. A result is looked for in every request after the call's turn:
// a CLI that compacts its context sends the last results in the request
// for the summary, not in the next turn.
func checkToolResults(t *testing.T, s *mockmodel.Server, steps []scaleStep) {
	t.Helper()
	if len(steps) < scaleCalls {
		t.Errorf("the script has %d tool calls, want at least %d", len(steps), scaleCalls)
	}
	reqs := s.Requests()
	var turns []int // indexes in reqs of the turns
	for i, r := range reqs {
		if r.Turn {
			turns = append(turns, i)
		}
	}
	if len(turns) != len(steps)+1 {
		t.Fatalf("mock saw %d turns, want %d: one per tool call and the answer", len(turns), len(steps)+1)
	}
	results := make([][]mockmodel.ToolResult, len(reqs))
	for i, r := range reqs {
		results[i] = r.ToolResults()
	}
	for i, st := range steps {
		call := reqs[turns[i]]
		res, back := findResult(call.ToolID, results, turns[i]+1)
		switch {
		case call.ToolID == "" || back < 0:
			t.Errorf("call %d (%s): no later request carries the result of %q", i, st.call, call.ToolID)
			continue
		case res.Error:
			t.Errorf("call %d (%s): the tool failed: %.300s", i, st.call, res.Output)
		case !strings.Contains(res.Output, st.want):
			t.Errorf("call %d (%s): result lacks %q: %.300s", i, st.call, st.want, res.Output)
		}
		if st.want == "burned" {
			if ran := reqs[back].Received.Sub(call.Received); ran < scaleBurn {
				t.Errorf("the busy command returned after %v, before its %v", ran, scaleBurn)
			}
		}
	}
	kinds := map[string]int{}
	for _, r := range reqs {
		kinds[r.Kind]++
	}
	t.Logf("requests to the mock by kind: %v", kinds)
}

// findResult finds the result of call id in the requests from index from
// on, and the index of the request that first carried it (-1 for none).
func findResult(id string, results [][]mockmodel.ToolResult, from int) (mockmodel.ToolResult, int) {
	for i := from; i < len(results); i++ {
		for _, r := range results[i] {
			if r.CallID == id {
				return r, i
			}
		}
	}
	return mockmodel.ToolResult{}, -1
}

// scaleOutputs is the tail of each attempt's output, for a failure: the
// transcripts are too large to print whole.
func scaleOutputs(p *project) string {
	files, _ := filepath.Glob(filepath.Join(p.dir, ".cadence", "attempts", "*", "*", "*.out"))
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "\n--- %s (%d bytes), last 4 KiB:\n%s", strings.TrimPrefix(f, p.dir), fileSize(f), tail(f, 4<<10))
	}
	return b.String()
}

// tail is the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return err.Error()
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// TestAgentCLIToolTimeLimit runs, for each CLI preset, a session whose
// tool command hangs silently, using no CPU, for longer than idle_timeout.
// Where the CLI has a limit on a tool command, the preset bounds it below
// idle_timeout, and the CLI stops waiting for the command before
// idle_timeout, tells the model and goes on: Claude Code moves the command
// to the background (and reports to the model again when it ends), Gemini
// CLI cancels it. The session then succeeds. Codex has no such limit, nor
// has Gemini CLI when cadence is not root (the preset cannot reach it), so
// the command runs on: cadence stops the session as stuck, unless the
// CLI's own work while it waits shows as CPU use (at an idle_timeout of
// seconds, a tick now and then is enough).
func TestAgentCLIToolTimeLimit(t *testing.T) {
	// Past idle_timeout, but not by much: Claude Code waits for a command
	// it moved to the background before it exits.
	const hang = scaleIdle + time.Second
	hermeticCache(t)
	for _, a := range scaleAgents {
		t.Run(a.preset, func(t *testing.T) {
			cmd := fmt.Sprintf("timeout %d tail -f /dev/null; echo waited", int(hang.Seconds()))
			s := mockmodel.Start(t, mockmodel.Session(scaleAnswer, mockmodel.Shell(cmd))...)
			p := scaleProject(t, a, s, false)
			r := p.cadence(nil, "run")
			st := step(p.inspect(), "work")
			stopped := a.stopped
			if a.preset == "gemini" && os.Geteuid() != 0 {
				stopped = "" // Gemini CLI reads the preset's settings file only from root
			}
			if stopped == "" {
				// Nothing stops the command but cadence: the session is
				// stuck, or if the CLI's own bookkeeping while it waits
				// counted as work, the command ran to its end.
				at := st.Attempts[0]
				switch {
				case r.code != 0 && st.Status == "failed" && at.Class == "stuck":
					t.Logf("%s: stuck after %v", a.preset, at.FinishedAt.Sub(at.StartedAt).Round(100*time.Millisecond))
				case r.code == 0 && st.Status == "succeeded":
					if res := lastResults(s); !strings.Contains(res, "waited") {
						t.Errorf("the session succeeded, but the command's result %q shows no full run", res)
					}
					t.Logf("%s: the command ran its %v", a.preset, hang)
				default:
					t.Fatalf("exit %d, step %s %+v; want the attempt stuck, or the command run whole%s", r.code, st.Status, st.Attempts, scaleOutputs(p))
				}
				return
			}
			if r.code != 0 || st.Status != "succeeded" {
				t.Fatalf("exit %d, step %s %+v; want succeeded\nstderr:\n%s%s", r.code, st.Status, st.Attempts, r.stderr, scaleOutputs(p))
			}
			reqs := s.Requests()
			var results [][]mockmodel.ToolResult
			call := -1
			for i, q := range reqs {
				results = append(results, q.ToolResults())
				if call < 0 && q.ToolID != "" {
					call = i
				}
			}
			if call < 0 {
				t.Fatal("the mock asked for no tool call")
			}
			res, back := findResult(reqs[call].ToolID, results, call+1)
			if back < 0 {
				t.Fatalf("no result for the hanging command")
			}
			took := reqs[back].Received.Sub(reqs[call].Received)
			t.Logf("%s: the CLI stopped waiting after %v: %.200q", a.preset, took.Round(100*time.Millisecond), res.Output)
			if !strings.Contains(res.Output, stopped) || strings.Contains(res.Output, "waited") {
				t.Errorf("result %q, want the CLI's report that it stopped the command (%q)", res.Output, stopped)
			}
		})
	}
}

// lastRequests describes the last n requests the mock received, for a
// failure: when they came and what they were answered with.
func lastRequests(s *mockmodel.Server, n int) string {
	reqs := s.Requests()
	var b strings.Builder
	for _, r := range reqs[max(0, len(reqs)-n):] {
		fmt.Fprintf(&b, "\n  %s %s %s (%d bytes): %s %s", r.Received.Format("15:04:05.000"), r.Kind, r.Path, len(r.Body), r.ToolID, r.ToolName)
	}
	return b.String()
}

// lastResults is the text of every tool result the last request carried.
func lastResults(s *mockmodel.Server) string {
	reqs := s.Requests()
	var out []string
	for _, r := range reqs[len(reqs)-1].ToolResults() {
		out = append(out, r.Output)
	}
	return strings.Join(out, "\n")
}

// hermeticCache gives cadence a cache directory of the test's own, where
// the gemini preset writes the settings file that bounds its shell tool.
// Gemini CLI reads that file only from a folder that root owns and no one
// else may write, as root's home is, so the directory is made there and
// not in the shared temporary folder.
func hermeticCache(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(home, ".cadence-test-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_CACHE_HOME", dir)
}
