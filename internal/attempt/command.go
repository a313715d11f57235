package attempt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
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
		Timeout: ws.Timeout, Grace: t.r.Grace, ExitGrace: ws.ExitGrace,
		HelpMarker: "\x00", // a command asks no one for help
		Supervisor: t.r.SelfExe, Spares: t.r.Spares, Reserved: t.supervisor,
	}, nil
}

// judgeCommand judges a command step's attempt: exit 0 succeeds, with the
// handoff found in its stdout when the step has one (judged as an
// agent's) or else {"exit_code": 0, "stdout": the end of stdout}; any
// other exit is class exit_nonzero.
func (t *try) judgeCommand(res *agent.Result, runErr error, src handoffSource, stdout *tailBuffer) judgement {
	ws := t.in.Step
	if res == nil {
		// No process ran (agent.Run failed before one started: too many
		// open files, a usage file it could not make): judged from the
		// error alone, as an agent's attempt is.
		return t.r.judge(ws, res, runErr, src)
	}
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

// OutputsDir is the run's directory of step outputs: each instance that
// reads them has a directory of its own under it (Runner.outputsDir).
func OutputsDir(dir, runID string) string {
	return filepath.Join(dir, checkpoint.CadenceDir, "outputs", runID)
}

// outputsDir is the instance's CADENCE_OUTPUTS_DIR: a directory of its
// own (.cadence/outputs/RUN/STEPPATH[/ITEM]) in the project dir, so that what one instance
// reads is never what another, running beside it or in another
// iteration, put there.
func outputsDir(dir string, in *Instance) string {
	return checkpoint.UnitDir(dir, "outputs", in.Unit())
}

// keepsOutputs reports whether the instance's process gets its
// CADENCE_OUTPUTS_DIR filled: a command step's always, an agent's when
// the workflow has command steps (for an agent, the outputs it may read
// are also in its prompt's templates).
func keepsOutputs(wf *workflow.Workflow, in *Instance) bool {
	if in.isCommand() {
		return true
	}
	return slices.ContainsFunc(wf.All(), func(s *workflow.Step) bool { return s.Kind == workflow.KindCommand })
}

// syncOutputs makes the instance's CADENCE_OUTPUTS_DIR in the project
// directory hold exactly the committed outputs of the steps it may read
// (SPEC §16.2): for each of its ancestors that succeeded, STEP.json with
// that step's output as the store holds it, and nothing else. It runs
// before every attempt's process starts, the first of a resumed run
// included.
//
// The directory is a copy of committed state, never a source of it
// (SPEC §7): in.Outputs comes from the store (read back on resume, or
// taken from a step's end after its outcome was committed), and every
// file is read back and compared before the process starts, so nothing a
// crash or a power cut left there is ever trusted: a file missing, cut
// short (a name made durable without its data leaves 0 bytes), left by an
// earlier iteration, or by a step whose output it may no longer read, is
// rewritten or removed. What is (re)written goes to a temporary name and
// is renamed over the old one (checkpoint.WriteFileAtomicNoSync), so a
// process never sees half a file; it is not fsynced: what the process
// reads is what was just checked, and what a power cut takes from the
// directory the next attempt finds and rewrites. An fsync of each file
// and of the directory would cost two per ancestor per instance, in a
// chain of n steps n²; no guarantee depends on them.
//
// A file this process already read back and found right, and that nothing
// wrote since, is known by its stat alone (outputStamps; seen may be nil).
func syncOutputs(wf *workflow.Workflow, project string, in *Instance, seen *outputStamps) error {
	dir := outputsDir(project, in)
	want := make(map[string]*encoded, len(in.Outputs)) // by step id: a file's name is ID.json
	var merr error
	wf.EachAncestor(in.Step.ID, func(id string) {
		v, ok := in.Outputs[id].(map[string]any)
		if !ok || merr != nil {
			return // skipped or failed: no output to read
		}
		e, err := seen.content(id, v)
		if err != nil {
			merr = fmt.Errorf("the output of step %s for CADENCE_OUTPUTS_DIR: %w", id, err)
			return
		}
		want[id] = e
	})
	if merr != nil {
		return merr
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		// A process put a symlink or a file in its place: removed, never
		// followed (a link's target is not cadence's to clear).
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("clear CADENCE_OUTPUTS_DIR %s: %w", dir, err)
		}
	}
	if err := adoptNeedsDir(wf, project, in); err != nil {
		return err
	}
	w := seen.watch()
	if w != nil {
		defer seen.unwatch()
		if d := w.fresh(dir, want); d != nil {
			// Known: only the outputs it lacks are written.
			err := writeOutputs(w, d, dir, want)
			w.end(d)
			return err
		}
	}
	return syncWhole(w, dir, want, seen)
}

// syncWhole checks every file of the CADENCE_OUTPUTS_DIR dir against want
// (by step id) and makes it hold want and nothing else, with watches (w)
// when there are, by stamps when not.
func syncWhole(w *outputWatch, dir string, want map[string]*encoded, seen *outputStamps) error {
	var wd *watchedDir
	if w != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create CADENCE_OUTPUTS_DIR %s: %w", dir, err)
		}
		if wd = w.begin(dir); wd != nil {
			defer w.end(wd)
		}
	}
	d, entries, err := openOutputs(dir)
	if err != nil {
		return err
	}
	if d != nil {
		defer d.Close()
	}
	for _, name := range entries {
		id, isJSON := strings.CutSuffix(name, ".json")
		if b, ok := want[id]; ok && isJSON {
			path := filepath.Join(dir, name)
			switch {
			case wd != nil:
				if w.check(wd, path, b) {
					delete(want, id)
					continue
				}
			case seen.holds(d, name, b.sum): // a regular file, as stamped
				delete(want, id)
				continue
			default:
				// Read only a regular file: a link's target is not the
				// step's output, whatever it holds.
				if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
					if seen.check(path, b.text) {
						delete(want, id)
					}
					continue // rewritten below when it differs
				}
			}
		}
		if wd != nil {
			wd.own[name] = true
		}
		seen.forget(d, name)
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("clear CADENCE_OUTPUTS_DIR %s: %w", dir, err)
		}
	}
	if wd != nil {
		return writeOutputs(w, wd, dir, want)
	}
	if err := writeOutputs(nil, nil, dir, want); err != nil {
		return err
	}
	if len(entries) == 0 && len(want) == 0 {
		// An instance that may read nothing still finds its directory.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create CADENCE_OUTPUTS_DIR %s: %w", dir, err)
		}
	}
	return nil
}

// writeOutputs writes the files of want (by step id) into the directory
// dir, in the order of their names: with watches (w, its directory d),
// each watched from before its name is published; without (w nil), by
// checkpoint.WriteFileAtomicNoSync.
func writeOutputs(w *outputWatch, d *watchedDir, dir string, want map[string]*encoded) error {
	for _, id := range slices.Sorted(maps.Keys(want)) {
		var err error
		if w != nil {
			err = w.write(d, dir, id+".json", want[id].text)
		} else {
			err = checkpoint.WriteFileAtomicNoSync(filepath.Join(dir, id+".json"), want[id].text, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write CADENCE_OUTPUTS_DIR: %w", err)
		}
	}
	return nil
}

// openOutputs opens the directory and lists its names, in no order; nil
// and no names when it does not exist.
func openOutputs(dir string) (*os.File, []string, error) {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read CADENCE_OUTPUTS_DIR %s: %w", dir, err)
	}
	entries, err := d.Readdirnames(-1)
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("read CADENCE_OUTPUTS_DIR %s: %w", dir, err)
	}
	return d, entries, nil
}

// adoptNeedsDir starts a top-level step's CADENCE_OUTPUTS_DIR in the
// project directory when it has none yet, by renaming to it the directory
// of a step it needs: that step succeeded before this one could start and never runs again,
// and its directory already holds most of what this one may read (in a
// chain, all but the needed step's own output). Nothing in the adopted
// directory is trusted: syncOutputs compares every file with the
// committed outputs and rewrites or removes what differs, as it does with
// whatever a crash left. Without it a chain of n steps writes n(n-1)/2
// files; with it, one per step. Of two steps that need the same one, the
// first to rename takes its directory and the other fills its own.
func adoptNeedsDir(wf *workflow.Workflow, project string, in *Instance) error {
	dir := outputsDir(project, in)
	if in.Item != nil || in.StepPath() != in.Step.ID || in.Step.Parent != "" {
		return nil // a map item or a step inside a loop fills its own
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // it has one (or it cannot be told): kept, and checked
	}
	for _, id := range in.Step.Needs {
		need := wf.Find(id)
		if need == nil || need.Parent != "" || need.Map != nil || need.Kind == workflow.KindLoop {
			continue
		}
		donor := outputsDir(project, &Instance{Run: in.Run, Step: need})
		if fi, err := os.Lstat(donor); err != nil || !fi.IsDir() {
			continue // none, or not a directory (a symlink is not taken)
		}
		err := os.Rename(donor, dir)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrNotExist):
			continue // it had none, or another step took it
		}
		return fmt.Errorf("adopt CADENCE_OUTPUTS_DIR %s of step %s: %w", donor, id, err)
	}
	return nil
}

// syncOutputs is syncOutputs for the try's instance, when it keeps
// outputs.
func (t *try) syncOutputs() error {
	if !keepsOutputs(t.r.Workflow, t.in) {
		return nil
	}
	if err := syncOutputs(t.r.Workflow, t.r.Dir, t.in, &t.r.outputs); err != nil {
		return fmt.Errorf("attempt %d of %s: %w", t.row.N, t.in.Label(), err)
	}
	return nil
}
