package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// answerFlags are what approve and reject share.
type answerFlags struct {
	Step   string `arg:"" help:"The approval gate: its step id, or LOOP/ITERATION/STEP for a gate inside a loop."`
	Dir    string `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	Run    string `placeholder:"RUN" help:"The run whose gate is answered (default: the unfinished run that waits at that gate)."`
	By     string `placeholder:"NAME" help:"Who answers (default: user@host)."`
	Resume bool   `help:"Then continue the run in this command, as cadence resume does; the flags below are resume's."`
	stateFlag
	// What --resume passes on to resume.
	Workflow     string        `help:"The workflow whose run's gate is answered (default: the run that waits at the gate); with --resume, the file to continue it with (default: the file it was started from)." type:"path"`
	AllowChanged bool          `help:"With --resume: continue even though the workflow changed since the run started."`
	MaxWait      time.Duration `help:"With --resume: exit 3 instead of waiting longer than this for a backoff, a circuit or a usage limit (e.g. 10m)."`
	WaitApproval bool          `help:"With --resume: when only approval gates are left, wait for their answers instead of exiting 5."`
	output
	leaseFlag
}

type approveCmd struct {
	answerFlags
	Comment string `placeholder:"TEXT" help:"A comment, recorded with the approval and given to the run as the gate's output."`
}

type rejectCmd struct {
	answerFlags
	Comment string `required:"" placeholder:"TEXT" help:"Why (required): recorded, and given to the run as the gate's output, which a loop's next iteration can read."`
}

func (c *approveCmd) Run(e *env) error { return c.answer(e, checkpoint.Approved, c.Comment) }
func (c *rejectCmd) Run(e *env) error  { return c.answer(e, checkpoint.Rejected, c.Comment) }

// answer records the answer, without taking the project's lock: a run
// may be waiting for it with --wait-approval.
func (c *answerFlags) answer(e *env, decision, comment string) error {
	c.Dir = findProject(c.Dir)
	by := c.By
	if by == "" {
		by = whoAmI()
	}
	wf := ""
	if c.Workflow != "" {
		abs, err := filepath.Abs(c.Dir)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("project directory %s: %w", c.Dir, err))
		}
		wf = checkpoint.RelPath(abs, c.Workflow)
	}
	done, err := orchestrator.AnswerGate(e.ctx, orchestrator.Answer{Dir: c.Dir, State: c.State, RunID: c.Run, Workflow: wf, Step: c.Step,
		Decision: decision, Comment: comment, By: by, At: time.Now()})
	if err != nil {
		var ue *orchestrator.UsageError
		if errors.As(err, &ue) {
			return withCode(exitUsage, err)
		}
		return runOutcome(e, c.Dir, nil, err)
	}
	said := e.stdout
	if c.JSON {
		said = e.stderr // stdout carries only the resumed run's JSON Lines
	}
	fmt.Fprintf(said, "gate %s of run %s %s by %s\n", done.Gate, done.RunID, decision, by)
	if !c.Resume {
		fmt.Fprintf(e.stderr, "a run waiting with --wait-approval goes on by itself; otherwise continue it with: cadence resume %s\n", c.Dir)
		return nil
	}
	r := &resumeCmd{Dir: c.Dir, Workflow: c.Workflow, RunID: done.RunID, AllowChanged: c.AllowChanged, MaxWait: c.MaxWait,
		WaitApproval: c.WaitApproval, output: c.output, leaseFlag: c.leaseFlag, stateFlag: c.stateFlag}
	return r.Run(e)
}

// whoAmI is user@host, for an answer given without --by.
func whoAmI() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if name == "" {
		name = "unknown"
	}
	if host == "" {
		return name
	}
	return name + "@" + host
}
