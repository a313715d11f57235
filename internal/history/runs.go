package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/holder"
	"github.com/goccy/go-yaml"
)

// RunSummary is one line of `cadence runs`: what a run is, how it ended and
// what it cost. Field names are stable (`cadence runs --json`).
type RunSummary struct {
	ID string `json:"id"`
	// Status is the run's status as the state stores it: running,
	// interrupted, succeeded, failed, abandoned or cancelled.
	Status checkpoint.RunStatus `json:"status"`
	// State is the status as people read it: Status, except that an
	// unfinished run waiting for a person at an approval gate is
	// "waiting", and one that the state says is running but that no
	// process holds any more (its process was killed) is "stopped".
	State string `json:"state"`
	// Workflow is the file the run was started from, relative to the
	// project; Name is that workflow's name: key ("" without one).
	Workflow   string     `json:"workflow"`
	Name       string     `json:"name"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// DurationMS is from start to finish; nil while the run is unfinished.
	DurationMS *int64  `json:"duration_ms"`
	CostUSD    float64 `json:"cost_usd"`
	// CostUnknown counts the attempts whose agent reported no cost: the
	// cost is then a lower bound.
	CostUnknown  int   `json:"cost_unknown_attempts"`
	InputTokens  int64 `json:"input_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// FailedStep is the step that failed, for a failed run; "" otherwise.
	FailedStep string `json:"failed_step"`
	// Waiting are the approval gates an unfinished run waits at, in the
	// order they were reached; absent when none waits.
	Waiting []string `json:"waiting,omitempty"`
	// Holder is the process working the run; null for a finished run and
	// for a running one that no process holds any more (its process was
	// killed: `cadence resume` continues it).
	Holder *Holder `json:"holder"`
}

// Run states that are not stored statuses (RunSummary.State).
const (
	RunWaiting = "waiting"
	RunStopped = "stopped"
)

// RunFilter chooses the runs ListRuns returns; a zero field chooses all.
type RunFilter struct {
	State    string // a RunSummary.State, or a stored status
	Workflow string // a workflow file, relative to the project as RunSummary.Workflow is
	Limit    int    // at most this many, newest first; 0 for all
}

// ListRuns returns the runs of the project in dir that f chooses, newest
// first. It reads without the project lock, like Inspect.
func ListRuns(ctx context.Context, dir, state string, f RunFilter) ([]RunSummary, error) {
	var out []RunSummary
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		runs, err := tx.Runs()
		if err != nil {
			return err
		}
		self := holder.Self()
		slices.Reverse(runs) // oldest first from the store
		for _, r := range runs {
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
			if f.Workflow != "" && filepath.Clean(r.WorkflowPath) != filepath.Clean(f.Workflow) {
				continue
			}
			sum, err := summarize(tx, &r, self)
			if err != nil {
				return err
			}
			if f.State != "" && sum.State != f.State && string(sum.Status) != f.State {
				continue
			}
			out = append(out, sum)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrNoRuns
	}
	return out, nil
}

// summarize reads what RunSummary says of run r.
func summarize(tx *checkpoint.Tx, r *checkpoint.Run, self holder.Identity) (RunSummary, error) {
	sum := RunSummary{ID: r.ID, Status: r.Status(), State: string(r.Status()), Workflow: r.WorkflowPath, Name: workflowName(r.WorkflowYAML),
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	if r.FinishedAt != nil {
		ms := r.FinishedAt.Sub(r.StartedAt).Milliseconds()
		sum.DurationMS = &ms
	}
	u, err := tx.RunUsage(r.ID)
	if err != nil {
		return sum, err
	}
	sum.CostUSD, sum.CostUnknown = u.CostUSD, u.CostUnknown
	sum.InputTokens, sum.CachedTokens, sum.OutputTokens = u.InputTokens, u.CachedTokens, u.OutputTokens
	if sum.Holder, err = runHolder(tx, r, self); err != nil {
		return sum, err
	}
	switch r.Status() {
	case checkpoint.RunFailed:
		steps, err := tx.Steps(r.ID)
		if err != nil {
			return sum, err
		}
		for _, s := range steps {
			if s.Status() == checkpoint.StepFailed {
				sum.FailedStep = s.ID
				break
			}
		}
	case checkpoint.RunRunning, checkpoint.RunInterrupted:
		gates, err := tx.Approvals(r.ID)
		if err != nil {
			return sum, err
		}
		for _, g := range gates {
			if !g.Decided() {
				sum.Waiting = append(sum.Waiting, g.Unit.StepID)
			}
		}
		switch {
		case len(sum.Waiting) > 0:
			sum.State = RunWaiting
		case r.Status() == checkpoint.RunRunning && sum.Holder == nil:
			sum.State = RunStopped
		}
	}
	return sum, nil
}

// workflowName is the name: of a workflow file as stored with its run, ""
// when it has none (or cannot be read: the listing goes on).
func workflowName(src []byte) string {
	var top struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(src, &top); err != nil {
		return ""
	}
	return top.Name
}

// StepOutput is the accepted result of one step of a run, for `cadence
// output`.
type StepOutput struct {
	RunID string
	Step  string
	// Data is the handoff's data exactly as stored: its numbers are never
	// decoded into floating point. For a map step it is a JSON object of
	// the succeeded items' data keyed by item key, in the items' order.
	Data json.RawMessage
}

// ErrNoOutput is returned by Output when the step has no accepted handoff.
var ErrNoOutput = errors.New("no accepted handoff")

// Output reads the accepted handoff data of a step of a run: the latest run
// when runID is "", the run's last step when stepID is "". A step that has
// not succeeded (and a map step none of whose items has) gives an error
// wrapping ErrNoOutput that says what state the step is in.
func Output(ctx context.Context, dir, state, runID, stepID string) (*StepOutput, error) {
	var out *StepOutput
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		run, err := findRun(tx, dir, runID)
		if err != nil {
			return err
		}
		steps, err := tx.Steps(run.ID)
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return fmt.Errorf("run %s has no steps: %w", run.ID, ErrNoOutput)
		}
		var step *checkpoint.Step
		if stepID == "" {
			// The workflow's last step: rows inside loops (implement/2/review)
			// come after their loop's row in the table, but the run's
			// result is its last top-level step's.
			for i := range steps {
				if address.Of(steps[i].ID).Parent().String() == "" {
					step = &steps[i]
				}
			}
			if step == nil {
				return fmt.Errorf("run %s has no steps: %w", run.ID, ErrNoOutput)
			}
		} else {
			for i := range steps {
				if steps[i].ID == stepID {
					step = &steps[i]
				}
			}
			if step == nil {
				ids := make([]string, len(steps))
				for i, s := range steps {
					ids[i] = s.ID
				}
				return fmt.Errorf("run %s has no step %q (its steps: %s)", run.ID, stepID, alternatives(ids))
			}
		}
		items, err := tx.Items(run.ID, step.ID)
		if err != nil {
			return err
		}
		var data json.RawMessage
		if len(items) > 0 {
			data, err = itemsData(step.ID, items)
		} else {
			data, err = stepData(run, step)
		}
		if err != nil {
			return err
		}
		out = &StepOutput{RunID: run.ID, Step: step.ID, Data: data}
		return nil
	})
	return out, err
}

// findRun returns the run runID, or the latest run when runID is "".
func findRun(tx *checkpoint.Tx, dir, runID string) (*checkpoint.Run, error) {
	if runID == "" {
		run, err := tx.LatestRun()
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil, ErrNoRuns
		}
		return run, err
	}
	run, err := tx.Run(runID)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, fmt.Errorf("no run %q in %s (list them with `cadence runs`)", runID, dir)
	}
	return run, err
}

// stepData is the data of a step's accepted handoff envelope.
func stepData(run *checkpoint.Run, s *checkpoint.Step) (json.RawMessage, error) {
	if s.Status() != checkpoint.StepSucceeded || len(s.HandoffJSON) == 0 {
		return nil, fmt.Errorf("step %s of run %s is %s: %w", s.ID, run.ID, s.Status(), ErrNoOutput)
	}
	var env handoff.Envelope
	if err := json.Unmarshal(s.HandoffJSON, &env); err != nil {
		return nil, fmt.Errorf("step %s of run %s: stored handoff: %w", s.ID, run.ID, err)
	}
	return env.Data, nil
}

// itemsData is a JSON object of the succeeded items' data keyed by item
// key, in the items' frozen order; an error wrapping ErrNoOutput when no
// item succeeded.
func itemsData(stepID string, items []checkpoint.Step) (json.RawMessage, error) {
	buf := []byte{'{'}
	n := 0
	for _, it := range items {
		if it.Status() != checkpoint.StepSucceeded || len(it.HandoffJSON) == 0 {
			continue
		}
		var env handoff.Envelope
		if err := json.Unmarshal(it.HandoffJSON, &env); err != nil {
			return nil, fmt.Errorf("item %q of step %s: stored handoff: %w", it.ItemKey, stepID, err)
		}
		key, err := json.Marshal(it.ItemKey)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, key...)
		buf = append(buf, ':')
		buf = append(buf, env.Data...)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no item of map step %s succeeded (%d items): %w", stepID, len(items), ErrNoOutput)
	}
	return append(buf, '}'), nil
}

// alternatives lists names for a message: "a, b or c".
func alternatives(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	s := ""
	for i, n := range names[:len(names)-1] {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + " or " + names[len(names)-1]
}

// Runs returns every run in the state, oldest first, read without the
// project lock; ErrNoRuns when there is none (or no state yet).
func Runs(ctx context.Context, dir, state string) ([]checkpoint.Run, error) {
	var out []checkpoint.Run
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		var err error
		out, err = tx.Runs()
		return err
	})
	if err == nil && len(out) == 0 {
		err = ErrNoRuns
	}
	return out, err
}

// Candidates is what a command that continues a run reads to choose it:
// the run it names, the unfinished runs and the latest run, each found
// through an index of the project's runs, so the choice costs the same
// with ten runs of history as with ten thousand.
type Candidates struct {
	Named      *checkpoint.Run  // the run named, nil when none was or it is not in the state
	Unfinished []checkpoint.Run // the runs running or interrupted, oldest first
	Latest     *checkpoint.Run  // the most recently started run
}

// ResumeCandidates reads the Candidates of the project in dir without the
// project lock (named may be empty); ErrNoRuns when the project has no
// run (or no state yet).
func ResumeCandidates(ctx context.Context, dir, state, named string) (Candidates, error) {
	var c Candidates
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		latest, err := tx.LatestRun()
		if errors.Is(err, checkpoint.ErrNotFound) {
			return ErrNoRuns
		}
		if err != nil {
			return err
		}
		c.Latest = latest
		if named != "" {
			r, err := tx.Run(named)
			if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
				return err
			}
			c.Named = r
		}
		c.Unfinished, err = tx.UnfinishedRuns()
		return err
	})
	return c, err
}
