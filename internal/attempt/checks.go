package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// checkOutputCap bounds a check's output file: a test suite's log is read
// for its end, which the follow-up quotes anyway.
const checkOutputCap = 64 << 20

// candidatePath is where an attempt's accepted handoff is stored before its
// checks run: CADENCE_HANDOFF_PATH for the checks, and what a resume runs
// the checks on again after a crash, without running the agent. It exists
// only for an attempt whose handoff passed its schema.
func (t *try) candidatePath() string {
	return filepath.Join(t.attemptsDir(), strconv.Itoa(t.row.N)+".handoff.json")
}

// attemptsDir is the directory of a unit's attempt files.
func (t *try) attemptsDir() string {
	return t.r.unitDir("attempts", t.in)
}

// storeCandidate writes the handoff that passed its schema next to the
// attempt's output, before any check runs: from then on a crash is settled
// by running the checks again on it (SPEC §11).
func (t *try) storeCandidate(data []byte) error {
	t.candidate = data
	if err := checkpoint.WriteFileAtomic(t.candidatePath(), append(append([]byte(nil), data...), '\n'), 0o644); err != nil {
		return fmt.Errorf("store the handoff of attempt %d of step %s for its checks: %w", t.row.N, t.in.Step.ID, err)
	}
	return nil
}

// checkHandoff stores an accepted handoff and runs the step's checks on it:
// the judgement stays a success when they all pass, and becomes the failed
// check's otherwise. Stopped during a check, it returns ErrInterrupted
// with the attempt left running for a resume to settle.
func (t *try) checkHandoff(ctx context.Context, j judgement, res *agent.Result) (judgement, error) {
	if err := t.storeCandidate(j.result.JSON); err != nil {
		return j, err
	}
	t.row.Repairs = nonNil(j.result.Repairs)
	t.recordUsage(res)
	failed, err := t.runChecks(ctx, true)
	switch {
	case errors.Is(err, errCheckInterrupted):
		return j, ErrInterrupted
	case err != nil:
		return j, err
	case failed != nil:
		failed.result = j.result // its repairs stay on the record
		return *failed, nil
	}
	return j, nil
}

// errCheckInterrupted reports that cadence was stopped while a check ran:
// the attempt is left running, for a resume to run its checks again.
var errCheckInterrupted = errors.New("interrupted during a check")

// runChecks runs the step's checks in order on an attempt whose handoff
// passed its schema and is stored (storeCandidate), and returns the
// judgement of the first one that fails, or nil when every check passed.
// With recordAttempt the first check's commit also writes the attempt's
// row as it stands (the agent's usage and the handoff's repairs), which a
// resume that runs the checks again would otherwise not know.
//
// Each check's row is committed before its process starts and again with
// its result. It stops at the first failure: the follow-up is about that
// check, and the others run again on the next attempt anyway. When cadence
// is stopped during a check, the check is recorded as interrupted and
// errCheckInterrupted returned, the attempt left running.
func (t *try) runChecks(ctx context.Context, recordAttempt bool) (*judgement, error) {
	for i := range t.in.Step.Checks {
		c := &t.in.Step.Checks[i]
		row, err := t.beginCheck(ctx, c, recordAttempt && i == 0)
		if err != nil {
			return nil, err
		}
		t.r.Failpoint.Hit(FailBeforeCheck)
		res, runErr := t.runCheck(ctx, c, row)
		var se *storeError
		if errors.As(runErr, &se) {
			return nil, se.err
		}
		j, err := t.finishCheck(context.WithoutCancel(ctx), c, row, res, runErr)
		if err != nil {
			return nil, err
		}
		t.r.Failpoint.Hit(FailAfterCheckCommit)
		if row.Status == checkpoint.CheckInterrupted {
			return nil, errCheckInterrupted
		}
		if j != nil {
			return j, nil
		}
	}
	return nil, nil
}

// beginCheck commits a check's row (running) before its process starts,
// with the attempt's row when recordAttempt is set.
func (t *try) beginCheck(ctx context.Context, c *workflow.Check, recordAttempt bool) (*checkpoint.Check, error) {
	var row checkpoint.Check
	err := t.r.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		prev, err := tx.Checks(t.in.Run.ID, t.in.StepPath(), t.in.ItemKey(), t.row.N)
		if err != nil {
			return err
		}
		if recordAttempt {
			if err := tx.UpdateAttempt(*t.row); err != nil {
				return err
			}
			if err := tx.PutDocument(t.in.Unit(), t.row.N, checkpoint.DocCandidate, t.candidate); err != nil {
				return err
			}
		}
		row = checkpoint.Check{RunID: t.in.Run.ID, StepID: t.in.StepPath(), ItemKey: t.in.ItemKey(), N: t.row.N, Seq: len(prev) + 1,
			Name: c.Name, Command: c.Command, Status: checkpoint.CheckRunning, StartedAt: t.r.now(),
			OutputFile: checkpoint.RelPath(t.r.Dir, t.checkOutputPath(c))}
		return tx.InsertCheck(row)
	})
	if err != nil {
		return nil, fmt.Errorf("begin check %s of attempt %d of step %s: %w", c.Name, t.row.N, t.in.Step.ID, err)
	}
	t.r.Sink.Emit(history.Event{Time: row.StartedAt, Type: history.EventCheckStarted, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Attempt: t.row.N,
		Check: c.Name, Message: c.Command})
	return &row, nil
}

func (t *try) checkOutputPath(c *workflow.Check) string {
	return filepath.Join(t.attemptsDir(), strconv.Itoa(t.row.N)+".check-"+c.Name+".out")
}

// runCheck runs one check's process: in the project directory, in a
// process group of its own under the supervisor (G6), with the agent's
// CADENCE_* variables, CADENCE_HANDOFF_PATH naming the stored handoff and
// CADENCE_CHECK its name; its output goes to its .out file (capped) and
// its last feedback_lines lines are kept.
func (t *try) runCheck(ctx context.Context, c *workflow.Check, row *checkpoint.Check) (*agent.Result, error) {
	out, err := checkpoint.CreateAtomicNoSync(t.checkOutputPath(c), 0o644)
	if err != nil {
		return nil, fmt.Errorf("create the output of check %s: %w", c.Name, err)
	}
	env := append(append([]string(nil), t.r.Env...), t.cadenceEnv()...)
	env = append(env, "CADENCE_HANDOFF_PATH="+t.candidatePath(), "CADENCE_CHECK="+c.Name)
	spec := agent.Spec{
		Argv: c.Argv, Env: env, Dir: t.r.WorkDir(t.in), Protocol: agent.ProtocolNone,
		Output: out, OutputCap: checkOutputCap, TailLines: c.FeedbackLines,
		Timeout: c.Timeout, Grace: t.r.Grace, Supervisor: t.r.SelfExe, Spares: t.r.Spares,
		OnStart: func(pid int) error {
			row.PID = &pid
			// Relaxed: it matters only while the machine is up (a check
			// left running is settled as interrupted whether or not its
			// pid survived a power cut, and run again on the handoff).
			if err := t.r.Store.UpdateRelaxed(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
				return tx.UpdateCheck(*row)
			}); err != nil {
				return &storeError{fmt.Errorf("record the pid of check %s: %w", c.Name, err)}
			}
			return nil
		},
		OnRunning: func() { t.r.Failpoint.Hit(FailDuringCheck) },
	}
	res, runErr := agent.Run(ctx, spec)
	if err := out.Commit(); err != nil {
		t.r.Log.Warn("check output not saved", "file", row.OutputFile, "err", err)
	}
	return res, runErr
}

// finishCheck commits a check's result and returns the judgement of the
// attempt when the check failed (nil when it passed or was interrupted).
func (t *try) finishCheck(ctx context.Context, c *workflow.Check, row *checkpoint.Check, res *agent.Result, runErr error) (*judgement, error) {
	now := t.r.now()
	row.FinishedAt = &now
	var j *judgement
	switch {
	case runErr != nil && errors.Is(runErr, context.Canceled),
		res != nil && res.Stop == agent.StopInterrupted:
		row.Status = checkpoint.CheckInterrupted
	case runErr != nil:
		row.Status = checkpoint.CheckFailed
	case res.ExitCode == 0 && res.Stop == agent.StopNone:
		row.Status = checkpoint.CheckPassed
	default:
		row.Status = checkpoint.CheckFailed
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		row.Tail = "the check could not be started: " + runErr.Error()
	}
	if res != nil && runErr == nil {
		row.Tail = res.Tail
		if res.Signal != 0 {
			row.Signal = res.Signal.String()
		} else if res.ExitCode >= 0 {
			code := res.ExitCode
			row.ExitCode = &code
		}
		row.TimedOut = res.Stop == agent.StopTimeout
	}
	if row.Status == checkpoint.CheckFailed {
		f := handoff.CheckFailure{Name: c.Name, Command: c.Command, ExitCode: row.ExitCode, Signal: row.Signal,
			TimedOut: row.TimedOut, DurationMS: row.Duration().Milliseconds(), Output: row.Tail, OutputFile: row.OutputFile}
		if f.TimedOut {
			f.Timeout = c.Timeout.String()
		}
		j = &judgement{class: handoff.ClassCheck, diag: handoff.CheckDiagnosis(f)}
		if why, broken := brokenCheck(c, row, runErr); broken {
			// The check itself cannot run: no answer of the agent can
			// fix that, so no follow-up asks it to.
			d := handoff.Diagnose(handoff.ClassConfig, fmt.Sprintf("check %s could not run its program: %s; fix the check's run in the workflow", c.Name, why))
			d.Check = &f
			j = &judgement{class: handoff.ClassConfig, diag: d}
		}
	}
	if err := t.r.Store.Update(ctx, func(tx *checkpoint.Tx) error { return tx.UpdateCheck(*row) }); err != nil {
		return nil, fmt.Errorf("record check %s of attempt %d of step %s: %w", c.Name, t.row.N, t.in.Step.ID, err)
	}
	ev := history.Event{Time: now, Type: history.EventCheckFinished, RunID: t.in.Run.ID, Step: t.in.StepPath(), Item: t.in.ItemKey(), Attempt: t.row.N,
		Check: c.Name, Status: row.Status, Elapsed: row.Duration().Seconds(), ExitCode: row.ExitCode}
	if j != nil {
		ev.Error = j.diag.Check.Outcome()
	}
	t.r.Sink.Emit(ev)
	return j, nil
}

// brokenCheck reports whether a failed check failed because its program
// could not be found or run, rather than because it found a fault: the
// program could not be started, or it exited 127 (a command not found) or
// 126 (found but not executable), the codes of /bin/sh for a check given
// as a string and of a program that ran one itself. why says which.
func brokenCheck(c *workflow.Check, row *checkpoint.Check, runErr error) (why string, broken bool) {
	if runErr != nil {
		return strings.TrimPrefix(runErr.Error(), agent.ErrStart.Error()+": "), errors.Is(runErr, agent.ErrStart)
	}
	if row.ExitCode == nil || row.TimedOut {
		return "", false
	}
	what := "the program"
	if c.Shell {
		what = "/bin/sh"
	}
	last := lastLine(row.Tail)
	if last != "" {
		last = ": " + last
	}
	switch *row.ExitCode {
	case 127:
		return what + " exited with code 127, a command not found" + last, true
	case 126:
		return what + " exited with code 126, a command found but not executable" + last, true
	}
	return "", false
}

// lastLine returns the last non-blank line of s, trimmed.
func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// storedCandidate reads the handoff an interrupted attempt stored for its
// checks, if it did.
func (t *try) storedCandidate(ctx context.Context) ([]byte, bool) {
	if b, err := os.ReadFile(t.candidatePath()); err == nil && len(b) > 0 {
		return b, true
	}
	// Stored by a process on another machine (or the file was lost): the
	// copy in the database, committed with the first check's start.
	var b []byte
	err := t.r.Store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		b, err = tx.Document(t.in.Unit(), t.row.N, checkpoint.DocCandidate)
		return err
	})
	if err != nil || len(b) == 0 {
		return nil, false
	}
	if err := t.storeCandidate(b); err != nil {
		return nil, false
	}
	return b, true
}
