package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// Answer is a person's answer to an approval gate (SPEC §16.6).
type Answer struct {
	Dir, State string
	RunID      string // "" means the run whose gate waits (the latest run when none does)
	// Workflow is a workflow file relative to the project: its latest
	// run is meant, when RunID is "".
	Workflow string
	Step     string // the gate's id, or its path inside a loop (LOOP/N/GATE)
	Decision string // checkpoint.Approved or checkpoint.Rejected
	Comment  string
	By       string
	At       time.Time
}

// Answered is the gate an Answer was recorded for.
type Answered struct {
	RunID string
	Gate  string // its path
}

// AnswerGate records the answer to a gate waiting in the run, once. It
// takes no lock and no hold on the run: it writes only the gate's
// approval row, which the run's process reads (a process waiting with
// --wait-approval at once, another when the run is resumed), so that it
// works from any terminal while the run waits, and from any machine on a
// shared PostgreSQL state. A gate that is not waiting, a second answer
// (the first stands) and a gate waiting in an older run named without
// --run are refused with a UsageError that says what is waiting.
func AnswerGate(ctx context.Context, a Answer) (*Answered, error) {
	if a.Decision == checkpoint.Rejected && strings.TrimSpace(a.Comment) == "" {
		return nil, usagef("reject needs --comment: say why, it is what the run (and a loop's next iteration) reads")
	}
	abs, err := filepath.Abs(a.Dir)
	if err != nil {
		return nil, err
	}
	target := history.StateTarget(abs, a.State)
	if !checkpoint.IsPostgresURL(target) {
		// An answer never creates a state: a project with none has no
		// run, and a mistyped directory is not made one.
		if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("no run in %s (no state at %s): nothing waits for approval", abs, target)
		}
	}
	store, err := projectid.Open(ctx, abs, target)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var done *Answered
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		run, err := answerRun(tx, a)
		if err != nil {
			return err
		}
		gates, err := tx.Approvals(run.ID)
		if err != nil {
			return err
		}
		gate, err := pickGate(tx, run, gates, a)
		if err != nil {
			return err
		}
		at := a.At.UTC()
		if err := answeredInTime(tx, run, gate, at); err != nil {
			return err
		}
		rec := checkpoint.Approval{Unit: gate.Unit, Decision: a.Decision, Comment: a.Comment, By: a.By, DecidedAt: &at}
		if err := tx.DecideApproval(rec); err != nil {
			return err
		}
		detail := fmt.Sprintf("gate %s %s by %s", gate.Unit.StepID, a.Decision, a.By)
		if a.Comment != "" {
			detail += ": " + a.Comment
		}
		if err := tx.AddEvent(checkpoint.Event{RunID: run.ID, At: at, Kind: "gate_" + a.Decision, Detail: detail}); err != nil {
			return err
		}
		done = &Answered{RunID: run.ID, Gate: gate.Unit.StepID}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

// answeredInTime refuses an answer to a gate whose deadline passed: one given at
// or after the gate's timeout_at, or to a gate a run already failed (its
// deadline passed by that run's clock). The deadline is decided once: an
// answer that arrives late never passes the gate.
func answeredInTime(tx *checkpoint.Tx, run *checkpoint.Run, gate *checkpoint.Approval, at time.Time) error {
	if gate.TimeoutAt == nil {
		return nil
	}
	st, err := tx.Unit(gate.Unit)
	if err != nil {
		return err
	}
	if at.Before(*gate.TimeoutAt) && st.Status() != checkpoint.StepFailed {
		return nil
	}
	return usagef("gate %s of run %s timed out at %s (it waited since %s): an answer after its deadline is not taken; "+
		"cadence resume fails the gate with class timeout, then cadence resume --retry-failed asks again",
		gate.Unit.StepID, run.ID, gate.TimeoutAt.UTC().Format(time.RFC3339), gate.RequestedAt.UTC().Format(time.RFC3339))
}

// answerRun is the run named (by id, or by its workflow file: that
// workflow's latest run), else the one unfinished run whose gate of that
// name waits, else the latest run. Gates of that name waiting in several
// unfinished runs make the choice ambiguous: it refuses, naming them.
func answerRun(tx *checkpoint.Tx, a Answer) (*checkpoint.Run, error) {
	if a.RunID != "" {
		run, err := tx.Run(a.RunID)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil, usagef("no run %s in this state (see: cadence runs)", a.RunID)
		}
		return run, err
	}
	if a.Workflow != "" {
		run, err := tx.LatestRunOf(a.Workflow)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil, usagef("no run of %s in this state (see: cadence runs)", a.Workflow)
		}
		return run, err
	}
	unfinished, err := tx.UnfinishedRuns()
	if err != nil {
		return nil, err
	}
	var waiting []checkpoint.Run
	for _, r := range unfinished {
		gates, err := tx.Approvals(r.ID)
		if err != nil {
			return nil, err
		}
		for _, g := range gates {
			if !g.Decided() && address.Of(g.Unit.StepID).Names(a.Step) {
				waiting = append(waiting, r)
				break
			}
		}
	}
	switch {
	case len(waiting) == 1:
		return &waiting[0], nil
	case len(waiting) > 1:
		return nil, ambiguousRuns(waiting, "answer")
	}
	run, err := tx.LatestRun()
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, usagef("no run yet: nothing waits for approval")
	}
	return run, err
}

// pickGate finds the gate a.Step names among the run's: the one waiting
// whose path is, or ends with, the name.
func pickGate(tx *checkpoint.Tx, run *checkpoint.Run, gates []checkpoint.Approval, a Answer) (*checkpoint.Approval, error) {
	named := func(g checkpoint.Approval) bool {
		return address.Of(g.Unit.StepID).Names(a.Step)
	}
	var waiting, match []checkpoint.Approval
	for _, g := range gates {
		if !g.Decided() && (g.TimeoutAt == nil || a.At.Before(*g.TimeoutAt)) {
			waiting = append(waiting, g) // (one past its deadline waits no more)
		}
		if named(g) {
			match = append(match, g)
		}
	}
	over := run.Status() == checkpoint.RunSucceeded || run.Status() == checkpoint.RunAbandoned || run.Status() == checkpoint.RunCancelled
	for i := len(match) - 1; i >= 0; i-- {
		if !match[i].Decided() && !over {
			return &match[i], nil
		}
	}
	if len(match) > 0 && match[len(match)-1].Decided() {
		// Every gate of that name was answered: the first answer stands.
		last := match[len(match)-1]
		when := ""
		if last.DecidedAt != nil {
			when = " at " + last.DecidedAt.Format(time.RFC3339)
		}
		return nil, usagef("gate %s of run %s was already %s by %s%s: the first answer stands%s",
			last.Unit.StepID, run.ID, last.Decision, last.By, when, waitingHint(waiting))
	}
	if over {
		return nil, usagef("run %s is %s: nothing waits for approval in it, and nothing would read an answer", run.ID, run.Status())
	}
	if a.RunID == "" {
		// Waiting in an older, unfinished run? Then --run says which.
		runs, err := tx.UnfinishedRuns()
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.ID == run.ID {
				continue
			}
			older, err := tx.Approvals(r.ID)
			if err != nil {
				return nil, err
			}
			for _, g := range older {
				if !g.Decided() && named(g) {
					return nil, usagef("gate %s waits in run %s, which is not the latest run (%s): name it with --run %s", g.Unit.StepID, r.ID, run.ID, r.ID)
				}
			}
		}
	}
	return nil, usagef("step %s of run %s is not waiting for approval%s", a.Step, run.ID, waitingHint(waiting))
}

// waitingHint names the gates that do wait.
func waitingHint(waiting []checkpoint.Approval) string {
	if len(waiting) == 0 {
		return "; no gate waits for approval"
	}
	names := make([]string, len(waiting))
	for i, g := range waiting {
		names[i] = g.Unit.StepID
	}
	return "; waiting: " + strings.Join(names, ", ")
}
