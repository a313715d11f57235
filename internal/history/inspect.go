package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/holder"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// Report is the machine-readable history of one run: the shape of
// `cadence inspect --json` (SPEC §8). Field names are stable.
type Report struct {
	Run      RunReport       `json:"run"`
	Steps    []StepReport    `json:"steps"`
	Circuits []CircuitReport `json:"circuits"`
}

// RunReport is the run part of a Report.
type RunReport struct {
	ID             string               `json:"id"`
	Status         checkpoint.RunStatus `json:"status"`
	Workflow       string               `json:"workflow"`
	WorkflowSHA256 string               `json:"workflow_sha256"`
	StartedAt      time.Time            `json:"started_at"`
	FinishedAt     *time.Time           `json:"finished_at"`
	CostUSD        float64              `json:"cost_usd"`
	CostUnknown    int                  `json:"cost_unknown_attempts"`
	// CostKnown is false when no attempt of the run reported a cost: the
	// agents report none, and cost_usd 0 means unknown, not free.
	CostKnown bool     `json:"cost_known"`
	BudgetUSD *float64 `json:"budget_usd"`
	// Inputs are the values the run was started with (SPEC §16.1); absent
	// for a workflow without inputs.
	Inputs json.RawMessage `json:"inputs,omitempty"`
	// WaitingFor are the approval gates the run waits on (SPEC §16.6), in
	// the order they were reached; absent when none waits.
	WaitingFor []WaitingReport `json:"waiting_for,omitempty"`
	// Skipped are the workflow's steps that were skipped (SPEC §16.4), in
	// the order of the steps: a gate among them was not asked. Absent
	// when none was.
	Skipped []string `json:"skipped,omitempty"`
	// Deliveries are the run's notifications (SPEC §17), one per event
	// and target, in the order of the events; absent when there are none.
	Deliveries []DeliveryReport `json:"deliveries,omitempty"`
	// Holder is the process working the run; null for a finished run and
	// for a running one that no process holds any more (its process was
	// killed: `cadence resume` continues it).
	Holder *Holder `json:"holder"`
}

// DeliveryReport is one notification of a run to one target.
type DeliveryReport struct {
	Event          string     `json:"event"`
	Target         string     `json:"target"` // a webhook's host (its path may be a secret), a command's program
	Status         string     `json:"status"` // pending, delivered, failed
	Attempts       int        `json:"attempts"`
	LastError      string     `json:"last_error"`
	IdempotencyKey string     `json:"idempotency_key"`
	CreatedAt      time.Time  `json:"created_at"`
	NextTryAt      *time.Time `json:"next_try_at"` // while pending
	DeliveredAt    *time.Time `json:"delivered_at"`
}

// StepReport is one step of a Report.
type StepReport struct {
	ID           string                `json:"id"`
	Status       checkpoint.StepStatus `json:"status"`
	Agent        string                `json:"agent"`
	AttemptsUsed int                   `json:"attempts_used"`
	MaxAttempts  int                   `json:"max_attempts"`
	NextRetryAt  *time.Time            `json:"next_retry_at"`
	SessionID    string                `json:"session_id"`
	CostUSD      float64               `json:"cost_usd"`
	Turns        int                   `json:"turns"`
	InputTokens  int64                 `json:"input_tokens"`
	OutputTokens int64                 `json:"output_tokens"`
	// CostUnknown and TokensUnknown are true when the step's attempts ran
	// and none reported a cost, or a token count: its agent reports none,
	// and the zeros above mean unknown, not free.
	CostUnknown   bool   `json:"cost_unknown"`
	TokensUnknown bool   `json:"tokens_unknown"`
	Handoff       string `json:"handoff,omitempty"`
	// Decision is the step's decision (SPEC §16.4): its when, the value
	// it had and what it read, or the skipped steps it was skipped for.
	Decision json.RawMessage `json:"decision,omitempty"`
	Attempts []AttemptReport `json:"attempts"`
	// Map steps only (SPEC §12): the number of items by status, each item
	// with its attempts, and the dead-letter queue of the step.
	ItemCounts map[checkpoint.StepStatus]int `json:"item_counts,omitempty"`
	Items      []ItemReport                  `json:"items,omitempty"`
	Dead       []DeadReport                  `json:"dead,omitempty"`
	// Loop steps only (SPEC §16.5): its iterations in order, each with its
	// inner steps. Inner steps are not among the run's top-level steps.
	Iterations []IterationReport `json:"iterations,omitempty"`
	// Approval gates only, once reached (SPEC §16.6): waiting, or the
	// decision taken, by whom and when.
	Approval *ApprovalReport `json:"approval,omitempty"`
}

// ItemReport is one item of a map step: the state of a step of its own.
type ItemReport struct {
	Key          string                `json:"key"`
	Item         json.RawMessage       `json:"item"` // the item as frozen when the step started
	Status       checkpoint.StepStatus `json:"status"`
	AttemptsUsed int                   `json:"attempts_used"`
	MaxAttempts  int                   `json:"max_attempts"`
	NextRetryAt  *time.Time            `json:"next_retry_at"`
	SessionID    string                `json:"session_id"`
	CostUSD      float64               `json:"cost_usd"`
	Turns        int                   `json:"turns"`
	InputTokens  int64                 `json:"input_tokens"`
	OutputTokens int64                 `json:"output_tokens"`
	Handoff      string                `json:"handoff,omitempty"`
	Attempts     []AttemptReport       `json:"attempts"`
}

// DeadReport is one item in the dead-letter queue.
type DeadReport struct {
	Step      string    `json:"step"`
	Key       string    `json:"key"`
	Class     string    `json:"class"`
	Error     string    `json:"error"`
	Signature string    `json:"signature"`
	Attempts  int       `json:"attempts"`
	FirstAt   time.Time `json:"first_at"`
	LastAt    time.Time `json:"last_at"`
	DeadAt    time.Time `json:"dead_at"`
}

// AttemptReport is one attempt of a StepReport.
type AttemptReport struct {
	N            int                      `json:"n"`
	Status       checkpoint.AttemptStatus `json:"status"`
	Kind         string                   `json:"kind"`
	Class        string                   `json:"class"`
	Error        string                   `json:"error"`
	StartedAt    time.Time                `json:"started_at"`
	FinishedAt   *time.Time               `json:"finished_at"`
	PID          *int                     `json:"pid"`
	ExitCode     *int                     `json:"exit_code"`
	SessionID    string                   `json:"session_id"`
	DelayMS      *int64                   `json:"delay_ms"`
	NextRetryAt  *time.Time               `json:"next_retry_at"`
	RetryAfterMS *int64                   `json:"retry_after_ms"`
	Repairs      []string                 `json:"repairs"`
	// Provenance is where the handoff was found: output, fence_json, file
	// or prose; for a failed attempt, where the value refused as one was
	// (code_span, code_fence, prose). Omitted when no value was found.
	Provenance    string   `json:"provenance,omitempty"`
	FailedHandoff string   `json:"failed_handoff"`
	OutputFile    string   `json:"output_file"`
	CostUSD       *float64 `json:"cost_usd"`
	Turns         int      `json:"turns"`
	InputTokens   int64    `json:"input_tokens"`
	OutputTokens  int64    `json:"output_tokens"`
	// CircuitGen is the generation of the agent's circuit breaker the
	// attempt was admitted under; it changes with every transition of the
	// breaker, so a report can tell where the circuit opened and closed.
	CircuitGen int64  `json:"circuit_gen"`
	Prompt     string `json:"prompt,omitempty"`
	Details    string `json:"details,omitempty"`
	// Uncounted marks an attempt that did not use up one of max_attempts:
	// a budget stop, or a usage limit with a reset time.
	Uncounted bool `json:"uncounted,omitempty"`
	// Warning says what was wrong with an attempt that succeeded anyway,
	// such as an agent that exited non-zero after a valid handoff.
	Warning string `json:"warning,omitempty"`
	// Agent is the agent entry that ran the attempt: the step's agent or
	// one of its fallbacks (SPEC §17); empty on a row recorded before
	// attempts named it, and for a help round or a command.
	Agent string `json:"agent,omitempty"`
	// Checks are the check runs of the attempt, in order (SPEC §11).
	Checks []CheckReport `json:"checks"`
	// Snapshot and SnapshotAfter are the commits recording the attempt's
	// work tree before and after it (SPEC §19); omitted when none was
	// recorded (not a git repository, an attempt cut short).
	Snapshot      string `json:"snapshot,omitempty"`
	SnapshotAfter string `json:"snapshot_after,omitempty"`
	// FilesChanged are the files the attempt changed, between its two
	// snapshots: filled by inspect's view of one attempt (git is asked
	// then only), omitted elsewhere and without both snapshots.
	FilesChanged []string `json:"files_changed,omitempty"`
}

// CheckReport is one check run of an attempt.
type CheckReport struct {
	Name       string     `json:"name"`
	Command    string     `json:"command"`
	Status     string     `json:"status"`
	ExitCode   *int       `json:"exit_code"`
	Signal     string     `json:"signal,omitempty"`
	TimedOut   bool       `json:"timed_out,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	DurationMS int64      `json:"duration_ms"`
	OutputFile string     `json:"output_file"`
	// Tail is the end of its output, shown with --attempt.
	Tail string `json:"tail,omitempty"`
}

// CircuitReport is one agent's breaker.
type CircuitReport struct {
	Agent      string     `json:"agent"`
	State      string     `json:"state"`
	Failures   int        `json:"failures"`
	Generation int64      `json:"generation"`
	OpenedAt   *time.Time `json:"opened_at"`
	OpenUntil  *time.Time `json:"open_until"`
}

// openForReading opens the state database for inspect and stats, without the
// project lock, and read-only: it never writes the state, nor upgrades a
// database an older cadence wrote (that is an error saying what to run),
// so that a user who may read the project but not write it can look.
func openForReading(ctx context.Context, dir, path string) (*checkpoint.Store, error) {
	return projectid.OpenReadOnly(ctx, dir, path)
}

// ErrNoRuns is returned by Inspect when the project has no run yet.
var ErrNoRuns = errors.New("no runs yet")

// StateTarget returns the state database of the project in dir: state
// when it is set (a postgres:// URL, or the path of a SQLite file), else
// the project's .cadence/state.db.
func StateTarget(dir, state string) string {
	if state != "" {
		return state
	}
	return filepath.Join(dir, checkpoint.CadenceDir, "state.db")
}

// Inspect reads the history of a run (the latest when runID is empty)
// without taking the project lock: it reads while a run goes on (G7).
// state is the state database as for StateTarget. withPrompts includes
// each attempt's prompt and diagnosis.
func Inspect(ctx context.Context, dir, state, runID string, withPrompts bool) (*Report, error) {
	var rep Report
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		var (
			run *checkpoint.Run
			err error
		)
		if runID == "" {
			run, err = tx.LatestRun()
			if errors.Is(err, checkpoint.ErrNotFound) {
				return ErrNoRuns
			}
		} else {
			run, err = tx.Run(runID)
			if errors.Is(err, checkpoint.ErrNotFound) {
				return fmt.Errorf("no run %q in %s", runID, dir)
			}
		}
		if err != nil {
			return err
		}
		cost, unknown, err := tx.RunCost(run.ID)
		if err != nil {
			return err
		}
		rep.Run = RunReport{ID: run.ID, Status: run.Status(), Workflow: run.WorkflowPath, WorkflowSHA256: run.WorkflowSHA256,
			StartedAt: run.StartedAt, FinishedAt: run.FinishedAt, CostUSD: cost, CostUnknown: unknown, BudgetUSD: run.BudgetUSD,
			Inputs: json.RawMessage(run.InputsJSON)}
		if rep.Run.Holder, err = runHolder(tx, run, holder.Self()); err != nil {
			return err
		}
		deliveries, err := tx.RunDeliveries(run.ID)
		if err != nil {
			return err
		}
		for _, d := range deliveries {
			dr := DeliveryReport{Event: d.Event, Target: d.Target, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError,
				IdempotencyKey: d.IdempotencyKey, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt}
			if d.Status == checkpoint.DeliveryPending {
				next := d.NextTryAt
				dr.NextTryAt = &next
			}
			rep.Run.Deliveries = append(rep.Run.Deliveries, dr)
		}
		steps, err := tx.Steps(run.ID)
		if err != nil {
			return err
		}
		read := tx.AllAttemptsBrief
		if withPrompts {
			read = tx.AllAttempts
		}
		attempts, err := read(run.ID)
		if err != nil {
			return err
		}
		byUnit := map[checkpoint.Unit][]checkpoint.Attempt{}
		for _, a := range attempts {
			byUnit[a.Unit()] = append(byUnit[a.Unit()], a)
		}
		checks, err := tx.RunChecks(run.ID)
		if err != nil {
			return err
		}
		byAttempt := map[attemptKey][]CheckReport{}
		for _, c := range checks {
			cr := CheckReport{Name: c.Name, Command: c.Command, Status: c.Status, ExitCode: c.ExitCode, Signal: c.Signal,
				TimedOut: c.TimedOut, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
				DurationMS: c.Duration().Milliseconds(), OutputFile: c.OutputFile}
			if withPrompts {
				cr.Tail = c.Tail
			}
			k := attemptKey{checkpoint.Unit{RunID: c.RunID, StepID: c.StepID, Item: c.ItemKey}, c.N}
			byAttempt[k] = append(byAttempt[k], cr)
		}
		dead, err := tx.DeadLetters(run.ID)
		if err != nil {
			return err
		}
		approvals, err := tx.Approvals(run.ID)
		if err != nil {
			return err
		}
		gates := make(map[checkpoint.Unit]checkpoint.Approval, len(approvals))
		for _, a := range approvals {
			gates[a.Unit] = a
		}
		rep.Steps = make([]StepReport, 0, len(steps))
		defer func() { rep.Steps = nestLoops(rep.Steps) }()
		anyCost := false
		defer func() { rep.Run.CostKnown = rep.Run.CostUnknown == 0 || anyCost }()
		for _, s := range steps {
			sr := StepReport{ID: s.ID, Status: s.Status(), Agent: s.Agent, MaxAttempts: s.MaxAttempts, NextRetryAt: s.NextRetryAt,
				SessionID: s.SessionID, CostUSD: s.CostUSD, Turns: s.Turns, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
				Decision: json.RawMessage(s.DecisionJSON)}
			if s.Status() == checkpoint.StepSucceeded {
				sr.Handoff = filepath.ToSlash(checkpoint.EnvelopePath(s.Unit()))
			}
			sr.AttemptsUsed, sr.Attempts = attemptReports(byUnit[s.Unit()], byAttempt, withPrompts)
			costKnown, tokensKnown := usageKnown(sr.Attempts)
			anyCost = anyCost || (costKnown && len(sr.Attempts) > 0)
			items, err := tx.Items(run.ID, s.ID)
			if err != nil {
				return err
			}
			if len(items) > 0 {
				// A map step's own usage is its items'.
				costKnown, tokensKnown = false, false
				sr.ItemCounts = map[checkpoint.StepStatus]int{}
				sr.Items = make([]ItemReport, 0, len(items))
				sr.Dead = []DeadReport{}
			}
			for _, it := range items {
				ir := ItemReport{Key: it.ItemKey, Item: json.RawMessage(it.ItemJSON), Status: it.Status(), MaxAttempts: it.MaxAttempts, NextRetryAt: it.NextRetryAt,
					SessionID: it.SessionID, CostUSD: it.CostUSD, Turns: it.Turns, InputTokens: it.InputTokens, OutputTokens: it.OutputTokens}
				if it.Status() == checkpoint.StepSucceeded {
					ir.Handoff = filepath.ToSlash(checkpoint.EnvelopePath(it.Unit()))
				}
				ir.AttemptsUsed, ir.Attempts = attemptReports(byUnit[it.Unit()], byAttempt, withPrompts)
				sr.ItemCounts[it.Status()]++
				sr.CostUSD += it.CostUSD
				sr.Turns += it.Turns
				sr.InputTokens += it.InputTokens
				sr.OutputTokens += it.OutputTokens
				itCost, itTokens := usageKnown(ir.Attempts)
				anyCost = anyCost || (itCost && len(ir.Attempts) > 0)
				costKnown = costKnown || itCost
				tokensKnown = tokensKnown || itTokens
				sr.Items = append(sr.Items, ir)
			}
			for _, d := range dead {
				if d.StepID == s.ID {
					sr.Dead = append(sr.Dead, DeadReport{Step: d.StepID, Key: d.ItemKey, Class: d.Class, Error: d.Error,
						Signature: d.Signature, Attempts: d.Attempts, FirstAt: d.FirstAt, LastAt: d.LastAt, DeadAt: d.DeadAt})
				}
			}
			sr.CostUnknown, sr.TokensUnknown = !costKnown, !tokensKnown
			if a, ok := gates[s.Unit()]; ok {
				sr.Approval = approvalReport(a, s.Status())
				if s.Status() == checkpoint.StepWaiting && !a.Decided() {
					rep.Run.WaitingFor = append(rep.Run.WaitingFor, WaitingReport{Step: s.ID, Prompt: a.Prompt,
						Since: a.RequestedAt, TimeoutAt: a.TimeoutAt})
				}
			}
			rep.Steps = append(rep.Steps, sr)
			if s.Status() == checkpoint.StepSkipped && !strings.Contains(s.ID, "/") {
				rep.Run.Skipped = append(rep.Run.Skipped, s.ID)
			}
		}
		circuits, err := tx.Circuits()
		if err != nil {
			return err
		}
		rep.Circuits = make([]CircuitReport, 0, len(circuits))
		for _, c := range circuits {
			cr := CircuitReport{Agent: c.Agent, State: c.State, Failures: c.Failures,
				Generation: c.Generation, OpenedAt: c.OpenedAt, OpenUntil: c.OpenUntil}
			if c.State == string(circuit.Closed) {
				// A closed breaker keeps its last deadline only so that it is
				// never moved earlier; it no longer applies.
				cr.OpenedAt, cr.OpenUntil = nil, nil
			}
			rep.Circuits = append(rep.Circuits, cr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// usageKnown reports whether any of the attempts reported a cost, and any
// a token count; both are known (nothing was spent) when no attempt ran.
func usageKnown(atts []AttemptReport) (cost, tokens bool) {
	if len(atts) == 0 {
		return true, true
	}
	for _, a := range atts {
		cost = cost || a.CostUSD != nil
		tokens = tokens || a.InputTokens > 0 || a.OutputTokens > 0
	}
	return cost, tokens
}

// attemptKey names one attempt of a unit.
type attemptKey struct {
	unit checkpoint.Unit
	n    int
}

// attemptReports reports the attempts of one step or item, and how many of
// them count against its max_attempts.
func attemptReports(list []checkpoint.Attempt, checks map[attemptKey][]CheckReport, withPrompts bool) (int, []AttemptReport) {
	used := 0
	out := make([]AttemptReport, 0, len(list))
	for _, a := range list {
		if a.Kind != checkpoint.KindHelp && !a.Uncounted {
			used++
		}
		ar := AttemptReport{N: a.N, Status: a.Status(), Kind: a.Kind, Class: a.Class, Error: a.Error,
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, PID: a.PID, ExitCode: a.ExitCode, SessionID: a.SessionID,
			DelayMS: a.DelayMS, NextRetryAt: a.NextRetryAt, RetryAfterMS: a.RetryAfterMS, Repairs: nonNil(a.Repairs), Provenance: a.Provenance,
			FailedHandoff: a.FailedHandoff, OutputFile: a.OutputFile, CostUSD: a.CostUSD, Turns: a.Turns,
			InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, CircuitGen: a.CircuitGen, Uncounted: a.Uncounted, Warning: a.Warning,
			Agent: a.Agent, Checks: checks[attemptKey{a.Unit(), a.N}], Snapshot: a.Snapshot, SnapshotAfter: a.SnapshotAfter}
		if ar.Checks == nil {
			ar.Checks = []CheckReport{}
		}
		if withPrompts {
			ar.Prompt = a.Prompt
			ar.Details = string(a.DetailsJSON)
		}
		out = append(out, ar)
	}
	return used, out
}

// readState runs fn in a read transaction of the project's state, opened
// read-only and without the project lock (G7), so that it reads while a run
// goes on; ErrNoRuns when there is no state database yet.
func readState(ctx context.Context, dir, state string, fn func(*checkpoint.Tx) error) error {
	store, err := openForReading(ctx, dir, StateTarget(dir, state))
	if errors.Is(err, checkpoint.ErrNoDatabase) {
		return ErrNoRuns
	}
	if err != nil {
		return err
	}
	defer store.Close()
	return store.View(ctx, fn)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
