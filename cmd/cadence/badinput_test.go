package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileEnv names the variable that turns this test binary into a hostile
// agent: an exec agent whose command is the test binary itself, and whose
// workflow env sets this variable to one of the modes below. The check runs
// in init, before TestMain, so the binary never parses cadence's flags in
// that role.
const hostileEnv = "CADENCE_TEST_HOSTILE"

func init() {
	// The supervisor cadence puts between itself and the agent is this
	// binary too, with the same environment: only the agent itself acts.
	supervising := len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "supervise"
	if mode := os.Getenv(hostileEnv); mode != "" && !supervising {
		os.Exit(hostileAgent(mode, os.Stdin, os.Stdout))
	}
}

// hostileJSON is an answer whose every field looks like a path, a shell
// command or a flag. None of it may ever become a path or an argv word.
const hostileJSON = `{"ok": true, "x": "../../etc/x", "abs": "/tmp/cadence-hostile-abs", ` +
	`"cmd": "$(rm -rf /)", "flag": "--flag", "tick": "` + "`touch pwned`" + `", "id": "../../../escape"}`

// hostileAgent writes the output of one hostile mode and returns the exit
// status. Write errors (cadence closed the pipe) end it quietly.
func hostileAgent(mode string, stdin io.Reader, stdout io.Writer) int {
	w := bufio.NewWriterSize(stdout, 1<<20)
	defer w.Flush()
	switch mode {
	case "gib":
		// 1 GiB of 1 KiB lines, then a valid handoff on the last line.
		line := append(bytes.Repeat([]byte("x"), 1023), '\n')
		block := bytes.Repeat(line, 1024)
		for range 1024 {
			if _, err := w.Write(block); err != nil {
				return 1
			}
		}
		_, _ = w.WriteString(`{"ok": true}` + "\n")
	case "nest":
		_, _ = w.WriteString(strings.Repeat("[", 1_000_000))
	case "badutf8":
		_, _ = w.WriteString("\xff\xfe prose \xc3\x28 {\"ok\": true, \"note\": \"bad \xff\xfe\xc3\x28 bytes\"} \xed\xa0\x80 trailing\n")
	case "nul":
		_, _ = w.WriteString("\x00\x00 here: {\"ok\": true, \"note\": \"a\x1bb\"}\x00\x00\n")
	case "nulinside":
		_, _ = w.WriteString("here: {\"ok\": true, \"note\": \"a\x00b\"}\n")
	case "longline":
		// 100 MiB with no newline on a stream protocol.
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range 100 {
			if _, err := w.Write(chunk); err != nil {
				return 1
			}
		}
	case "transcript":
		// A Claude Code stream-json session of HOSTILE_MIB MiB: tool calls
		// and their results of HOSTILE_EVENT_KIB KiB each, then an answer
		// of about 1 KiB.
		mib, _ := strconv.Atoi(os.Getenv("HOSTILE_MIB"))
		kib, _ := strconv.Atoi(os.Getenv("HOSTILE_EVENT_KIB"))
		writeTranscript(w, int64(mib)<<20, kib<<10, 1<<10)
	case "longevent":
		// One tool result of 100 MiB in a single event line, then a
		// small answer.
		_, _ = w.WriteString(transcriptInit)
		_, _ = w.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t0","content":"`)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range 100 {
			if _, err := w.Write(chunk); err != nil {
				return 1
			}
		}
		_, _ = w.WriteString("\"}]}}\n")
		writeResult(w, `{\"ok\": true}`)
	case "bigresult":
		// A final answer of 9 MiB, over the default max_bytes of 8 MiB.
		_, _ = w.WriteString(transcriptInit)
		writeResult(w, `{\"ok\": true, \"pad\": \"`+strings.Repeat("p", 9<<20)+`\"}`)
	case "tinyevents":
		// 10^6 events of a few dozen bytes, then the answer.
		_, _ = w.WriteString(transcriptInit)
		for range 1_000_000 {
			_, _ = w.WriteString(`{"type":"system","subtype":"api_retry","attempt":1}` + "\n")
		}
		writeResult(w, `{\"ok\": true}`)
	case "emptytext":
		// HOSTILE_EVENTS assistant events whose one text block is empty
		// (71 bytes each), then the answer.
		n, _ := strconv.Atoi(os.Getenv("HOSTILE_EVENTS"))
		_, _ = w.WriteString(transcriptInit)
		for range n {
			if _, err := w.WriteString(`{"type":"assistant","message":{"content":[{"type":"text","text":""}]}}` + "\n"); err != nil {
				return 1
			}
		}
		writeResult(w, `{\"ok\": true}`)
	case "endless":
		chunk := bytes.Repeat([]byte("y"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return 1
			}
		}
	case "helpspam":
		for range 10_000 {
			_, _ = w.WriteString(">>>HELP<<<\n")
		}
		_, _ = w.WriteString(`{"ok": true}` + "\n")
	case "symlink":
		// Replace the declared handoff path by a link to a file outside
		// the project, hoping cadence reads or writes through it.
		path := os.Getenv("CADENCE_HANDOFF_PATH")
		_ = os.Remove(path)
		if err := os.Symlink(os.Getenv("HOSTILE_TARGET"), path); err != nil {
			return 1
		}
		_, _ = w.WriteString("done\n")
	case "paths":
		_, _ = w.WriteString(hostileJSON + "\n")
	case "argv":
		// Record argv and stdin where the test can read them.
		in, _ := io.ReadAll(stdin)
		rec, _ := json.Marshal(map[string]any{"argv": os.Args, "stdin": string(in)})
		if err := os.WriteFile(os.Getenv("HOSTILE_RECORD"), rec, 0o644); err != nil {
			return 1
		}
		_, _ = w.WriteString(`{"ok": true}` + "\n")
	default:
		return 2
	}
	return 0
}

// transcriptInit is the first event of a hostile Claude Code session.
const transcriptInit = `{"type":"system","subtype":"init","session_id":"0b5e55ed-0000-4000-8000-00000000c0de","tools":["Read","Bash","Write"]}` + "\n"

// writeResult writes a result event whose answer is the JSON string body
// given (already escaped).
func writeResult(w io.Writer, answer string) {
	_, _ = io.WriteString(w, `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.5,`+
		`"session_id":"0b5e55ed-0000-4000-8000-00000000c0de","result":"`+answer+`"}`+"\n")
}

// writeTranscript writes a Claude Code stream-json session of about size
// bytes, the shape of a real one: the model's tool calls (a write carrying
// a file's content) and their results (a read returning one), in events of
// about event bytes, then a final answer of about answer bytes that
// satisfies boolSchema.
func writeTranscript(w io.Writer, size int64, event, answer int) {
	_, _ = io.WriteString(w, transcriptInit)
	content := strings.Repeat("func f() { return \"line\" }\\n", max(event/30, 1))
	var written int64
	for i := 0; written < size; i++ {
		var line string
		if i%2 == 0 {
			line = `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Writing the file."},` +
				`{"type":"tool_use","id":"toolu_` + strconv.Itoa(i) + `","name":"Write","input":{"file_path":"/p/f.go","content":"` + content + `"}}]}}` + "\n"
		} else {
			line = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_` + strconv.Itoa(i-1) +
				`","content":"` + content + `"}]},"tool_use_result":{"stdout":"` + content + `"}}` + "\n"
		}
		n, err := io.WriteString(w, line)
		if err != nil {
			return
		}
		written += int64(n)
	}
	writeResult(w, `{\"ok\": true, \"summary\": \"`+strings.Repeat("s", answer)+`\"}`)
}

// selfPath is the test binary, used as an exec agent's command.
func selfPath(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// noPanic fails the test when a cadence process printed a Go panic or a
// goroutine dump.
func (r result) noPanic(t *testing.T) {
	t.Helper()
	for _, s := range []string{r.stderr, r.stdout} {
		if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Fatalf("cadence panicked:\n%s", s)
		}
	}
}

// workflowErrorFiles are the files every workflow-mistake project has: a
// scenario, a prompt, a valid and a broken schema.
var workflowErrorFiles = map[string]string{
	"sim.yaml":            "steps: {}\n",
	"prompts/plan.md":     "Plan it.\n",
	"schemas/plan.json":   `{"type": "object"}`,
	"schemas/broken.json": `{"type": "object", "properties": {"a": {"type": 12}}}`,
}

// TestBadInputWorkflowMistakes runs `cadence run` on a workflow with one
// kind of mistake each: exit 2, the file, line, column and key on stderr,
// and no state.db (nothing ran). Positions are those of the offending value
// (or key), counted by hand in each workflow below.
func TestBadInputWorkflowMistakes(t *testing.T) {
	const head = "version: 1\ndefaults: {agent: sim}\nagents:\n  sim:\n    preset: sim\n    scenario: sim.yaml\nsteps:\n  - id: plan\n"
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		workflow string
		link     string // a symlink at prompts/link.md to the outside file
		want     string // "line:col: key" after "workflow.yaml:"
		reason   string
	}{
		{"unknown key", head + "    prompt: Plan it.\n    retries: 3\n", "", "10:5: steps[0].retries", "unknown key"},
		{"unknown top-level key", head + "    prompt: Plan it.\ncolour: blue\n", "", "10:1: colour", "unknown key"},
		{"wrong type", head + "    prompt: Plan it.\n    retry: {max_attempts: three}\n", "", "10:27: steps[0].retry.max_attempts", "want an integer"},
		{"bad duration", head + "    prompt: Plan it.\n    timeout: 30 minutes\n", "", "10:14: steps[0].timeout", "invalid duration"},
		{"bad size", head + "    prompt: Plan it.\n    handoff: {max_bytes: 8 MB}\n", "", "10:26: steps[0].handoff.max_bytes", "invalid size"},
		{"duplicate step id", head + "    prompt: Plan it.\n  - id: plan\n    prompt: Again.\n", "", "10:9: steps[1].id", "duplicate step id"},
		{"missing schema file", head + "    prompt: Plan it.\n    handoff:\n      schema: schemas/nope.json\n", "", "11:15: steps[0].handoff.schema", "not found"},
		{"schema that does not compile", head + "    prompt: Plan it.\n    handoff:\n      schema: schemas/broken.json\n", "", "11:15: steps[0].handoff.schema", "does not compile"},
		{"template referring to a later step", head + "    prompt: \"Use {{ .Steps.review.Output }}\"\n  - id: review\n    prompt: Review.\n", "", "9:13: steps[0].prompt", "does not run before"},
		{"path escaping the project", head + "    prompt_file: ../outside.md\n", "", "9:18: steps[0].prompt_file", "outside the project"},
		{"absolute path outside the project", head + "    prompt_file: " + outside + "\n", "", "9:18: steps[0].prompt_file", "outside the project"},
		{"symlink escaping the project", head + "    prompt_file: prompts/link.md\n", outside, "9:18: steps[0].prompt_file", "outside the project"},
		{"handoff path escaping the project", head + "    prompt: Plan it.\n    handoff: {from: file, path: ../../h.json}\n", "", "10:33: steps[0].handoff.path", "outside the project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, tt.workflow, workflowErrorFiles)
			if tt.link != "" {
				if err := os.Symlink(tt.link, filepath.Join(p.dir, "prompts", "link.md")); err != nil {
					t.Fatal(err)
				}
			}
			r := p.cadence(nil, "run")
			r.noPanic(t)
			r.exits(t, 2)
			if want := "workflow.yaml:" + tt.want + ":"; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not name %q:\n%s", want, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.reason) {
				t.Errorf("stderr does not say %q:\n%s", tt.reason, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(p.dir, ".cadence", "state.db")); !os.IsNotExist(err) {
				t.Errorf("state.db exists after a refused workflow (stat: %v)", err)
			}
		})
	}
}

// hostileCase is one kind of hostile agent output and how cadence must
// classify it.
type hostileCase struct {
	name     string
	mode     string
	output   string // the exec agent's protocol
	maxBytes string // defaults.handoff.max_bytes; "" keeps 8MiB
	// transcriptCap is defaults.handoff.transcript_max_bytes in bytes; 0
	// keeps the default of 1 GiB.
	transcriptCap int64
	handoff       string // the step's handoff section
	timeout       string
	wantExit      int
	classes       []string // acceptable classes of the single attempt; nil: success
	repairs       []string // repairs the accepted handoff must list
	extraEnv      map[string]string
	// killAbove stops cadence once its peak RSS passes this many KiB.
	killAbove int64
}

// outputCap is the cap of the attempt's output file.
func (c hostileCase) outputCap() int64 {
	if c.transcriptCap > 0 {
		return c.transcriptCap
	}
	return 1 << 30
}

func (c hostileCase) workflow(exe string) string {
	handoff := c.handoff
	if handoff == "" {
		handoff = "{schema: s.json}"
	}
	maxBytes := c.maxBytes
	if maxBytes == "" {
		maxBytes = "8MiB"
	}
	timeout := c.timeout
	if timeout == "" {
		timeout = "2m"
	}
	output := c.output
	if output == "" {
		output = "text"
	}
	env := "{" + hostileEnv + ": " + c.mode
	for _, k := range slices.Sorted(maps.Keys(c.extraEnv)) {
		env += ", " + k + ": " + strconv.Quote(c.extraEnv[k])
	}
	env += "}"
	return `version: 1
defaults:
  agent: hostile
  retry: {max_attempts: 1}
  timeout: ` + timeout + `
  handoff: {max_bytes: ` + maxBytes + `, transcript_max_bytes: ` + strconv.FormatInt(c.outputCap(), 10) + `}
agents:
  hostile:
    preset: exec
    command: [` + strconv.Quote(exe) + `]
    output: ` + output + `
    env: ` + env + `
steps:
  - {id: one, prompt: go, handoff: ` + handoff + `}
`
}

// plainBinary builds cadence without the race detector, whose shadow
// memory would otherwise dominate a resident-set measurement, into a
// directory removed with the test. The build cache makes repeated builds
// cost only the link.
func plainBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cadence")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runMeasured runs the plain (race-free) cadence binary like
// project.cadence and returns its peak resident set (VmHWM, KiB), polled
// from /proc while it runs: the high-water mark only grows, so the last
// reading before exit is the peak. Once the peak passes killAbove KiB (when
// not 0) cadence is killed: the bound is already broken, and letting it go
// on would only use up the machine's memory.
func (p *project) runMeasured(t *testing.T, bin string, killAbove int64, args ...string) (result, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, p.dir)...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := filepath.Join("/proc", itoa(cmd.Process.Pid), "status")
	var peak int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if kib := vmHWM(status); kib > peak {
			peak = kib
		}
		if killAbove > 0 && peak > killAbove {
			_ = cmd.Process.Kill()
		}
		select {
		case err := <-done:
			return p.finish(cmd, err, out.String(), errb.String()), peak
		case <-tick.C:
		}
	}
}

// vmHWM reads the VmHWM line of a /proc status file, in KiB; 0 when gone.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// outputCapSlack is what the attempt's output file may hold past the 16 MiB
// cap: the truncation note.
const (
	outputCapSlack  = 256
	peakRSSLimitKiB = 64 << 10
	// recordLimit bounds a failed-handoff record and a recorded error:
	// diagnoses quote samples of the output, never all of it.
	recordLimit = 64 << 10
)

// checkHostile runs one hostile case and checks everything SPEC §5 promises
// about it, including a peak RSS under 64 MiB.
func checkHostile(t *testing.T, bin string, c hostileCase) {
	t.Helper()
	p := newProject(t, c.workflow(selfPath(t)), map[string]string{"s.json": boolSchema})
	before := snapshotTree(t, filepath.Dir(p.dir))
	start := time.Now()
	r, peak := p.runMeasured(t, bin, c.killAbove, "run")
	t.Logf("%s: exit %d in %s, cadence peak RSS %d KiB", c.name, r.code, time.Since(start).Round(time.Millisecond), peak)
	if peak > peakRSSLimitKiB {
		t.Fatalf("cadence peak RSS %d KiB, over the %d KiB bound (killed: %v)", peak, peakRSSLimitKiB, r.signal != 0)
	}
	r.noPanic(t)
	r.exits(t, c.wantExit)
	s := step(p.inspect(), "one")
	if len(s.Attempts) != 1 {
		t.Fatalf("attempts %+v, want exactly one", s.Attempts)
	}
	a := s.Attempts[0]
	if c.classes == nil {
		if a.Status != "succeeded" {
			t.Fatalf("attempt %s/%s (%s), want succeeded", a.Status, a.Class, a.Error)
		}
		for _, want := range c.repairs {
			if !slices.Contains(a.Repairs, want) {
				t.Errorf("repairs %v, want %s among them", a.Repairs, want)
			}
		}
	} else {
		if a.Status != "failed" || !slices.Contains(c.classes, a.Class) {
			t.Fatalf("attempt %s/%s (%s), want failed with a class in %v", a.Status, a.Class, a.Error, c.classes)
		}
		if a.FailedHandoff == "" {
			t.Errorf("no failed-handoff record for class %s", a.Class)
		} else if fi, err := os.Stat(filepath.Join(p.dir, a.FailedHandoff)); err != nil {
			t.Errorf("failed-handoff record: %v", err)
		} else if fi.Size() > recordLimit {
			t.Errorf("failed-handoff record is %d bytes, over %d: the hostile output was not bounded", fi.Size(), recordLimit)
		}
		if len(a.Error) > recordLimit {
			t.Errorf("the attempt's recorded error is %d bytes, over %d", len(a.Error), recordLimit)
		}
	}
	if a.OutputFile != "" {
		fi, err := os.Stat(filepath.Join(p.dir, a.OutputFile))
		if err != nil {
			t.Fatalf("output file: %v", err)
		}
		if fi.Size() > c.outputCap()+outputCapSlack {
			t.Errorf("output file %s is %d bytes, over the %d cap", a.OutputFile, fi.Size(), c.outputCap())
		}
	}
	after := snapshotTree(t, filepath.Dir(p.dir))
	for _, d := range diffTree(before, after) {
		if !allowedWrite(p.dir, d) {
			t.Errorf("written outside .cadence/: %s", d)
		}
	}
}

// TestBadInputHostileOutput feeds cadence hostile output from real exec
// agent processes: each is classified, recorded and bounded, never a panic.
func TestBadInputHostileOutput(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.json")
	const outsideContent = `{"ok": true}`
	if err := os.WriteFile(outside, []byte(outsideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	tests := []hostileCase{
		{name: "10^6 levels of nesting", mode: "nest", wantExit: 1, classes: []string{"invalid_json", "truncated", "empty"}},
		{name: "invalid UTF-8 in and around the JSON", mode: "badutf8", wantExit: 0},
		{name: "NUL bytes around the JSON, ESC in a string", mode: "nul", wantExit: 0, repairs: []string{"control_chars"}},
		{name: "a NUL byte in a string is not text", mode: "nulinside", wantExit: 1, classes: []string{"invalid_json"}},
		{name: "a single 100 MiB line of prose on claude-stream", mode: "longline", output: "claude-stream", wantExit: 1, classes: []string{"empty"}},
		{name: "a 100 MiB event line, then the answer", mode: "longevent", output: "claude-stream", wantExit: 0},
		{name: "a final answer over max_bytes", mode: "bigresult", output: "claude-stream", wantExit: 1, classes: []string{"too_large"}},
		{name: "10^6 tiny events, then the answer", mode: "tinyevents", output: "claude-stream", wantExit: 0},
		{name: "3*10^6 empty assistant text events, then the answer", mode: "emptytext", output: "claude-stream", wantExit: 0,
			extraEnv: map[string]string{"HOSTILE_EVENTS": "3000000"}, killAbove: 4 * peakRSSLimitKiB},
		{name: "an endless stream without newlines", mode: "endless", timeout: "20s", wantExit: 1, classes: []string{"too_large", "timeout"}},
		{name: "the help marker 10,000 times", mode: "helpspam", wantExit: 1, classes: []string{"help"}},
		{name: "handoff path made a symlink to a file outside", mode: "symlink", wantExit: 1, classes: []string{"missing"},
			handoff: "{from: file, path: out/h.json, schema: s.json}", extraEnv: map[string]string{"HOSTILE_TARGET": outside}},
	}
	bin := plainBinary(t)
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) { checkHostile(t, bin, c) })
	}
	b, err := os.ReadFile(outside)
	if err != nil || string(b) != outsideContent {
		t.Errorf("the file outside the project changed: %q, %v", b, err)
	}
	if fi, err := os.Stat(outside); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the file outside the project was touched: %v %v", fi.ModTime(), err)
	}
}

// TestBadInputPlantedSymlink points the declared handoff path, or its
// directory, at a file outside the project before the run starts: clearing
// the handoff path before the attempt must not remove or truncate anything
// outside the project, and the link is never read as a handoff.
func TestBadInputPlantedSymlink(t *testing.T) {
	for _, tc := range []struct {
		name      string
		link      string // project-relative path of the planted link
		targetDir bool   // the link points at the outside directory, not the file
	}{
		{"handoff file is a link", "out/h.json", false},
		{"handoff directory is a link", "out", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outsideDir := t.TempDir()
			outside := filepath.Join(outsideDir, "h.json")
			const content = `{"ok": true}`
			if err := os.WriteFile(outside, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			p := newProject(t, simWorkflow(`{max_attempts: 1}`, `
  - {id: one, prompt: go, handoff: {from: file, path: out/h.json, schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": "steps:\n  one: [{answer: done}]\n"})
			link := filepath.Join(p.dir, filepath.FromSlash(tc.link))
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			target := outside
			if tc.targetDir {
				target = outsideDir
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			r := p.cadence(nil, "run")
			r.noPanic(t)
			if b, err := os.ReadFile(outside); err != nil || string(b) != content {
				t.Errorf("the file outside the project changed: %q, %v", b, err)
			}
			if r.code == 0 {
				t.Fatalf("a handoff reached through a link to outside the project was accepted\n%s", r.stdout)
			}
			if r.code != 1 && r.code != 2 {
				t.Fatalf("exit %d, want 1 (attempt refused) or 2 (workflow refused)\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestBadInputGiB streams 1 GiB through cadence, and cadence's peak RSS
// stays under 64 MiB in every case: a text agent's output is judged as it
// streams, and a stream protocol's transcript is not the handoff. With the
// default max_bytes a text agent's gigabyte stops at too_large; with
// max_bytes 2GiB it is read to its answer; a gigabyte of Claude Code
// transcript with a small answer succeeds, its .out copy cut at
// transcript_max_bytes.
func TestBadInputGiB(t *testing.T) {
	tests := []hostileCase{
		{name: "text, default max_bytes", mode: "gib", wantExit: 1, classes: []string{"too_large"}, killAbove: peakRSSLimitKiB},
		{name: "text, max_bytes 2GiB", mode: "gib", maxBytes: "2GiB", wantExit: 0, killAbove: peakRSSLimitKiB},
		{name: "claude-stream transcript, small answer", mode: "transcript", output: "claude-stream", transcriptCap: 64 << 20,
			extraEnv: map[string]string{"HOSTILE_MIB": "1024", "HOSTILE_EVENT_KIB": "256"}, wantExit: 0, killAbove: peakRSSLimitKiB},
	}
	bin := plainBinary(t)
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) { checkHostile(t, bin, c) })
	}
}

// snapshotTree records every path under root with its size and mtime.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed while walking
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		m[path] = info.Mode().String() + " " + strconv.FormatInt(info.Size(), 10) + " " + info.ModTime().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// diffTree lists the paths created, removed or changed between snapshots.
func diffTree(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if before[p] != v {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// allowedWrite reports whether path may change during a run: anything
// under .cadence/, the project directory itself (its mtime), the declared
// handoff path and its directory, and extra (files the test controls).
func allowedWrite(dir, path string, extra ...string) bool {
	cad := filepath.Join(dir, ".cadence")
	switch {
	case path == dir, path == cad, strings.HasPrefix(path, cad+string(filepath.Separator)):
		return true
	case path == filepath.Join(dir, "out"), path == filepath.Join(dir, "out", "h.json"):
		return true
	case slices.Contains(extra, path):
		return true
	}
	return false
}

// TestSecretNeverStored runs a workflow with a sentinel secret in cadence's
// environment, which every agent inherits: after a schema failure, a crash
// and two successes, with debug logging on, the sentinel must appear in no
// file under .cadence/ and in nothing cadence printed.
func TestSecretNeverStored(t *testing.T) {
	secret := "s3cr3t-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + itoa(os.Getpid())
	p := newProject(t, simWorkflow(`{max_attempts: 3, backoff: fixed, initial: 10ms, jitter: none}`, `
  - {id: one, prompt: "go {{ .Run.ID }}", handoff: {schema: s.json}}
  - {id: two, prompt: "then {{ .Steps.one.Output.ok }}", handoff: {from: file, path: out/h.json, schema: s.json}}
`), map[string]string{"s.json": boolSchema, "scenario.yaml": `
steps:
  one:
    - {answer: '{"ok": "not a boolean"}'}
    - {answer: '{"ok": true}'}
  two:
    - {crash: {after_bytes: 5, exit_code: 3}}
    - {write_file: '{"ok": true}'}
`})
	env := []string{"CADENCE_TEST_SECRET=" + secret, "ANTHROPIC_API_KEY=" + secret, "CADENCE_DEBUG=1"}
	var printed []string
	r := p.cadence(env, "run")
	r.noPanic(t)
	r.exits(t, 0)
	printed = append(printed, r.stdout, r.stderr)
	for _, args := range [][]string{
		{"inspect", "--json"}, {"inspect", "--step", "one"}, {"inspect", "--step", "one", "--attempt", "1"},
		{"inspect", "--step", "two", "--attempt", "1"}, {"inspect", "--stats"},
	} {
		r := p.cadence(env, args...)
		r.exits(t, 0)
		printed = append(printed, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "one") || !strings.Contains(r.stdout, "two") {
		t.Errorf("the run printed no step transitions, so its output was not checked:\n%s", r.stdout)
	}
	if a := step(p.inspect(), "one").Attempts; len(a) != 2 || a[0].Class != "schema" {
		t.Fatalf("step one attempts %+v, want a schema failure then a success", a)
	}
	if a := step(p.inspect(), "two").Attempts; len(a) != 2 || a[0].Class != "exit_nonzero" {
		t.Fatalf("step two attempts %+v, want an exit_nonzero failure then a success", a)
	}
	for i, s := range printed {
		if strings.Contains(s, secret) {
			t.Errorf("output %d of cadence contains the secret:\n%s", i, s)
		}
	}
	files := 0
	err := filepath.WalkDir(filepath.Join(p.dir, ".cadence"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s contains the secret", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// state.db, attempts, failed handoffs and handoffs at the least.
	if files < 6 {
		t.Errorf("only %d files under .cadence/: the run did not record what it should have", files)
	}
}

// TestNoAgentOutputAsPathOrArgv makes an agent answer with paths, shell
// substitutions and flags in every field; the next steps use them in their
// prompts. Nothing may be created outside .cadence/ (and the files the test
// agents write), and the text may reach the next agent only inside its
// prompt: on stdin, or as the single prompt word with prompt_via: arg.
func TestNoAgentOutputAsPathOrArgv(t *testing.T) {
	exe := selfPath(t)
	records := t.TempDir()
	recStdin, recArg := filepath.Join(records, "stdin.json"), filepath.Join(records, "arg.json")
	const prompt = `Use {{ .Steps.one.Output.x }} {{ .Steps.one.Output.abs }} {{ .Steps.one.Output.cmd }} {{ .Steps.one.Output.flag }} {{ .Steps.one.Output.tick }} {{ .Steps.one.Output.id }}`
	agent := func(name, mode, via, record string) string {
		return "  " + name + ":\n    preset: exec\n    command: [" + strconv.Quote(exe) + "]\n    args: [fixed, --fixed]\n" +
			"    prompt_via: " + via + "\n    env: {" + hostileEnv + ": " + mode + ", HOSTILE_RECORD: " + strconv.Quote(record) + "}\n"
	}
	wf := "version: 1\ndefaults:\n  retry: {max_attempts: 1}\n  handoff: {schema: s.json}\nagents:\n" +
		agent("answer", "paths", "stdin", "") + agent("stdin", "argv", "stdin", recStdin) + agent("arg", "argv", "arg", recArg) +
		"steps:\n  - {id: one, agent: answer, prompt: go}\n" +
		"  - {id: two, agent: stdin, prompt: '" + prompt + "'}\n" +
		"  - {id: three, agent: arg, prompt: '" + prompt + "'}\n"
	p := newProject(t, wf, map[string]string{"s.json": boolSchema})
	abs := "/tmp/cadence-hostile-abs"
	if _, err := os.Stat(abs); err == nil {
		t.Fatalf("%s exists before the run; remove it", abs)
	}
	before := snapshotTree(t, filepath.Dir(p.dir))
	r := p.cadence(nil, "run")
	r.noPanic(t)
	r.exits(t, 0)

	after := snapshotTree(t, filepath.Dir(p.dir))
	for _, d := range diffTree(before, after) {
		if !allowedWrite(p.dir, d, records, recStdin, recArg) {
			t.Errorf("written outside .cadence/: %s", d)
		}
	}
	for _, path := range []string{abs, "/etc/x", filepath.Join(filepath.Dir(p.dir), "etc")} {
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s was created from agent output", path)
		}
	}
	for path := range after {
		rel, ok := strings.CutPrefix(path, p.dir)
		if !ok {
			continue
		}
		for _, word := range []string{"etc", "escape", "rm -rf", "flag", "pwned"} {
			if strings.Contains(rel, word) {
				t.Errorf("a path derived from agent output: %s", path)
			}
		}
	}

	words := []string{"../../etc/x", abs, "$(rm -rf /)", "--flag", "`touch pwned`", "../../../escape"}
	type record struct {
		Argv  []string `json:"argv"`
		Stdin string   `json:"stdin"`
	}
	read := func(path string) record {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	viaStdin := read(recStdin)
	if got := viaStdin.Argv[1:]; !slices.Equal(got, []string{"fixed", "--fixed"}) {
		t.Errorf("prompt_via stdin: argv %q, want exactly the configured [fixed --fixed]", got)
	}
	viaArg := read(recArg)
	if got := viaArg.Argv[1:]; len(got) != 3 || !slices.Equal(got[:2], []string{"fixed", "--fixed"}) {
		t.Errorf("prompt_via arg: argv %q, want [fixed --fixed PROMPT]", got)
	} else {
		for _, w := range words {
			if !strings.Contains(viaStdin.Stdin, w) {
				t.Errorf("prompt_via stdin: %q missing from the prompt on stdin", w)
			}
			if !strings.Contains(got[2], w) {
				t.Errorf("prompt_via arg: %q missing from the prompt word", w)
			}
		}
	}
}
