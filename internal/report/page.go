package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
)

// Limits that keep a report of a very long run small and quick to open:
// every attempt still gets its bar, but the text of failures is bounded.
const (
	// maxItemLanes is the largest map step whose item lanes are shown
	// open; a larger one shows its summary lane and folds its items.
	maxItemLanes = 200
	// maxDiagnosis, maxFollowup and maxSample bound each text of one
	// failed attempt.
	maxDiagnosis = 1500
	maxFollowup  = 2000
	maxSample    = 500
	maxError     = 300
	// textBudget bounds the failure texts of the whole report; past it a
	// failed attempt is listed with its error only, and a command that
	// shows it in full.
	textBudget = 768 << 10
	// maxListed bounds the failed attempts listed in full at all; the
	// rest are counted by class.
	maxListed = 3000
)

// page is everything the template shows.
type page struct {
	Run        history.RunReport
	Started    string
	Finished   string
	Wall       string
	Cost       string
	Attempts   int
	Failed     int
	Active     string
	Waited     string
	Width      float64
	Axis       []tick
	Circuits   group
	Breakers   []breakerRow
	Spells     []spellRow
	Steps      []stepView
	Unlisted   int    // failed attempts not listed at all
	UnlistedBy string // their classes by count
}

// stepView is one step: its lanes in the timeline and its section below.
type stepView struct {
	Anchor    string
	ID        string
	Status    string
	Agent     string
	Attempts  string // "2/3", or for a map step the attempts of its items
	Items     string // a map step's items by status
	Repairs   string
	Cost      string
	CostShare float64
	Tokens    string
	Turns     int
	Active    string
	Waited    string
	TimeShare float64
	// Lanes of a plain step: one. A map step has a summary and its items'
	// lanes, folded when there are many.
	Lanes group
	// Decision is the step's committed decision (SPEC §16.4): its when
	// and the value it had, or why it was skipped; "" for none.
	Decision  string
	IsMap     bool
	Summary   summary
	ItemCount int
	Folded    bool
	Failures  []failedEntry
	Omitted   int // failures listed without their texts
	Dead      []deadRow
	// Group opens a lane group before this step's lanes: the label of a
	// loop's iteration ("implement · iteration 3"), its loop and number;
	// Closes ends as many groups after them (one per iteration, and per
	// enclosing loop whose last iteration ends with this step).
	Group     string
	GroupLoop string
	GroupIter int
	Closes    []struct{}
	// Iterations says how many iterations a loop step ran; "" for a step
	// that is not a loop.
	Iterations string
	// Gate is the state of an approval gate reached; nil for other steps.
	Gate *gateView
}

// gateView is an approval gate in its section: waiting (since when, and
// the commands that answer it) or decided (how, by whom, when, the
// comment), with its prompt.
type gateView struct {
	Decision string
	Waiting  bool
	Since    string
	Timeout  string
	By       string
	At       string
	Waited   string
	Comment  string
	Prompt   string
	Approve  string // the commands that answer a waiting gate
	Reject   string
}

// flatStep is a step as the report lists it: top-level steps in order,
// a loop step followed by its iterations' inner steps, each iteration a
// lane group.
type flatStep struct {
	s          *history.StepReport
	group      string
	groupLoop  string
	groupIter  int
	closes     int
	iterations int
}

// flatten lists the steps of a run, a loop step followed by the inner
// steps of each of its iterations (at any depth), marking where each
// iteration's group opens and closes.
func flatten(steps []history.StepReport) []flatStep {
	var out []flatStep
	var walk func(steps []history.StepReport)
	walk = func(steps []history.StepReport) {
		for i := range steps {
			s := &steps[i]
			out = append(out, flatStep{s: s, iterations: len(s.Iterations)})
			for j := range s.Iterations {
				it := &s.Iterations[j]
				if len(it.Steps) == 0 {
					continue
				}
				first := len(out)
				walk(it.Steps)
				label := fmt.Sprintf("%s · iteration %d", s.ID, it.Iteration)
				if u := untilText(it.Until); u != "" {
					label += " · " + u
				}
				out[first].group, out[first].groupLoop, out[first].groupIter = label, s.ID, it.Iteration
				out[len(out)-1].closes++
			}
		}
	}
	walk(steps)
	return out
}

// untilText says what an iteration's until decision was; "" before one.
func untilText(raw json.RawMessage) string {
	var d history.Decision
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil || d.Value == nil {
		return ""
	}
	return fmt.Sprintf("until %s was %v", d.Until, *d.Value)
}

// failedEntry is one failed or interrupted attempt, in the failures list.
type failedEntry struct {
	ID         string
	Unit       string
	N          int
	Kind       string
	Status     string
	Class      string
	Error      string
	At         string
	Took       string
	Diagnosis  string
	Violations []string
	Sample     string
	Check      string
	Followup   string
	SentAs     string // where the follow-up text comes from
	Hint       string // the command that shows the attempt in full
	Omitted    bool   // texts left out to keep the report small
	// Diff is the command that prints what the attempt changed in its
	// work tree (SPEC §19), and Changed the files it changed; both ""
	// when no snapshot was recorded before it, Changed also when the
	// files were not looked up.
	Diff    string
	Changed string
}

// deadRow is one dead item.
type deadRow struct {
	Key, Class, Signature, Error, DeadAt string
	Attempts                             int
}

// breakerRow is an agent's circuit as stored now.
type breakerRow struct {
	Agent, State, OpenedAt, OpenUntil string
	Failures                          int
}

// spellRow is one inferred opening of a circuit.
type spellRow struct {
	Agent, From, To, Cause, Trial string
}

// builder holds what building a page needs along the way.
type builder struct {
	rep    *history.Report
	flat   []flatStep
	opts   Options
	sc     scale
	end    time.Time
	ticks  []tick
	spells []openSpell
	waited time.Duration
	budget int
	listed int
	ids    int
	// unlisted counts the failed attempts beyond maxListed by class.
	unlisted map[string]int
}

// build turns a run's history into the page model.
func build(rep *history.Report, opts Options) *page {
	b := &builder{rep: rep, flat: flatten(rep.Steps), opts: opts, budget: textBudget, unlisted: map[string]int{}}
	t0, t1 := b.bounds()
	b.end = t1
	b.sc = newScale(t0, t1)
	b.ticks = b.sc.ticks()
	b.spells = inferOpenSpells(b.allAttempts(), rep.Circuits, t0, t1)

	p := &page{Run: rep.Run, Started: clock(rep.Run.StartedAt), Finished: "still running", Width: svgWidth, Axis: b.ticks}
	if rep.Run.FinishedAt != nil {
		p.Finished = clock(*rep.Run.FinishedAt)
		p.Wall = human(rep.Run.FinishedAt.Sub(rep.Run.StartedAt))
	} else {
		p.Wall = human(t1.Sub(rep.Run.StartedAt)) + " so far"
	}
	p.Cost = money(rep.Run.CostUSD)
	switch {
	case !rep.Run.CostKnown && rep.Run.CostUnknown > 0:
		p.Cost = "unknown (the agents report no cost)"
	case rep.Run.CostUnknown == 1:
		p.Cost += " (+ 1 attempt whose agent reports no cost)"
	case rep.Run.CostUnknown > 1:
		p.Cost += fmt.Sprintf(" (+ %d attempts whose agent reports no cost)", rep.Run.CostUnknown)
	}
	p.Circuits = b.circuitLanes()
	var totalCost float64
	var totalActive time.Duration
	actives := make([]time.Duration, len(b.flat))
	for i, f := range b.flat {
		s := f.s
		if f.iterations == 0 {
			totalCost += s.CostUSD // a loop's cost is its inner steps'
		}
		for _, u := range units(s) {
			for j := range u.atts {
				a := &u.atts[j]
				actives[i] += b.endOf(a).Sub(a.StartedAt)
				p.Attempts++
				if a.Status == checkpoint.AttemptFailed || a.Status == checkpoint.AttemptInterrupted {
					p.Failed++
				}
			}
		}
		totalActive += actives[i]
	}
	for i, f := range b.flat {
		sv := b.step(i, f.s)
		sv.Active = human(actives[i])
		if totalActive > 0 {
			sv.TimeShare = float64(actives[i]) / float64(totalActive)
		}
		if totalCost > 0 {
			sv.CostShare = f.s.CostUSD / totalCost
		}
		sv.Group, sv.GroupLoop, sv.GroupIter, sv.Closes = f.group, f.groupLoop, f.groupIter, make([]struct{}, f.closes)
		if f.iterations > 0 {
			sv.Iterations = fmt.Sprintf("%d", f.iterations)
			sv.Agent, sv.Attempts = "(loop)", "-"
			if len(f.s.Attempts) > 0 { // its until could not be evaluated
				sv.Attempts = fmt.Sprintf("%d/%d", f.s.AttemptsUsed, f.s.MaxAttempts)
			}
			sv.Lanes.Lanes[0].Note = fmt.Sprintf("loop · %s · %s", plural(f.iterations, "iteration", "iterations"), f.s.Status)
		}
		p.Steps = append(p.Steps, sv)
	}
	p.Active = human(totalActive)
	p.Waited = human(b.waited)
	p.Breakers, p.Spells = b.breakers()
	for _, n := range b.unlisted {
		p.Unlisted += n
	}
	p.UnlistedBy = byCount(b.unlisted, "")
	return p
}

// bounds returns the interval the timeline covers: from the run's start to
// its end (or opts.Now for a run still going), widened to every attempt
// and every wait recorded.
func (b *builder) bounds() (time.Time, time.Time) {
	r := b.rep.Run
	t0 := r.StartedAt
	t1 := b.opts.Now
	if r.FinishedAt != nil {
		t1 = *r.FinishedAt
	}
	if t1.IsZero() || t1.Before(t0) {
		t1 = t0
	}
	for _, ua := range b.allAttempts() {
		a := ua.a
		if a.StartedAt.Before(t0) {
			t0 = a.StartedAt
		}
		for _, t := range []*time.Time{a.FinishedAt, a.NextRetryAt} {
			if t != nil && t.After(t1) {
				t1 = *t
			}
		}
	}
	return t0, t1
}

// allAttempts lists every attempt of the run with its unit and agent.
func (b *builder) allAttempts() []unitAttempt {
	var out []unitAttempt
	for _, f := range b.flat {
		s := f.s
		for _, u := range units(s) {
			for j := range u.atts {
				out = append(out, unitAttempt{unit: u.name, agent: s.Agent, a: &u.atts[j]})
			}
		}
	}
	return out
}

// unit is a step, or an item of a map step, with its attempts.
type unit struct {
	name string
	key  string // the item's key; "" for a step
	atts []history.AttemptReport
}

// units lists the units of a step: the step itself, or its items.
func units(s *history.StepReport) []unit {
	if s.ItemCounts == nil {
		return []unit{{name: s.ID, atts: s.Attempts}}
	}
	out := make([]unit, 0, len(s.Items))
	for _, it := range s.Items {
		out = append(out, unit{name: s.ID + "[" + it.Key + "]", key: it.Key, atts: it.Attempts})
	}
	return out
}

// step builds the view of one step.
func (b *builder) step(i int, s *history.StepReport) stepView {
	sv := stepView{Anchor: "s" + strconv.Itoa(i+1), ID: s.ID, Status: stepStatusClass(s.Status), Agent: s.Agent,
		Cost: money(s.CostUSD), Turns: s.Turns, IsMap: s.ItemCounts != nil,
		Tokens: fmt.Sprintf("%d in / %d out", s.InputTokens, s.OutputTokens)}
	if s.CostUnknown {
		sv.Cost = "unknown"
	}
	if s.TokensUnknown {
		sv.Tokens = "unknown"
	}
	us := units(s)
	links := map[*history.AttemptReport]string{}
	repairs := map[string]int{}
	for _, u := range us {
		for j := range u.atts {
			a := &u.atts[j]
			for _, r := range a.Repairs {
				repairs[r]++
			}
			if a.Status != checkpoint.AttemptFailed && a.Status != checkpoint.AttemptInterrupted {
				continue
			}
			if e, ok := b.failure(s, u, j); ok {
				links[a] = e.ID
				sv.Failures = append(sv.Failures, e)
				if e.Omitted {
					sv.Omitted++
				}
			}
		}
	}
	sv.Repairs = byCount(repairs, "none")
	before := b.waited
	if sv.IsMap {
		sv.ItemCount = len(s.Items)
		sv.Folded = len(s.Items) > maxItemLanes
		sv.Items = itemCounts(s)
		used := 0
		for _, it := range s.Items {
			used += it.AttemptsUsed
		}
		sv.Attempts = fmt.Sprintf("%d over %d items, at most %d each", used, len(s.Items), s.MaxAttempts)
		sv.Summary = b.mapSummary(s)
		sv.Summary.Label = laneLabel(s.ID + " · " + strconv.Itoa(len(s.Items)) + " items")
		sv.Summary.Counts = laneLabel(sv.Items)
		sv.Summary.Title = fmt.Sprintf("%s: %s, %d dead; at most %d attempts at once", s.ID, sv.Items, len(s.Dead), sv.Summary.Peak)
	} else {
		sv.Attempts = fmt.Sprintf("%d/%d", s.AttemptsUsed, s.MaxAttempts)
	}
	sv.Decision = decisionText(s.Decision)
	if s.Agent == "" {
		sv.Agent = "(command)" // a command step has no agent
	}
	if s.Approval != nil {
		sv.Agent, sv.Attempts = "(approval gate)", "-"
		sv.Gate = b.gate(s)
	}
	for k, u := range us {
		ln := b.unitLane(float64(k)*laneHeight, u.name, s.Agent, u.atts, links)
		if s.Status == checkpoint.StepSkipped {
			ln.Note = "skipped · " + sv.Decision
		}
		if s.Approval != nil {
			ln.Waits = append(ln.Waits, b.gateWait(s.Approval))
			ln.Note = gateNote(sv.Gate)
		}
		sv.Lanes.Lanes = append(sv.Lanes.Lanes, ln)
	}
	sv.Lanes.Height = float64(len(us)) * laneHeight
	sv.Lanes.Ticks = b.ticks
	sv.Waited = human(b.waited - before)
	for _, d := range s.Dead {
		sv.Dead = append(sv.Dead, deadRow{Key: d.Key, Class: d.Class, Signature: d.Signature, Error: clip(firstLine(d.Error), maxError),
			DeadAt: clock(d.DeadAt), Attempts: d.Attempts})
	}
	return sv
}

// stepStatusClass maps a step status to its CSS class.
func stepStatusClass(s checkpoint.StepStatus) string {
	switch s {
	case checkpoint.StepPending, checkpoint.StepRunning, checkpoint.StepWaiting, checkpoint.StepSucceeded, checkpoint.StepFailed,
		checkpoint.StepSkipped:
		return string(s)
	}
	return "other"
}

// itemCounts shows a map step's items by status: "2 succeeded, 1 failed".
func itemCounts(s *history.StepReport) string {
	var parts []string
	for _, st := range []checkpoint.StepStatus{checkpoint.StepSucceeded, checkpoint.StepRunning, checkpoint.StepWaiting,
		checkpoint.StepPending, checkpoint.StepFailed} {
		if n := s.ItemCounts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// byCount lists counted names, the most frequent first: "prose ×3, bom ×1".
func byCount(m map[string]int, empty string) string {
	if len(m) == 0 {
		return empty
	}
	names := history.ByCount(m)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s ×%d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

// failure builds the entry of the failed attempt u.atts[j], reading its
// failed-handoff record for the diagnosis and the follow-up that was sent.
func (b *builder) failure(s *history.StepReport, u unit, j int) (failedEntry, bool) {
	a := &u.atts[j]
	if b.listed >= maxListed {
		b.unlisted[dash(a.Class)]++
		return failedEntry{}, false
	}
	b.listed++
	b.ids++
	e := failedEntry{ID: "f" + strconv.Itoa(b.ids), Unit: u.name, N: a.N, Kind: a.Kind, Status: statusClass(a.Status),
		Class: a.Class, Error: clip(firstLine(strings.TrimPrefix(a.Error, a.Class+": ")), maxError),
		At: "+" + human(a.StartedAt.Sub(b.sc.t0)), Took: human(b.endOf(a).Sub(a.StartedAt))}
	e.Hint = fmt.Sprintf("cadence inspect --run %s --step %s", b.rep.Run.ID, s.ID)
	if u.key != "" {
		e.Hint += " --item " + u.key
	}
	e.Hint += fmt.Sprintf(" --attempt %d", a.N)
	if a.Snapshot != "" {
		e.Diff = fmt.Sprintf("cadence diff %s --run %s", s.ID, b.rep.Run.ID)
		if u.key != "" {
			e.Diff += " --item " + u.key
		}
		e.Diff += fmt.Sprintf(" --attempt %d", a.N)
		if a.FilesChanged != nil {
			e.Changed = history.ChangedSummary(a.FilesChanged)
		}
	}
	if b.budget <= 0 {
		e.Omitted = true
		return e, true
	}
	e.Diagnosis = diagnosisOf(a)
	if b.opts.Dir != "" && a.FailedHandoff != "" {
		// A record that cannot be read leaves the stored diagnosis.
		if r, err := readRecord(b.opts.Dir, a.FailedHandoff); err == nil {
			e.fromRecord(r)
		}
	}
	if e.Followup == "" {
		if nx := nextCounted(u.atts, j); nx != nil && nx.Prompt != "" {
			e.Followup = nx.Prompt
			e.SentAs = fmt.Sprintf("prompt of attempt #%d (%s)", nx.N, nx.Kind)
		}
	}
	e.Diagnosis = clip(e.Diagnosis, maxDiagnosis)
	e.Followup = clip(e.Followup, maxFollowup)
	// What the texts weigh once escaped: agent output full of quotes
	// and brackets grows by up to five times.
	for _, s := range []string{e.Diagnosis, e.Followup, e.Sample, e.Check} {
		b.budget -= len(template.HTMLEscapeString(s))
	}
	return e, true
}

// fromRecord fills an entry from the attempt's failed-handoff record: its
// diagnosis, violations, output sample, failed check and follow-up.
func (e *failedEntry) fromRecord(r *handoff.FailedRecord) {
	if r.Details != "" {
		e.Diagnosis = r.Details
	}
	for k, v := range r.Violations {
		if k == 10 {
			e.Violations = append(e.Violations, fmt.Sprintf("… and %d more", len(r.Violations)-k))
			break
		}
		e.Violations = append(e.Violations, clip(fmt.Sprintf("%s: %s (expected %s, got %s)", v.Pointer, v.Keyword, v.Expected, v.Actual), maxError))
	}
	e.Sample = clip(r.OutputSample, maxSample)
	if r.Check != nil {
		e.Check = clip(fmt.Sprintf("check %s: %s\n%s", r.Check.Name, r.Check.Command, r.Check.Output), maxDiagnosis)
	}
	if r.FollowupPrompt != "" {
		e.Followup, e.SentAs = r.FollowupPrompt, "the follow-up prompt"
	}
}

// nextCounted returns the next attempt after j that is not a help round.
func nextCounted(atts []history.AttemptReport, j int) *history.AttemptReport {
	for k := j + 1; k < len(atts); k++ {
		if atts[k].Kind != checkpoint.KindHelp {
			return &atts[k]
		}
	}
	return nil
}

// diagnosisOf returns the diagnosis stored with an attempt (inspect
// --attempt's), or its error.
func diagnosisOf(a *history.AttemptReport) string {
	if d := storedDetails(a.Details); d != "" {
		return d
	}
	return a.Error
}

// breakers lists the stored circuits and the openings inferred from the
// attempts.
func (b *builder) breakers() ([]breakerRow, []spellRow) {
	var rows []breakerRow
	for _, c := range b.rep.Circuits {
		r := breakerRow{Agent: c.Agent, State: c.State, Failures: c.Failures, OpenedAt: "-", OpenUntil: "-"}
		if c.OpenedAt != nil {
			r.OpenedAt = clock(*c.OpenedAt)
		}
		if c.OpenUntil != nil {
			r.OpenUntil = clock(*c.OpenUntil)
		}
		rows = append(rows, r)
	}
	var spells []spellRow
	for _, sp := range b.spells {
		r := spellRow{Agent: sp.agent, From: "+" + human(sp.from.Sub(b.sc.t0)), To: "still open, until " + clock(sp.to), Cause: "-", Trial: "-"}
		if sp.cause != nil {
			r.Cause = fmt.Sprintf("%s #%d %s", sp.cause.unit, sp.cause.a.N, sp.cause.a.Class)
		}
		if sp.trial != nil {
			r.To = "+" + human(sp.to.Sub(b.sc.t0))
			r.Trial = fmt.Sprintf("%s #%d %s", sp.trial.unit, sp.trial.a.N, sp.trial.a.Status)
		}
		spells = append(spells, r)
	}
	return rows, spells
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// decisionText says what a step's committed decision was: its when and
// the value it had, or the skipped steps it was skipped for; "" for none.
func decisionText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var d history.Decision
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	if d.Value == nil {
		return d.Why()
	}
	return fmt.Sprintf("when %s was %v", d.When, *d.Value)
}

// gate builds the view of an approval gate.
func (b *builder) gate(s *history.StepReport) *gateView {
	a := s.Approval
	g := &gateView{Decision: a.Decision, Since: clock(a.RequestedAt), By: dash(a.By), Comment: a.Comment, Prompt: clip(a.Prompt, maxFollowup)}
	if a.TimeoutAt != nil {
		g.Timeout = clock(*a.TimeoutAt)
	}
	if a.At != nil {
		g.At = clock(*a.At)
		g.Waited = human(a.At.Sub(a.RequestedAt))
	}
	if a.Decision == history.ApprovalWaiting && s.Status == checkpoint.StepWaiting {
		g.Waiting = true
		g.Waited = human(b.end.Sub(a.RequestedAt)) + " so far"
		g.Approve = "cadence approve " + s.ID + " --comment TEXT"
		g.Reject = "cadence reject " + s.ID + " --comment TEXT"
	}
	return g
}

// gateWait draws the time a gate waited for a person in its lane: from
// reached to decided, or to the end of the timeline while it waits.
func (b *builder) gateWait(a *history.ApprovalReport) wait {
	end := b.end
	if a.At != nil {
		end = *a.At
	}
	return wait{X: b.sc.x(a.RequestedAt), W: b.sc.width(a.RequestedAt, end, minBarWidth), Y: waitY, H: waitH, Class: "wait approval",
		Title: fmt.Sprintf("waited for approval %s (%s)", human(end.Sub(a.RequestedAt)), a.Decision)}
}

// gateNote is written across a gate's lane: waiting, or the decision.
func gateNote(g *gateView) string {
	switch {
	case g.Waiting:
		return "waiting for approval since " + g.Since
	case g.At != "":
		note := g.Decision + " by " + g.By
		if g.Comment != "" {
			note += ": " + clip(firstLine(g.Comment), maxError)
		}
		return note
	}
	return g.Decision
}

// plural is "1 iteration" or "3 iterations".
func plural(n int, one, many string) string {
	return history.Count(n, one, many)
}
