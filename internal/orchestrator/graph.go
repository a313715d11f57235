package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// graph is a run's steps as the scheduler sees them (SPEC §16.3): which
// have ended and how, which run now, and what the ended ones give the
// steps after them.
type graph struct {
	p      *project
	run    *checkpoint.Run
	inputs map[string]any
	// iter is the zero Path for the workflow's top level, and LOOP/N for
	// the inner graph of iteration N of a loop (A/1/B/2 for a loop inside
	// a loop): the steps' rows are iter's Inner(ID). iteration and
	// previous are that iteration's number and the outputs of the one
	// before it.
	iter      address.Path
	iteration int
	previous  map[string]any
	// outputs are .Steps for templates (ID → {"Output": out}); vars are
	// steps for expressions (status and output).
	outputs map[string]any
	vars    map[string]workflow.StepVars
	ended   map[string]checkpoint.StepStatus // ID → succeeded, failed or skipped
	running map[string]bool
	// parked are the steps waiting for a person (an approval gate, or a
	// loop whose iteration holds one) that nothing in this process can
	// move on: they are looked at again whenever another step ends.
	parked map[string]bool
	// gates remembers the gates announced in this process, shared by
	// every graph of the run, so that a gate looked at again is not
	// announced again.
	gates *announced
	// order is the workflow's steps in the graph's order; decided the
	// steps whose decision was committed before this process.
	order []*workflow.Step
	// open is where in order the first step not ended is: every step
	// before it has ended, so the scheduler's scans start there (in a
	// chain, at the step that runs).
	open    int
	decided map[string]bool
	// failed is the first step whose failure fails the run; stop the
	// first error that stops it (an interruption, the store), and stopAt
	// the step it came from.
	failed string
	stop   error
	stopAt string
}

// stepEnd is how a step's run ended, reported to the scheduler.
type stepEnd struct {
	ws  *workflow.Step
	res stepResult
	out any
	err error
}

// runGraph runs the run's steps as a graph: a step starts once every step
// it needs has ended and its decision (its when, or a skipped need) says
// it runs, up to max_parallel_steps at once. When a step fails (and has
// no allow_failure), no new step starts, the running ones finish, and the
// run fails. Every decision is committed before what depends on it, and
// read back on resume instead of being taken again.
func (p *project) runGraph(ctx context.Context, run *checkpoint.Run, done map[string]bool, rows []checkpoint.Step) (*Result, error) {
	g := newGraph(p, run, p.wf.Order(), &announced{seen: map[string]bool{}})
	var err error
	if g.inputs, err = inputsOf(run); err != nil {
		return nil, err
	}
	if p.shared() {
		// Steps a process of this machine held when it died are claimed
		// at once, not after their leases expire.
		if err := p.breakDeadLeases(ctx, run.ID); err != nil {
			return nil, fmt.Errorf("end the leases of dead processes of run %s: %w", run.ID, err)
		}
	}
	failed, err := g.read(ctx, done, rows)
	p.aheadRows = nil // their data is used or not needed
	if err != nil {
		return nil, err
	}
	if restored := p.restoring; restored != nil {
		p.restoring = nil
		if err := <-restored; err != nil {
			return nil, fmt.Errorf("run %s: %w", run.ID, err)
		}
	}
	if failed != "" {
		// A step failed (without allow_failure) before this process.
		if err := (leftBehind{p}).run(ctx, run); err != nil {
			return nil, err
		}
		return p.finish(run.ID, checkpoint.RunFailed, &Result{RunID: run.ID, Status: StatusFailed, Step: failed,
			Message: fmt.Sprintf("step %s failed", failed)})
	}
	g.runAll(ctx)
	switch {
	case g.stop != nil:
		return p.stopped(run.ID, g.stopAt, g.stop)
	case g.failed != "":
		if err := (leftBehind{p}).run(ctx, run); err != nil {
			return nil, err
		}
		return p.finish(run.ID, checkpoint.RunFailed, &Result{RunID: run.ID, Status: StatusFailed, Step: g.failed,
			Message: fmt.Sprintf("step %s failed", g.failed)})
	case len(g.parked) > 0:
		waiting := g.gates.waiting()
		res := &Result{RunID: run.ID, Status: StatusAwaitingApproval, Gates: waiting,
			Message: "waiting for approval of " + strings.Join(waiting, ", ")}
		if len(waiting) > 0 {
			res.Step = waiting[0]
		}
		return p.finish(run.ID, checkpoint.RunInterrupted, res)
	}
	return p.finish(run.ID, checkpoint.RunSucceeded, &Result{RunID: run.ID, Status: StatusSucceeded, Message: g.skipped()})
}

// skipped names the workflow's steps that were skipped, in file order,
// for the line that ends a run that succeeded: a gate skipped (because a
// step before it was) passed without asking anyone, which the run says.
func (g *graph) skipped() string {
	var names []string
	for _, ws := range g.p.wf.Steps {
		if g.ended[ws.ID] != checkpoint.StepSkipped {
			continue
		}
		switch {
		case ws.Approval != nil:
			names = append(names, ws.ID+" (an approval gate, not asked)")
		case ws.Loop != nil && ws.Loop.HoldsGate():
			names = append(names, ws.ID+" (a loop with an approval gate, not asked)")
		default:
			names = append(names, ws.ID)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return history.Count(len(names), "step", "steps") + " skipped: " + strings.Join(names, ", ")
}

// newGraph is the graph of steps, in order, of run.
func newGraph(p *project, run *checkpoint.Run, order []*workflow.Step, gates *announced) *graph {
	return &graph{p: p, run: run, outputs: map[string]any{}, vars: map[string]workflow.StepVars{}, ended: map[string]checkpoint.StepStatus{},
		running: map[string]bool{}, parked: map[string]bool{}, order: order, decided: map[string]bool{}, gates: gates}
}

// runAll starts the steps as the graph allows until none runs: every
// step has ended, or a failure or an error stopped new starts, or what
// is left waits for a person. Under --wait-approval the workflow's graph
// looks at what waits for a person again every gatePoll instead, until
// it is answered or times out (an iteration's graph leaves that to it:
// its loop waits parked, taking no slot).
func (g *graph) runAll(ctx context.Context) {
	ends := make(chan stepEnd)
	for {
		if g.failed == "" && g.stop == nil {
			if err := g.startReady(ctx, ends); err != nil && g.stop == nil {
				g.stop = err
			}
		}
		polls := g.iter.IsZero() && g.p.opts.WaitApproval && len(g.parked) > 0 && g.failed == "" && g.stop == nil
		if !polls {
			if len(g.running) == 0 {
				return
			}
			g.take(<-ends)
			continue
		}
		t := time.NewTimer(gatePoll)
		select {
		case e := <-ends:
			g.take(e)
		case <-t.C:
			clear(g.parked) // looked at again
		case <-ctx.Done():
			for _, ws := range g.order {
				if g.parked[ws.ID] && g.stopAt == "" {
					g.stopAt = g.rowID(ws)
				}
			}
			g.stop = ctx.Err()
		}
		t.Stop()
	}
}

// slotsTaken is how many of max_parallel_steps the running steps take:
// a gate takes none, whether it waits for a person or takes an answer.
func (g *graph) slotsTaken() int {
	n := 0
	for _, ws := range g.unended() {
		if g.running[ws.ID] && ws.Approval == nil {
			n++
		}
	}
	return n
}

// unended is the graph's order from its first step that has not ended.
func (g *graph) unended() []*workflow.Step {
	for g.open < len(g.order) && g.ended[g.order[g.open].ID] != "" {
		g.open++
	}
	return g.order[g.open:]
}

// rowID is the id of the rows of step ws in this graph.
func (g *graph) rowID(ws *workflow.Step) string {
	if g.iter.IsZero() {
		return ws.ID
	}
	return g.iter.Inner(ws.ID).String()
}

// read reads what the committed state says of the graph's steps. It
// returns the first step that failed (without allow_failure) before this
// process, which fails the run (or the iteration) at once. current, when
// not nil, are the run's step rows as committed now, read by the caller:
// they are taken instead of read again (the top graph only).
func (g *graph) read(ctx context.Context, done map[string]bool, current []checkpoint.Step) (string, error) {
	p, run := g.p, g.run
	rows := map[string]*checkpoint.Step{}
	if current != nil && g.iter.IsZero() {
		for i := range current {
			rows[current[i].ID] = &current[i]
		}
	} else if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		if g.iter.IsZero() {
			all, err := tx.Steps(run.ID)
			for i := range all {
				rows[all[i].ID] = &all[i]
			}
			return err
		}
		// An iteration's rows are read one by one: a run may have
		// thousands of rows of earlier iterations.
		for _, ws := range g.order {
			st, err := tx.Step(run.ID, g.rowID(ws))
			if err != nil {
				return err
			}
			rows[st.ID] = st
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("read the steps of run %s: %w", run.ID, err)
	}
	for _, ws := range g.order {
		st := rows[g.rowID(ws)]
		if st == nil {
			continue
		}
		g.decided[ws.ID] = len(st.DecisionJSON) > 0 || st.Status() != checkpoint.StepPending
		switch st.Status() {
		case checkpoint.StepSucceeded:
			out, err := p.aheadRows.envelopeData(st.ID, st.HandoffJSON)
			if err != nil {
				return "", fmt.Errorf("step %s: stored handoff: %w", st.ID, err)
			}
			g.end(ws.ID, checkpoint.StepSucceeded, out)
			if done[st.ID] {
				p.sink.Emit(history.Event{Time: p.now(), Type: history.EventStepAlreadyDone, RunID: run.ID, Step: st.ID, Status: string(st.Status())})
			}
		case checkpoint.StepSkipped:
			g.end(ws.ID, checkpoint.StepSkipped, nil)
		case checkpoint.StepFailed:
			if !ws.AllowFailure {
				return st.ID, nil
			}
			g.end(ws.ID, checkpoint.StepFailed, nil)
		}
	}
	return "", nil
}

// end records how a step ended, for the steps after it.
func (g *graph) end(id string, status checkpoint.StepStatus, out any) {
	g.ended[id] = status
	g.vars[id] = workflow.StepVars{Output: out, Status: string(status)}
	if status == checkpoint.StepSucceeded {
		g.outputs[id] = map[string]any{"Output": out}
	}
}

// ready reports whether every step ws needs has ended.
func (g *graph) ready(ws *workflow.Step) bool {
	for _, id := range ws.Needs {
		if g.ended[id] == "" {
			return false
		}
	}
	return true
}

// startReady starts, in the graph's order, each step whose needs have
// ended and whose decision says it runs, while fewer than
// max_parallel_steps take a slot (an approval gate takes none); a step
// skipped on the way may make the steps after it ready in the same pass.
func (g *graph) startReady(ctx context.Context, ends chan<- stepEnd) error {
	p := g.p
	taken := g.slotsTaken()
	for _, ws := range g.unended() {
		if ws.Approval == nil && taken >= p.wf.MaxParallelSteps {
			continue
		}
		if g.ended[ws.ID] != "" || g.running[ws.ID] || g.parked[ws.ID] || !g.ready(ws) {
			continue
		}
		runs, err := g.decide(ctx, ws)
		if err != nil {
			g.stopAt = g.rowID(ws)
			return err
		}
		if !runs {
			continue
		}
		in := g.instance(ws)
		// What expressions inside a loop may read of the steps outside
		// it, taken here: the steps running beside it write g.vars.
		var vars map[string]workflow.StepVars
		if ws.Loop != nil {
			vars = maps.Clone(g.vars)
		}
		g.running[ws.ID] = true
		if ws.Approval == nil {
			taken++
		}
		go func() {
			e := stepEnd{ws: ws}
			e.res, e.out, e.err = g.runStep(ctx, in, vars)
			ends <- e
		}()
	}
	return nil
}

// instance is the instance of step ws in this graph.
func (g *graph) instance(ws *workflow.Step) *attempt.Instance {
	in := &attempt.Instance{Run: g.run, Step: ws, Outputs: g.readable(ws), Inputs: g.inputs,
		Iteration: g.iteration, Previous: g.previous}
	if !g.iter.IsZero() {
		in.Path = g.rowID(ws)
	}
	return in
}

// readable is what the templates of step ws may read: the outputs of its
// ancestors, in a map of its own, so that steps running beside it never
// share one being written.
func (g *graph) readable(ws *workflow.Step) map[string]any {
	out := make(map[string]any, len(g.outputs)) // in a chain, all of them
	g.p.wf.EachAncestor(ws.ID, func(id string) {
		if v, ok := g.outputs[id]; ok {
			out[id] = v
		}
	})
	return out
}

// runStep runs one step instance to its end.
func (g *graph) runStep(ctx context.Context, in *attempt.Instance, vars map[string]workflow.StepVars) (stepResult, any, error) {
	switch {
	case in.Step.Loop != nil:
		return g.runLoop(ctx, in, vars)
	case in.Step.Approval != nil:
		return g.runGate(ctx, in)
	case in.Step.Map != nil:
		return g.p.runMap(ctx, in)
	case g.p.shared() && g.iter.IsZero():
		return g.p.runSharedStep(ctx, in)
	}
	return g.p.runUnit(ctx, in)
}

// take takes in how a step ended: its output for the steps after it,
// its failure (which fails the run unless the step allows it), or the
// error that stops the run.
func (g *graph) take(e stepEnd) {
	delete(g.running, e.ws.ID)
	if e.err == nil && e.res == stepAwaiting {
		g.parked[e.ws.ID] = true
		return
	}
	// Something ended: what waits for a person is looked at again.
	clear(g.parked)
	switch {
	case e.err != nil:
		if g.stop == nil || errors.Is(g.stop, context.Canceled) && !errors.Is(e.err, context.Canceled) {
			g.stop, g.stopAt = e.err, g.rowID(e.ws)
		}
	case e.res == stepFailed:
		g.end(e.ws.ID, checkpoint.StepFailed, nil)
		if !e.ws.AllowFailure && g.failed == "" {
			g.failed = g.rowID(e.ws)
		}
	default:
		g.end(e.ws.ID, checkpoint.StepSucceeded, e.out)
	}
}

// decide takes a step's decision once its needs have ended, commits it,
// and reports whether the step runs. A decision committed before is read
// back, never taken again (SPEC §16.4): a when evaluated true runs the
// step; false, or a skipped need when the step has no when of its own,
// skips it (and is final). A when that cannot be evaluated fails the step
// with class expression.
func (g *graph) decide(ctx context.Context, ws *workflow.Step) (bool, error) {
	p, run := g.p, g.run
	if g.decided[ws.ID] {
		return true, nil // decided before this process, and it runs: a skip is an end
	}
	var d history.Decision
	switch {
	case ws.When != nil:
		d.When = ws.When.Source
		v, err := ws.When.Eval(ctx, workflow.ExprVars{Inputs: g.inputs, Steps: g.vars, Iteration: g.iteration})
		if err != nil {
			if !workflow.IsExprError(err) {
				return false, err
			}
			if err := p.attempts.StopStep(ctx, g.instance(ws), handoff.ClassExpression, err.Error(), checkpoint.KindInitial); err != nil {
				return false, err
			}
			g.end(ws.ID, checkpoint.StepFailed, nil)
			if !ws.AllowFailure && g.failed == "" {
				g.failed = g.rowID(ws)
			}
			return false, nil
		}
		d.Value = &v
		d.Read = g.readBy(ws.When)
	default:
		for _, id := range ws.Needs {
			if g.ended[id] == checkpoint.StepSkipped {
				d.SkippedBecause = append(d.SkippedBecause, id)
			}
		}
		if len(d.SkippedBecause) == 0 {
			return true, nil // nothing to decide
		}
	}
	now := p.now()
	d.At = now
	skip := d.Skipped()
	b, _ := json.Marshal(d)
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Step(run.ID, g.rowID(ws))
		if err != nil {
			return err
		}
		if skip {
			return tx.StepSkipped(s, b, now)
		}
		return tx.StepDecided(s, b, now)
	})
	if err != nil {
		return false, fmt.Errorf("record the decision of step %s: %w", g.rowID(ws), err)
	}
	g.decided[ws.ID] = true
	p.attempts.Failpoint.Hit(attempt.FailAfterDecision)
	if !skip {
		return true, nil
	}
	g.end(ws.ID, checkpoint.StepSkipped, nil)
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepSkipped, RunID: run.ID, Step: g.rowID(ws), Status: string(checkpoint.StepSkipped), Message: d.Why()})
	return false, nil
}

// readBy is what an expression read: the inputs it names, and the
// status of the steps it names.
func (g *graph) readBy(x *workflow.Expr) map[string]any {
	out := map[string]any{}
	for _, name := range x.Inputs {
		out["inputs."+name] = g.inputs[name]
	}
	ids := append([]string(nil), x.Steps...)
	sort.Strings(ids)
	for _, id := range ids {
		out["steps."+id+".status"] = g.vars[id].Status
	}
	if x.UsesLoop {
		out["loop.iteration"] = g.iteration
	}
	for _, path := range x.Outputs {
		if v, ok := outputAt(g.vars[path[0]].Output, path[1:]); ok {
			out["steps."+path[0]+".output"+dotted(path[1:])] = readValue(v)
		}
	}
	return out
}

// maxReadValue bounds a value a decision records as read: a longer one is
// recorded as its size, so that a decision row stays small whatever an
// agent answered.
const maxReadValue = 256

// outputAt is the part of a step's output at the fields, if it has one.
func outputAt(v any, fields []string) (any, bool) {
	var pointer strings.Builder
	for _, f := range fields {
		pointer.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(f, "~", "~0"), "/", "~1"))
	}
	v, err := jsonPointer(v, pointer.String())
	return v, err == nil
}

// readValue is v as a decision records it: itself, or "(N bytes)".
func readValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxReadValue {
		return fmt.Sprintf("(%d bytes)", len(b))
	}
	return json.RawMessage(b)
}

// dotted writes fields as .a.b.
func dotted(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return "." + strings.Join(fields, ".")
}
