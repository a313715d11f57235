package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
)

// Warning thresholds of `inspect --stats` (SPEC §9): a step or agent that
// exhausts its attempts more often than this, or needs more retries than this
// on average before it succeeds, is named in Stats.Warnings.
const (
	WarnExhaustionRate = 0.05
	WarnMeanRetries    = 2.0
)

// Stats is the aggregate history of a project (or of one run) that
// `cadence inspect --stats` shows: how well each step and each agent hands
// off, what it costs and where the time goes.
type Stats struct {
	Scope string `json:"scope"` // "all runs" or "run ID"
	Runs  int    `json:"runs"`  // runs the figures cover
	// Workflows counts the different workflows (by sha256) of those runs:
	// over 1, the figures mix steps and agents of earlier workflows, which
	// StepStats.Earlier and AgentStats.Earlier mark.
	Workflows int          `json:"workflows"`
	Steps     []StepStats  `json:"steps"` // in order of first appearance (workflow order)
	Agents    []AgentStats `json:"agents"`
	Checks    []CheckStats `json:"checks"` // by step, in order of first appearance, then by check
	// Maps are the figures of each map step (SPEC §12); each of its items
	// is also one execution of the step in Steps.
	Maps []MapStats `json:"maps"`
	// Loops are the figures of each loop step (SPEC §16.5): how many
	// iterations it took to reach its until. Each inner step's run in an
	// iteration is one execution of that step in Steps.
	Loops []LoopStats `json:"loops"`
	// Gates are the figures of each approval gate (SPEC §16.6): its
	// decisions and how long it waited for them.
	Gates    []GateStats `json:"gates"`
	Warnings []string    `json:"warnings"`
}

// LoopStats are the figures of one loop step over every run in scope.
type LoopStats struct {
	Step string `json:"step"`
	// Loops counts the runs in which the loop ran an iteration; Running
	// the ones not finished.
	Loops   int `json:"loops"`
	Running int `json:"running"`
	// Succeeded counts the loops whose until became true; Exhausted the
	// ones that ended with it still false (max_iterations used up, the
	// loop failed or went on with on_exhausted: continue); Failed the
	// ones an inner step failed (or whose until could not be evaluated).
	Succeeded int `json:"succeeded"`
	Exhausted int `json:"exhausted"`
	Failed    int `json:"failed"`
	// Iterations counts every iteration begun.
	Iterations int `json:"iterations"`
	// MinIterationsToSuccess, MedianIterationsToSuccess and
	// MaxIterationsToSuccess are over the loops that succeeded: the
	// iteration whose until was true. 0 when none did.
	MinIterationsToSuccess    int     `json:"min_iterations_to_success"`
	MedianIterationsToSuccess float64 `json:"median_iterations_to_success"`
	MaxIterationsToSuccess    int     `json:"max_iterations_to_success"`
	toSuccess                 []int
}

// GateStats are the figures of one approval gate over every run in scope.
type GateStats struct {
	Step string `json:"step"`
	// Reached counts the times a run reached the gate (one per iteration
	// for a gate inside a loop); they end approved, rejected, timed out
	// (no decision before its timeout) or are still waiting.
	Reached  int `json:"reached"`
	Approved int `json:"approved"`
	Rejected int `json:"rejected"`
	TimedOut int `json:"timed_out"`
	Waiting  int `json:"waiting"`
	// MeanWaitSeconds and MaxWaitSeconds are the time from the gate
	// reached to its decision, over the decided ones.
	MeanWaitSeconds float64 `json:"mean_wait_seconds"`
	MaxWaitSeconds  float64 `json:"max_wait_seconds"`
	// WaitingSeconds is how long the longest still waiting has waited, up
	// to when the figures were read.
	WaitingSeconds float64 `json:"waiting_seconds"`
	waitTotal      float64
}

// MapStats are the figures of one map step over every run in scope: its
// items, how they ended, and the dead-letter queue by error signature.
type MapStats struct {
	Step      string `json:"step"`
	Runs      int    `json:"runs"` // runs in which the step froze its items
	Items     int    `json:"items"`
	Succeeded int    `json:"succeeded"`
	Dead      int    `json:"dead"`
	// DeadRate is Dead over the items that ended (succeeded or dead).
	DeadRate float64 `json:"dead_rate"`
	// Signatures counts the dead items by error signature.
	Signatures map[string]int `json:"signatures"`
}

// CheckStats are the figures of one check of one step, over every check
// run in scope (SPEC §11): how often it fails, and how long it takes.
type CheckStats struct {
	Step  string `json:"step"`
	Check string `json:"check"`
	// Runs counts the check runs that finished (passed or failed);
	// Interrupted the ones a crash or a stop cut short, which resume ran
	// again.
	Runs        int `json:"runs"`
	Failed      int `json:"failed"`
	Interrupted int `json:"interrupted"`
	// FailureRate is Failed over Runs.
	FailureRate float64 `json:"failure_rate"`
	// MeanSeconds is the mean duration of the finished runs.
	MeanSeconds float64 `json:"mean_seconds"`
}

// StepStats are the figures of one step id, over every run in scope.
type StepStats struct {
	Step string `json:"step"`
	// Earlier marks a step that the latest run in scope does not have: it
	// belongs to an earlier, different workflow.
	Earlier bool `json:"earlier_workflow,omitempty"`
	Counts
}

// AgentStats are the figures of one agent, over every step execution that
// ran on it. A step's help rounds are counted with the step's agent.
type AgentStats struct {
	Agent string `json:"agent"`
	// Earlier marks an agent that no step of the latest run in scope uses.
	Earlier bool `json:"earlier_workflow,omitempty"`
	Counts
}

// Counts are the figures shared by steps and agents. A rate whose
// denominator is zero is reported as 0 (JSON has no NaN).
type Counts struct {
	// Steps counts step executions: one per run in which the step started
	// (has at least one attempt row).
	Steps int `json:"steps"`
	// Succeeded, Exhausted and Failed split the executions that finished:
	// succeeded; failed after using every attempt; failed otherwise (a class
	// that is not retried, a budget stop). Unfinished executions are in none.
	Succeeded int `json:"succeeded"`
	Exhausted int `json:"exhausted"`
	Failed    int `json:"failed"`
	// Skipped counts the runs in which the step was skipped by its when,
	// or because a step it needs was (SPEC §16.4); they are not in Steps.
	Skipped int `json:"skipped"`
	// Attempts counts the finished attempts that used one of max_attempts
	// (help rounds, usage-limit refusals and budget stops excluded): the
	// denominator of SuccessRate.
	Attempts int `json:"attempts"`
	// SuccessRate is accepted (succeeded or adopted) handoffs per finished
	// attempt.
	SuccessRate float64 `json:"handoff_success_rate"`
	// MeanAttemptsToSuccess is the mean number of attempts, counted as
	// against max_attempts, that succeeded executions used, the successful
	// one included.
	MeanAttemptsToSuccess float64 `json:"mean_attempts_to_success"`
	// ExhaustionRate is Exhausted over the executions that finished.
	ExhaustionRate float64 `json:"exhaustion_rate"`
	// FailureClasses counts failed and interrupted attempts by class,
	// uncounted ones (usage limits, budget stops) included.
	FailureClasses map[string]int `json:"failure_classes"`
	// Repairs counts the repairs applied, by name, over every attempt.
	Repairs map[string]int `json:"repairs"`
	// CostUSD sums the costs agents reported. CostPerAttemptUSD divides it by
	// the attempts that reported one; CostUnknownAttempts counts the finished
	// attempts whose agent reported none, so CostUSD is a lower bound when it
	// is not zero.
	CostUSD             float64 `json:"cost_usd"`
	CostPerAttemptUSD   float64 `json:"cost_per_attempt_usd"`
	CostUnknownAttempts int     `json:"cost_unknown_attempts"`
	// RunningSeconds is the time spent in finished attempts; WaitingSeconds
	// the time between an attempt's end and the start of the step's next
	// attempt that cadence spent waiting (backoffs, circuit waits), not the
	// time it was stopped before a resume.
	RunningSeconds float64 `json:"running_seconds"`
	WaitingSeconds float64 `json:"waiting_seconds"`
}

// MeanRetries is the mean number of retries a succeeded execution needed
// (MeanAttemptsToSuccess − 1), or 0 when none succeeded.
func (c Counts) MeanRetries() float64 {
	if c.Succeeded == 0 {
		return 0
	}
	return c.MeanAttemptsToSuccess - 1
}

// ComputeStats reads the project's state database without taking the
// project lock, so it works while a run goes on (G7). runID "" covers every
// run of the project; otherwise only that run. A project with no run yet is
// ErrNoRuns; an unknown runID wraps checkpoint.ErrNotFound.
func ComputeStats(ctx context.Context, dir, state, runID string) (*Stats, error) {
	agg := newStatsAggregator()
	stats := &Stats{Scope: "all runs"}
	now := time.Now()
	latestSteps, latestAgents := map[string]bool{}, map[string]bool{}
	err := readState(ctx, dir, state, func(tx *checkpoint.Tx) error {
		runs, err := statsRuns(tx, dir, runID)
		if err != nil {
			return err
		}
		stats.Runs = len(runs)
		shas := map[string]bool{}
		for _, r := range runs {
			shas[r.WorkflowSHA256] = true
		}
		stats.Workflows = len(shas)
		latest, err := tx.Steps(runs[len(runs)-1].ID)
		if err != nil {
			return err
		}
		for _, s := range latest {
			latestSteps[address.Of(s.ID).StepName()], latestAgents[s.Agent] = true, true
		}
		for _, r := range runs {
			steps, err := tx.Steps(r.ID)
			if err != nil {
				return err
			}
			attempts, err := tx.AllAttemptsBrief(r.ID)
			if err != nil {
				return err
			}
			byUnit := make(map[checkpoint.Unit][]checkpoint.Attempt, len(steps))
			for _, a := range attempts {
				byUnit[a.Unit()] = append(byUnit[a.Unit()], a)
			}
			dead, err := tx.DeadLetters(r.ID)
			if err != nil {
				return err
			}
			events, err := tx.Events(r.ID)
			if err != nil {
				return err
			}
			agg.stops = runStops(events)
			agg.addLoops(steps)
			for _, s := range steps {
				if address.Of(s.ID).IsIteration() {
					continue // an iteration of a loop: its inner steps ran
				}
				// An inner step of a loop is one execution of its
				// workflow step in each iteration.
				name := address.Of(s.ID).StepName()
				agg.add(named(s, name), byUnit[s.Unit()])
				items, err := tx.Items(r.ID, s.ID)
				if err != nil {
					return err
				}
				// Each item of a map step is one execution of the step.
				for _, it := range items {
					agg.add(named(it, name), byUnit[it.Unit()])
				}
				if len(items) > 0 {
					agg.addMap(name, s.ID, items, dead)
				}
			}
			approvals, err := tx.Approvals(r.ID)
			if err != nil {
				return err
			}
			agg.addGates(approvals, steps, now)
			checks, err := tx.RunChecks(r.ID)
			if err != nil {
				return err
			}
			for _, c := range checks {
				c.StepID = address.Of(c.StepID).StepName()
				agg.addCheck(c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compute stats of %s: %w", dir, err)
	}
	if runID != "" {
		stats.Scope = "run " + runID
	}
	stats.Steps, stats.Agents = agg.result()
	if stats.Workflows > 1 {
		for i := range stats.Steps {
			stats.Steps[i].Earlier = !latestSteps[stats.Steps[i].Step]
		}
		for i := range stats.Agents {
			stats.Agents[i].Earlier = !latestAgents[stats.Agents[i].Agent]
		}
	}
	stats.Checks = agg.checkResult(stats.Steps)
	stats.Maps = agg.mapResult()
	stats.Loops, stats.Gates = agg.loopResult(), agg.gateResult()
	stats.Warnings = statsWarnings(stats)
	return stats, nil
}

// statsRuns returns the runs in scope, oldest first.
func statsRuns(tx *checkpoint.Tx, dir, runID string) ([]checkpoint.Run, error) {
	if runID != "" {
		r, err := tx.Run(runID)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil, fmt.Errorf("no run %q in %s: %w", runID, dir, checkpoint.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		return []checkpoint.Run{*r}, nil
	}
	runs, err := tx.Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, ErrNoRuns
	}
	return runs, nil
}

// statsWarnings names every step and agent whose exhaustion rate or mean
// retries is over its threshold, steps first.
func statsWarnings(s *Stats) []string {
	out := []string{}
	for _, st := range s.Steps {
		out = append(out, countsWarnings("step "+st.Step, st.Counts)...)
	}
	for _, a := range s.Agents {
		out = append(out, countsWarnings("agent "+a.Agent, a.Counts)...)
	}
	return out
}

// countsWarnings returns the warnings of one step or agent, named by what.
func countsWarnings(what string, c Counts) []string {
	var out []string
	if c.ExhaustionRate > WarnExhaustionRate {
		out = append(out, fmt.Sprintf("%s: exhaustion rate %.1f%% (%d of %d finished executions), over %.0f%%",
			what, 100*c.ExhaustionRate, c.Exhausted, c.Succeeded+c.Exhausted+c.Failed, 100*WarnExhaustionRate))
	}
	if r := c.MeanRetries(); r > WarnMeanRetries {
		out = append(out, fmt.Sprintf("%s: %.2f retries on average before success, over %.0f",
			what, r, WarnMeanRetries))
	}
	return out
}

// statsAggregator accumulates step executions into per-step and per-agent
// tallies.
type statsAggregator struct {
	steps     map[string]*statsTally
	stepOrder []string
	agents    map[string]*statsTally
	checks    map[[2]string]*checkTally // by step and check name
	maps      map[string]*MapStats
	mapOrder  []string
	loops     map[string]*LoopStats
	loopOrder []string
	gates     map[string]*GateStats
	gateOrder []string
	// stops are the stops of the run whose steps are being added.
	stops []stop
}

// addMap records the items of one run of a map step.
// step names the map step, id its row (implement/2/fix inside a loop).
func (g *statsAggregator) addMap(step, id string, items []checkpoint.Step, dead []checkpoint.DeadLetter) {
	m, ok := g.maps[step]
	if !ok {
		m = &MapStats{Step: step, Signatures: map[string]int{}}
		g.maps[step] = m
		g.mapOrder = append(g.mapOrder, step)
	}
	m.Runs++
	m.Items += len(items)
	for _, it := range items {
		if it.Status() == checkpoint.StepSucceeded {
			m.Succeeded++
		}
	}
	for _, d := range dead {
		if d.StepID == id {
			m.Dead++
			m.Signatures[d.Signature]++
		}
	}
}

// mapResult returns the map figures in order of first appearance.
func (g *statsAggregator) mapResult() []MapStats {
	out := make([]MapStats, 0, len(g.mapOrder))
	for _, id := range g.mapOrder {
		m := *g.maps[id]
		m.DeadRate = statsRatio(float64(m.Dead), m.Succeeded+m.Dead)
		out = append(out, m)
	}
	return out
}

// checkTally is a CheckStats under construction.
type checkTally struct {
	c       CheckStats
	seconds float64
}

// addCheck records one check run.
func (g *statsAggregator) addCheck(c checkpoint.Check) {
	k := [2]string{c.StepID, c.Name}
	t, ok := g.checks[k]
	if !ok {
		t = &checkTally{c: CheckStats{Step: c.StepID, Check: c.Name}}
		g.checks[k] = t
	}
	switch c.Status {
	case checkpoint.CheckPassed, checkpoint.CheckFailed:
		t.c.Runs++
		t.seconds += c.Duration().Seconds()
		if c.Status == checkpoint.CheckFailed {
			t.c.Failed++
		}
	case checkpoint.CheckInterrupted:
		t.c.Interrupted++
	}
}

// checkResult turns the check tallies into figures, ordered as the steps
// are and then by check name.
func (g *statsAggregator) checkResult(steps []StepStats) []CheckStats {
	pos := make(map[string]int, len(steps))
	for i, s := range steps {
		pos[s.Step] = i
	}
	out := make([]CheckStats, 0, len(g.checks))
	for _, t := range g.checks {
		c := t.c
		c.FailureRate = statsRatio(float64(c.Failed), c.Runs)
		c.MeanSeconds = statsRatio(t.seconds, c.Runs)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if pi, pj := pos[out[i].Step], pos[out[j].Step]; pi != pj {
			return pi < pj
		}
		return out[i].Step < out[j].Step || out[i].Step == out[j].Step && out[i].Check < out[j].Check
	})
	return out
}

// statsTally is a Counts under construction, with the sums the derived figures
// need.
type statsTally struct {
	c                 Counts
	accepted          int // accepted handoffs
	attemptsToSuccess int // attempts used by succeeded executions, summed
	costKnown         int // attempts that reported a cost
}

// stop is a time no cadence process worked on a run: from its stop (zero
// when it was not recorded: cadence was killed) to its resume.
type stop struct{ from, to time.Time }

// runStops reads a run's stops from its audit log.
func runStops(events []checkpoint.Event) []stop {
	var out []stop
	var from time.Time
	for _, e := range events {
		switch e.Kind {
		case EventKindRunStopped:
			from = e.At
		case EventKindRunResumed:
			out = append(out, stop{from: from, to: e.At})
			from = time.Time{}
		}
	}
	return out
}

// waiting is the time between an attempt's end and the next attempt's
// start that cadence spent waiting: the gap, less the time cadence was
// stopped. A resume within the gap whose stop was not recorded (a killed
// cadence) counts the gap up to that resume as stopped.
func waiting(end, next time.Time, stops []stop) time.Duration {
	d := next.Sub(end)
	for _, s := range stops {
		if !s.to.After(end) || s.to.After(next) {
			continue
		}
		from := s.from
		if from.IsZero() || from.Before(end) {
			from = end
		}
		d -= s.to.Sub(from)
	}
	return max(d, 0)
}

func newStatsAggregator() *statsAggregator {
	return &statsAggregator{steps: map[string]*statsTally{}, agents: map[string]*statsTally{}, checks: map[[2]string]*checkTally{},
		maps: map[string]*MapStats{}, loops: map[string]*LoopStats{}, gates: map[string]*GateStats{}}
}

// add records one step execution: the step's row in a run and its attempts
// in order. A step with no attempt never started and is not counted.
// CommandSteps is the name stats give the command steps' row among the
// agents': a command step has no agent.
const CommandSteps = "(commands)"

func (g *statsAggregator) add(s checkpoint.Step, attempts []checkpoint.Attempt) {
	skipped := s.Status() == checkpoint.StepSkipped
	if len(attempts) == 0 && !skipped {
		return
	}
	st, ok := g.steps[s.ID]
	if !ok {
		st = newStatsTally()
		g.steps[s.ID] = st
		g.stepOrder = append(g.stepOrder, s.ID)
	}
	agentName := s.Agent
	if agentName == "" {
		agentName = CommandSteps
	}
	ag, ok := g.agents[agentName]
	if !ok {
		ag = newStatsTally()
		g.agents[agentName] = ag
	}
	if skipped {
		st.c.Skipped++
		ag.c.Skipped++
		return
	}
	st.add(s, attempts, g.stops)
	ag.add(s, attempts, g.stops)
}

// result turns the tallies into the figures, steps in order of first
// appearance and agents by name.
func (g *statsAggregator) result() ([]StepStats, []AgentStats) {
	steps := make([]StepStats, 0, len(g.stepOrder))
	for _, id := range g.stepOrder {
		steps = append(steps, StepStats{Step: id, Counts: g.steps[id].counts()})
	}
	names := make([]string, 0, len(g.agents))
	for name := range g.agents {
		names = append(names, name)
	}
	sort.Strings(names)
	agents := make([]AgentStats, 0, len(names))
	for _, name := range names {
		agents = append(agents, AgentStats{Agent: name, Counts: g.agents[name].counts()})
	}
	return steps, agents
}

func newStatsTally() *statsTally {
	return &statsTally{c: Counts{FailureClasses: map[string]int{}, Repairs: map[string]int{}}}
}

// add records one step execution into the tally.
func (t *statsTally) add(s checkpoint.Step, attempts []checkpoint.Attempt, stops []stop) {
	t.c.Steps++
	counted := 0
	var lastCounted *checkpoint.Attempt
	for i := range attempts {
		a := &attempts[i]
		if i > 0 {
			if prev := attempts[i-1].FinishedAt; prev != nil {
				t.c.WaitingSeconds += waiting(*prev, a.StartedAt, stops).Seconds()
			}
		}
		for _, r := range a.Repairs {
			t.c.Repairs[r]++
		}
		finished := a.FinishedAt != nil && a.Status() != checkpoint.AttemptRunning
		if a.CostUSD != nil {
			t.c.CostUSD += *a.CostUSD
			t.costKnown++
		} else if finished {
			t.c.CostUnknownAttempts++
		}
		if finished {
			if d := a.FinishedAt.Sub(a.StartedAt); d > 0 {
				t.c.RunningSeconds += d.Seconds()
			}
		}
		if a.Kind == checkpoint.KindHelp {
			continue
		}
		if a.Uncounted {
			// A usage-limit refusal or a budget stop: its class is worth
			// showing, but it used no attempt and judged no handoff.
			if finished && a.Class != "" {
				t.c.FailureClasses[a.Class]++
			}
			continue
		}
		counted++
		lastCounted = a
		if !finished {
			continue
		}
		t.c.Attempts++
		switch a.Status() {
		case checkpoint.AttemptSucceeded, checkpoint.AttemptAdopted:
			t.accepted++
		default:
			if a.Class != "" {
				t.c.FailureClasses[a.Class]++
			}
		}
	}
	switch s.Status() {
	case checkpoint.StepSucceeded:
		t.c.Succeeded++
		t.attemptsToSuccess += counted
	case checkpoint.StepFailed:
		budgetStop := lastCounted != nil && lastCounted.Class == string(handoff.ClassBudget)
		if counted >= s.MaxAttempts && !budgetStop {
			t.c.Exhausted++
		} else {
			t.c.Failed++
		}
	}
}

// counts derives the rates and means from the sums.
func (t *statsTally) counts() Counts {
	c := t.c
	c.SuccessRate = statsRatio(float64(t.accepted), c.Attempts)
	c.MeanAttemptsToSuccess = statsRatio(float64(t.attemptsToSuccess), c.Succeeded)
	c.ExhaustionRate = statsRatio(float64(c.Exhausted), c.Succeeded+c.Exhausted+c.Failed)
	c.CostPerAttemptUSD = statsRatio(c.CostUSD, t.costKnown)
	return c
}

// statsRatio is num/den, or 0 when den is 0.
func statsRatio(num float64, den int) float64 {
	if den == 0 {
		return 0
	}
	return num / float64(den)
}

// ByCount returns the names of counts, the most frequent first and ties by
// name: the order in which inspect --stats and the report list failure
// classes and repairs.
func ByCount(counts map[string]int) []string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// named is a step's row under the name of its workflow step.
func named(s checkpoint.Step, name string) checkpoint.Step {
	s.ID = name
	return s
}

// addLoops records the loop steps of one run, read from its rows: a row
// with iteration rows under it is a loop step.
func (g *statsAggregator) addLoops(rows []checkpoint.Step) {
	type loop struct {
		status checkpoint.StepStatus
		iters  int
		last   []byte // the decision of the latest iteration
		lastN  int
	}
	byID := map[string]*loop{}
	var order []string
	for _, r := range rows {
		if !address.Of(r.ID).IsIteration() {
			if _, ok := byID[r.ID]; !ok {
				byID[r.ID] = &loop{status: r.Status()}
			}
			continue
		}
		n := address.Of(r.ID).Number()
		l, ok := byID[address.Of(r.ID).Parent().String()]
		if !ok || n == 0 {
			continue
		}
		if l.iters == 0 {
			order = append(order, address.Of(r.ID).Parent().String())
		}
		l.iters++
		if n > l.lastN {
			l.lastN, l.last = n, r.DecisionJSON
		}
	}
	for _, id := range order {
		l := byID[id]
		name := address.Of(id).StepName()
		st, ok := g.loops[name]
		if !ok {
			st = &LoopStats{Step: name}
			g.loops[name] = st
			g.loopOrder = append(g.loopOrder, name)
		}
		st.Loops++
		st.Iterations += l.iters
		var d Decision
		decided := len(l.last) > 0 && json.Unmarshal(l.last, &d) == nil && d.Value != nil
		switch {
		case l.status != checkpoint.StepSucceeded && l.status != checkpoint.StepFailed:
			st.Running++
		case decided && *d.Value:
			st.Succeeded++
			st.toSuccess = append(st.toSuccess, l.lastN)
		case decided:
			st.Exhausted++
		default:
			st.Failed++
		}
	}
}

// loopResult returns the loop figures in order of first appearance.
func (g *statsAggregator) loopResult() []LoopStats {
	out := make([]LoopStats, 0, len(g.loopOrder))
	for _, name := range g.loopOrder {
		st := *g.loops[name]
		if n := len(st.toSuccess); n > 0 {
			its := append([]int(nil), st.toSuccess...)
			sort.Ints(its)
			st.MinIterationsToSuccess, st.MaxIterationsToSuccess = its[0], its[n-1]
			st.MedianIterationsToSuccess = float64(its[n/2])
			if n%2 == 0 {
				st.MedianIterationsToSuccess = float64(its[n/2-1]+its[n/2]) / 2
			}
		}
		st.toSuccess = nil
		out = append(out, st)
	}
	return out
}

// addGates records the gates one run reached, with their steps' rows to
// tell a gate timed out; a gate still waiting has waited until now.
func (g *statsAggregator) addGates(approvals []checkpoint.Approval, rows []checkpoint.Step, now time.Time) {
	status := make(map[string]checkpoint.StepStatus, len(rows))
	for _, r := range rows {
		status[r.ID] = r.Status()
	}
	for _, a := range approvals {
		name := address.Of(a.Unit.StepID).StepName()
		st, ok := g.gates[name]
		if !ok {
			st = &GateStats{Step: name}
			g.gates[name] = st
			g.gateOrder = append(g.gateOrder, name)
		}
		st.Reached++
		switch {
		case a.Decided() && a.DecidedAt != nil:
			if a.Decision == checkpoint.Approved {
				st.Approved++
			} else {
				st.Rejected++
			}
			wait := max(a.DecidedAt.Sub(a.RequestedAt).Seconds(), 0)
			st.waitTotal += wait
			st.MaxWaitSeconds = max(st.MaxWaitSeconds, wait)
		case status[a.Unit.StepID] == checkpoint.StepFailed:
			st.TimedOut++
		default:
			st.Waiting++
			st.WaitingSeconds = max(st.WaitingSeconds, now.Sub(a.RequestedAt).Seconds())
		}
	}
}

// gateResult returns the gate figures in order of first appearance.
func (g *statsAggregator) gateResult() []GateStats {
	out := make([]GateStats, 0, len(g.gateOrder))
	for _, name := range g.gateOrder {
		st := *g.gates[name]
		st.MeanWaitSeconds = statsRatio(st.waitTotal, st.Approved+st.Rejected)
		st.waitTotal = 0
		out = append(out, st)
	}
	return out
}
