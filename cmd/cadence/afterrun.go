package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cadence-dev/cadence/internal/ghsummary"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/orchestrator"
)

// afterRun reports how a run or resume process ended (SPEC §20), from
// the run's stored history once the process is done with it: to GitHub
// Actions (outputs, job summary and annotations) and to an OpenTelemetry
// collector (traces), each only when its variables are set. While the run
// goes on in Actions, workflow commands are stopped with a random token,
// so that nothing the run prints (an agent's text in the view, an error
// message) is taken as one; the annotations follow their resumption.
type afterRun struct {
	env   ghsummary.Env
	token string
	// traceparent is TRACEPARENT for a new run: the span its trace
	// continues. A resume continues the trace recorded with the run.
	traceparent string
}

// startReporting stops workflow commands when running in GitHub Actions.
// newRun is true for cadence run.
func startReporting(e *env, newRun bool) *afterRun {
	a := &afterRun{env: ghsummary.FromEnv(os.Getenv)}
	if newRun {
		a.traceparent = os.Getenv("TRACEPARENT")
	}
	if a.env.Actions {
		a.token = "cadence-" + rand.Text()
		fmt.Fprintf(e.stderr, "::stop-commands::%s\n", a.token)
	}
	return a
}

// finish resumes workflow commands and publishes the outcome of the
// process, whose result is outcome (runOutcome's error). It returns
// outcome unchanged: a summary that cannot be written is a warning, not
// a different exit code.
func (a *afterRun) finish(e *env, dir, state string, res *orchestrator.Result, outcome error) error {
	if a.token != "" {
		fmt.Fprintf(e.stderr, "::%s::\n", a.token)
	}
	if res != nil && res.RunID != "" {
		exportTraces(e, dir, state, res.RunID, a.traceparent)
	}
	if !a.env.Enabled() {
		return outcome
	}
	var run *ghsummary.Run
	if res != nil && res.RunID != "" {
		// The process may be ending on a signal: read the history anyway.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 30*time.Second)
		defer cancel()
		rep, err := history.Inspect(ctx, dir, state, res.RunID, false)
		var details map[history.AttemptRef]string
		if err == nil {
			details, err = history.AttemptDetails(ctx, dir, state, res.RunID, ghsummary.Diagnosed(rep))
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "cadence: job summary: read run %s: %v\n", res.RunID, err)
		} else {
			ghsummary.SetDetails(rep, details)
			run = &ghsummary.Run{Report: rep, Dir: dir, Now: time.Now()}
		}
	}
	name := outcomeName(outcome)
	if run != nil {
		run.Outcome = name
	}
	if err := ghsummary.Publish(a.env, name, run, e.stderr); err != nil {
		fmt.Fprintf(e.stderr, "cadence: %v\n", err)
	}
	return outcome
}

// outcomeName is the status output for the exit code err carries.
func outcomeName(err error) string {
	code := exitOK
	if err != nil {
		code = exitFailed
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
	}
	switch code {
	case exitOK:
		return ghsummary.OutcomeSucceeded
	case exitUsage:
		return ghsummary.OutcomeError
	case exitInterrupted:
		return ghsummary.OutcomeInterrupted
	case exitLocked:
		return ghsummary.OutcomeLocked
	case exitAwaiting:
		return ghsummary.OutcomeWaiting
	}
	return ghsummary.OutcomeFailed
}
