package attempt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// commandStdoutTail is how much of a command step's stdout its output
// keeps: the end, where a build or a test run says how it went.
const commandStdoutTail = 64 << 10

// isCommand reports whether the instance is a command step's (SPEC §16.2):
// a program of the workflow, no agent, no session, no circuit.
func (in *Instance) isCommand() bool { return in.Step.Kind == workflow.KindCommand }

// commandPlan is the plan of a command step's attempt: its command as
// written, no session.
func commandPlan(in *Instance, last *checkpoint.Attempt) attemptPlan {
	kind := checkpoint.KindInitial
	if last != nil {
		kind = checkpoint.KindFresh
	}
	return attemptPlan{kind: kind, prompt: in.Step.Run.Text}
}

// commandSpec builds the process of a command step's attempt: its argv
// rendered from the step's templates (a list is an argv and each element
// one argument; a string is the one argument of /bin/sh -c, which the
// loader allowed to read no step output), in the project directory or the
// item's worktree, with the CADENCE_* variables, in a process group of its
// own under the supervisor (G6).
func (t *try) commandSpec() (agent.Spec, error) {
	c, ws := t.in.Step.Run, t.in.Step
	data := instanceData(t.in, t.row.N)
	words := make([]string, len(c.Templates))
	for i, tmpl := range c.Templates {
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			return agent.Spec{}, fmt.Errorf("render the command of step %s: %w", ws.ID, err)
		}
		words[i] = b.String()
	}
	argv := words
	if c.Shell {
		argv = append(append([]string(nil), c.Argv[:len(c.Argv)-1]...), words...)
	}
	env := append(append([]string(nil), t.r.Env...), t.cadenceEnv()...)
	maxBytes := int64(math.MaxInt64 / 2) // the output is kept by its end, however long
	if c.Handoff {
		maxBytes = ws.Handoff.MaxBytes
	}
	return agent.Spec{
		Argv: argv, Env: env, Dir: t.r.WorkDir(t.in), Protocol: agent.ProtocolText,
		OutputCap: ws.Handoff.TranscriptMaxBytes, MaxBytes: maxBytes, MaxEventBytes: ws.Handoff.MaxEventBytes,
		Timeout: ws.Timeout, Grace: t.r.grace(), ExitGrace: ws.ExitGrace,
		HelpMarker: "\x00", // a command asks no one for help
		Supervisor: t.r.SelfExe,
	}, nil
}

// judgeCommand judges a command step's attempt: exit 0 succeeds, with the
// handoff found in its stdout when the step has one (judged as an
// agent's) or else {"exit_code": 0, "stdout": the end of stdout}; any
// other exit is class exit_nonzero.
func (t *try) judgeCommand(res *agent.Result, runErr error, src handoffSource, stdout *tailBuffer) judgement {
	ws := t.in.Step
	if runErr != nil || res.Stop != agent.StopNone || res.ExitCode != 0 || res.Signal != 0 {
		j := t.r.judge(ws, res, runErr, src)
		if j.ok || j.class.IsHandoffFailure() || j.class == handoff.ClassExitNonzero {
			// A valid handoff does not make a failed command succeed, and
			// a command is no agent: its failure is told in its own words,
			// with the last lines it printed on both streams, where a
			// build or a test run says what went wrong.
			msg := fmt.Sprintf("the command exited with code %d", res.ExitCode)
			if res.Signal != 0 {
				msg = "the command was ended by signal " + res.Signal.String()
			}
			var tail string
			if lines := lastLines(res.StderrTail, commandTailLines); lines != "" {
				tail += "stderr (last lines):\n" + lines + "\n"
			}
			if stdout != nil { // nil for a command with a handoff: its stdout is judged as an agent's
				if lines := lastLines(stdout.String(), commandTailLines); lines != "" {
					tail += "stdout (last lines):\n" + lines + "\n"
				}
			}
			tail = strings.TrimSuffix(tail, "\n")
			if tail != "" {
				msg += "\n" + tail
			}
			j = judgement{class: handoff.ClassExitNonzero, diag: handoff.Diagnose(handoff.ClassExitNonzero, msg), tail: tail}
		}
		return j
	}
	if ws.Run.Handoff {
		return t.r.judge(ws, res, runErr, src)
	}
	out, _ := json.Marshal(struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}{0, stdout.String()})
	return judgement{ok: true, result: handoff.Result{OK: true, JSON: out, Repairs: []string{}}}
}

// commandTailLines is how many of the last lines of each of its streams a
// failed command's diagnosis quotes.
const commandTailLines = 10

// lastLines returns the last n non-empty-ended lines of s, each indented,
// at most 2 KiB of them (from the end).
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	if len(s) > 2<<10 {
		s = s[len(s)-2<<10:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.max {
		w.b = append(w.b[:0], p[len(p)-w.max:]...)
		return n, nil
	}
	if over := len(w.b) + len(p) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	w.b = append(w.b, p...)
	return n, nil
}

// String is what was kept, as text: a cut in the middle of a character
// at its start is replaced.
func (w *tailBuffer) String() string { return string(bytes.ToValidUTF8(w.b, []byte("\uFFFD"))) }

// OutputsDir is where the data of each finished step's accepted handoff
// is kept as STEP.json for command steps to read (CADENCE_OUTPUTS_DIR).
func OutputsDir(dir, runID string) string {
	return filepath.Join(dir, checkpoint.CadenceDir, "outputs", runID)
}
