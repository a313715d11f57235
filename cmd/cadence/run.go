package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

type runCmd struct {
	Dir          string        `arg:"" optional:"" default:"." help:"Project directory (default: the current one)."`
	Workflow     string        `help:"Workflow file (default DIR/.cadence/workflow.yaml)." type:"path"`
	New          bool          `help:"Abandon an unfinished run (its attempts left running end interrupted) and start a new one."`
	MaxWait      time.Duration `help:"Exit 3 instead of waiting longer than this for a backoff, a circuit or a usage limit (e.g. 10m)."`
	Input        []string      `short:"i" sep:"none" placeholder:"NAME=VALUE" help:"Give the workflow's input NAME (repeatable). VALUE is read as JSON unless the input's type is string."`
	WaitApproval bool          `help:"When only approval gates are left, wait for their answers (cadence approve / reject from another terminal) instead of exiting 5."`
	Inputs       string        `placeholder:"FILE.json" help:"Give the workflow's inputs from a JSON object; --input overrides its values." type:"path"`
	output
	leaseFlag
	stateFlag
}

func (c *runCmd) Run(e *env) error {
	c.Dir = findProject(c.Dir)
	opts, view, err := orchestratorOptions(e, c.Dir, c.Workflow, c.MaxWait, c.output)
	if err != nil {
		return err
	}
	opts.State = c.State
	opts.LeaseTTL = c.LeaseTTL
	opts.WaitApproval = c.WaitApproval
	opts.New = c.New
	opts.Inputs = c.Input
	if c.Inputs != "" {
		b, err := os.ReadFile(c.Inputs)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--inputs: %w", err))
		}
		opts.InputsFile = b
	}
	ci := startReporting(e, true)
	res, err := orchestrator.Run(e.ctx, opts)
	view.close()
	return ci.finish(e, c.Dir, c.State, res, runOutcome(e, c.Dir, res, err))
}

// orchestratorOptions builds what run and resume share.
func orchestratorOptions(e *env, dir, wf string, maxWait time.Duration, out output) (orchestrator.Options, *view, error) {
	self, err := selfExe()
	if err != nil {
		return orchestrator.Options{}, nil, fmt.Errorf("find the cadence binary: %w", err)
	}
	v := newView(e.stdout, e.stderr, out)
	logger := slog.New(newWarnHandler(e.stderr, slog.LevelWarn))
	if os.Getenv("CADENCE_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := orchestrator.Options{
		Dir:          dir,
		WorkflowPath: wf,
		MaxWait:      maxWait,
		SelfExe:      self,
		Sink:         v,
		Logger:       logger,
		Failpoint:    os.Getenv("CADENCE_FAILPOINT"),
		StoreFault:   os.Getenv("CADENCE_STOREFAULT"),
	}
	if e.process {
		// Loading the workflow and the run's rows runs under a collector
		// setting of its own, which ends before the first attempt (or
		// with the process).
		opts.BeforeFirstAttempt = startLoadGC(os.LookupEnv).end
	}
	return opts, v, nil
}

// selfExe is the path that starts this cadence binary again, for the sim
// preset. It prefers the name the process was started by (found on PATH when
// it has no slash), so that a cadence reached through a link runs as
// cadence, and falls back to os.Executable.
func selfExe() (string, error) {
	if a := os.Args[0]; a != "" {
		if strings.ContainsRune(a, filepath.Separator) {
			if abs, err := filepath.Abs(a); err == nil {
				return abs, nil
			}
		} else if p, err := exec.LookPath(a); err == nil {
			return filepath.Abs(p)
		}
	}
	return os.Executable()
}

// runOutcome maps how a run ended to the exit codes of SPEC §2.
func runOutcome(e *env, dir string, res *orchestrator.Result, err error) error {
	if err != nil {
		var (
			ue *orchestrator.UsageError
			le *checkpoint.LockedError
			he *checkpoint.LeaseHeldError
			ne *checkpoint.NewerSchemaError
		)
		switch {
		case errors.As(err, &le), errors.As(err, &he):
			return withCode(exitLocked, err)
		case errors.Is(err, checkpoint.ErrLeaseLost):
			// Another process took the run over: this one stopped, and
			// the run goes on there.
			fmt.Fprintf(e.stderr, "cadence: %v\nanother cadence process continues the run; see: cadence inspect --follow %s\n", err, dir)
			return withCode(exitInterrupted, nil)
		case errors.Is(err, checkpoint.ErrStateReplaced), errors.Is(err, checkpoint.ErrLockGone):
			// The state or the lock this process held is gone from its
			// path: nothing more it does would be recorded, or another
			// process may take the project. It stopped at once.
			fmt.Fprintf(e.stderr, "cadence: %v\ncadence stopped: nothing more of the run is recorded by this process\n", err)
			return withCode(exitInterrupted, nil)
		case errors.Is(err, checkpoint.ErrCorrupt), errors.Is(err, checkpoint.ErrNotSQLite):
			return withCode(exitUsage, stateHint(err))
		case errors.As(err, &ue), errors.As(err, &ne):
			// Nothing was executed: the invocation, the workflow or the
			// state file is what has to change.
			return withCode(exitUsage, err)
		}
		return withCode(exitFailed, err)
	}
	switch res.Status {
	case orchestrator.StatusSucceeded:
		return nil
	case orchestrator.StatusInterrupted:
		hint := fmt.Sprintf("run %s is resumable: cadence resume %s", res.RunID, dir)
		if !res.ResumeAt.IsZero() {
			hint = fmt.Sprintf("run %s waits until %s; resume then with: cadence resume %s",
				res.RunID, res.ResumeAt.Local().Format(time.RFC3339), dir)
		}
		if res.Circuit != "" {
			hint = fmt.Sprintf("run %s waits until %s for agent %s's circuit; resume then with: cadence resume %s\nor, if what failed is fixed, close the circuit now with: cadence circuit reset %s %s",
				res.RunID, res.ResumeAt.Local().Format(time.RFC3339), res.Circuit, dir, res.Circuit, dir)
		}
		fmt.Fprintln(e.stderr, hint)
		return withCode(exitInterrupted, nil)
	case orchestrator.StatusCancelled:
		fmt.Fprintf(e.stderr, "run %s was cancelled (cadence cancel): it is never resumed; its attempts that were running are recorded as interrupted; see: cadence inspect %s --run %s\n",
			res.RunID, dir, res.RunID)
		return withCode(exitFailed, nil)
	case orchestrator.StatusAwaitingApproval:
		gate := "STEP"
		if len(res.Gates) == 1 {
			gate = res.Gates[0]
		}
		fmt.Fprintf(e.stderr, "run %s waits for approval of %s; answer with: cadence approve %s %s (or cadence reject %s %s --comment TEXT), then: cadence resume %s; or answer with --resume\n",
			res.RunID, strings.Join(res.Gates, ", "), gate, dir, gate, dir, dir)
		return withCode(exitAwaiting, nil)
	default:
		fmt.Fprintf(e.stderr, "run %s failed at step %s; see: cadence inspect %s --step %s\n", res.RunID, res.Step, dir, res.Step)
		return withCode(exitFailed, nil)
	}
}
