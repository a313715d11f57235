package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/history"
)

// A lane is one row of the timeline: a step, an item of a map step, or an
// agent's circuit.
type lane struct {
	Y     float64
	Label string // shown, clipped
	Title string // the full name, as a tooltip, when Label is clipped
	Bars  []bar
	Waits []wait
	Marks []mark
	// Note is written across a lane with no attempts: why its step was
	// skipped.
	Note string
}

// bar is one attempt.
type bar struct {
	X, W  float64
	Class string // "bar STATUS KIND", e.g. "bar failed followup"
	Label string // the attempt's kind, when the bar is wide enough for it
	Title string
	Link  string // the id of the attempt's entry in the failures list, if any
}

// wait is a time a unit spent waiting: a backoff, a usage limit or an open
// circuit; in a circuit lane, the time the circuit was open.
type wait struct {
	X, W  float64
	Y, H  float64 // a thin line in a unit's lane, the lane's height in a circuit's
	Class string  // "wait backoff", "wait usage", "wait circuit", "spell open"
	Label string
	Title string
}

// mark is an instant: a check run, a help round, a half-open trial.
type mark struct {
	X     float64
	Shape string // "tick", "circle" or "diamond"
	Class string // "mark check passed", "mark help", "mark trial"
	Title string
}

// group is one SVG of lanes.
type group struct {
	Height float64
	Lanes  []lane
	Ticks  []tick // for the grid lines
}

// maxLabel is the longest lane name shown in full, in characters.
const maxLabel = 28

// laneLabel clips a lane name to what fits the label column.
func laneLabel(s string) string {
	if utf8.RuneCountInString(s) <= maxLabel {
		return string(s)
	}
	r := []rune(s)
	return string(r[:maxLabel-1]) + "…"
}

// statusClass maps an attempt status to its CSS class; anything unknown
// gets "other", so that no stored string ever lands in a class attribute.
func statusClass(s checkpoint.AttemptStatus) string {
	switch s {
	case checkpoint.AttemptSucceeded, checkpoint.AttemptFailed, checkpoint.AttemptInterrupted,
		checkpoint.AttemptAdopted, checkpoint.AttemptRunning:
		return string(s)
	}
	return "other"
}

// kindClass maps an attempt kind to its CSS class, as statusClass does.
func kindClass(k string) string {
	switch k {
	case checkpoint.KindInitial, checkpoint.KindFollowup, checkpoint.KindFresh, checkpoint.KindHelp:
		return k
	}
	return "other"
}

// Where waits and circuit openings are drawn in their lanes.
const (
	waitY, waitH   = 10.0, 3.0
	spellY, spellH = 3.0, 14.0
)

// waitGap is the shortest gap between attempts that is drawn as a wait.
const waitGap = 50 * time.Millisecond

// unitLane draws the attempts of one step or map item, the waits between
// them and the marks of their checks and help rounds.
func (b *builder) unitLane(y float64, name, agent string, atts []history.AttemptReport, links map[*history.AttemptReport]string) lane {
	ln := lane{Y: y, Label: laneLabel(name)}
	if ln.Label != name {
		ln.Title = name
	}
	for i := range atts {
		a := &atts[i]
		end := b.endOf(a)
		br := bar{X: b.sc.x(a.StartedAt), W: b.sc.width(a.StartedAt, end, minBarWidth),
			Class: "bar " + statusClass(a.Status) + " " + kindClass(a.Kind), Link: links[a]}
		if a.Uncounted {
			br.Class += " uncounted"
		}
		if br.W >= float64(7*len(a.Kind)+6) {
			br.Label = a.Kind
		}
		br.Title = attemptTitle(a, end)
		ln.Bars = append(ln.Bars, br)
		if a.Kind == checkpoint.KindHelp {
			ln.Marks = append(ln.Marks, mark{X: br.X, Shape: "circle", Class: "mark help",
				Title: fmt.Sprintf("#%d: help round (an advisor answered the agent's request for help)", a.N)})
		}
		for _, c := range a.Checks {
			ln.Marks = append(ln.Marks, mark{X: b.sc.x(c.StartedAt), Shape: "tick", Class: "mark check " + checkClass(c.Status),
				Title: checkTitle(a.N, c)})
		}
		ln.Waits = append(ln.Waits, b.waitsAfter(agent, a, next(atts, i))...)
	}
	return ln
}

// next returns the attempt after i, or nil.
func next(atts []history.AttemptReport, i int) *history.AttemptReport {
	if i+1 < len(atts) {
		return &atts[i+1]
	}
	return nil
}

// endOf is when an attempt ended, or the end of the timeline for one still
// running.
func (b *builder) endOf(a *history.AttemptReport) time.Time {
	if a.FinishedAt != nil {
		return *a.FinishedAt
	}
	return b.end
}

// waitsAfter draws what the unit waited for between attempt a and the next
// one: the backoff (or usage limit) a recorded, then any further gap during
// which the agent's circuit was open.
func (b *builder) waitsAfter(agent string, a, nx *history.AttemptReport) []wait {
	if a.FinishedAt == nil {
		return nil
	}
	var out []wait
	resume := *a.FinishedAt
	nextStart := b.end
	if nx != nil {
		nextStart = nx.StartedAt
	}
	if a.NextRetryAt != nil && a.NextRetryAt.After(resume) {
		until := *a.NextRetryAt
		if until.After(nextStart) {
			until = nextStart
		}
		w := wait{X: b.sc.x(resume), W: b.sc.width(resume, until, 1), Y: waitY, H: waitH, Class: "wait backoff", Label: "backoff"}
		what := "backoff"
		if a.Uncounted && a.Class == "transient" {
			w.Class, w.Label, what = "wait usage", "usage limit", "usage limit (not counted against max_attempts)"
		}
		detail := ""
		if a.DelayMS != nil {
			detail = fmt.Sprintf(", delay %s", human(time.Duration(*a.DelayMS)*time.Millisecond))
		}
		if a.RetryAfterMS != nil {
			detail += fmt.Sprintf(", provider asked %s", human(time.Duration(*a.RetryAfterMS)*time.Millisecond))
		}
		w.Title = fmt.Sprintf("%s %s after #%d%s", what, human(a.NextRetryAt.Sub(resume)), a.N, detail)
		b.addWait(&w, until.Sub(resume))
		out = append(out, w)
		resume = *a.NextRetryAt
	}
	if nx == nil || nextStart.Sub(resume) < waitGap {
		return out
	}
	for _, sp := range b.spells {
		if sp.agent != agent || !sp.from.Before(nextStart) || sp.to.Before(resume) {
			continue
		}
		from := later(resume, sp.from)
		to := sp.to
		// Units refused while a trial runs ask again a few seconds later.
		if nextStart.Sub(sp.to) <= circuit.BusyRetry+time.Second {
			to = nextStart
		}
		if to.After(nextStart) {
			to = nextStart
		}
		if !to.After(from) {
			continue
		}
		w := wait{X: b.sc.x(from), W: b.sc.width(from, to, 1), Y: waitY, H: waitH, Class: "wait circuit", Label: "circuit",
			Title: fmt.Sprintf("circuit: waited %s for agent %s's circuit before #%d", human(to.Sub(from)), agent, nx.N)}
		b.addWait(&w, to.Sub(from))
		out = append(out, w)
	}
	return out
}

// addWait labels a wait only when the label fits, and counts its time.
func (b *builder) addWait(w *wait, d time.Duration) {
	if w.W < float64(6*len(w.Label)+6) {
		w.Label = ""
	}
	b.waited += d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkClass maps a check status to its CSS class.
func checkClass(s string) string {
	switch s {
	case "passed", "failed", "running", "interrupted":
		return string(s)
	}
	return "other"
}

// attemptTitle is an attempt bar's tooltip; the lane names the unit.
func attemptTitle(a *history.AttemptReport, end time.Time) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#%d %s · %s", a.N, a.Kind, a.Status)
	if a.Class != "" {
		sb.WriteString(" · " + a.Class)
	}
	sb.WriteString(" · " + human(end.Sub(a.StartedAt)))
	if a.CostUSD != nil && *a.CostUSD > 0 {
		sb.WriteString(" · " + money(*a.CostUSD))
	}
	if a.Uncounted {
		sb.WriteString(" · not counted")
	}
	return sb.String()
}

// checkTitle is a check mark's tooltip.
func checkTitle(n int, c history.CheckReport) string {
	how := c.Status
	switch {
	case c.TimedOut:
		how += ", timed out"
	case c.ExitCode != nil:
		how += fmt.Sprintf(", exit %d", *c.ExitCode)
	case c.Signal != "":
		how += ", signal " + c.Signal
	}
	return fmt.Sprintf("#%d: check %s %s in %s", n, c.Name, how, human(time.Duration(c.DurationMS)*time.Millisecond))
}

// circuitLanes draws one lane per agent whose circuit opened during the run.
func (b *builder) circuitLanes() group {
	var g group
	idx := map[string]int{}
	for _, sp := range b.spells {
		i, ok := idx[sp.agent]
		if !ok {
			i = len(g.Lanes)
			idx[sp.agent] = i
			name := "circuit " + sp.agent
			g.Lanes = append(g.Lanes, lane{Y: float64(i) * laneHeight, Label: laneLabel(name)})
		}
		ln := &g.Lanes[i]
		w := wait{X: b.sc.x(sp.from), W: b.sc.width(sp.from, sp.to, 1), Y: spellY, H: spellH, Class: "spell open", Label: "open", Title: spellTitle(sp)}
		if w.W < 40 {
			w.Label = ""
		}
		ln.Waits = append(ln.Waits, w)
		if sp.trial != nil {
			ln.Marks = append(ln.Marks, mark{X: b.sc.x(sp.to), Shape: "diamond", Class: "mark trial",
				Title: fmt.Sprintf("half-open: trial %s #%d %s", sp.trial.unit, sp.trial.a.N, sp.trial.a.Status)})
		}
	}
	g.Height = float64(len(g.Lanes)) * laneHeight
	g.Ticks = b.ticks
	return g
}

// spellTitle describes an open spell of a circuit.
func spellTitle(sp openSpell) string {
	s := fmt.Sprintf("circuit of agent %s open %s", sp.agent, human(sp.to.Sub(sp.from)))
	if sp.cause != nil {
		s += fmt.Sprintf(", opened by %s #%d (%s)", sp.cause.unit, sp.cause.a.N, sp.cause.a.Class)
	}
	if sp.trial != nil {
		s += fmt.Sprintf(", half-open trial %s #%d %s", sp.trial.unit, sp.trial.a.N, sp.trial.a.Status)
	} else {
		s += ", until " + clock(sp.to)
	}
	return s
}

// summaryBins is how many columns a map step's summary lane has.
const summaryBins = 200

// summaryHeight is the height of a map step's summary lane.
const summaryHeight = 36.0

// aggBar is one stacked column segment of a summary lane.
type aggBar struct {
	X, Y, W, H float64
	Class      string
}

// summary is the lane of a map step that stands for all its items: how
// many attempts were running at each moment, stacked by outcome.
type summary struct {
	Label  string
	Counts string // the items by status, clipped to the label column
	Title  string
	Bars   []aggBar
	Peak   int
}

// summaryGroups are the outcome groups a summary lane stacks, bottom up.
var summaryGroups = []string{"succeeded", "failed", "interrupted", "running"}

// summaryGroup maps an attempt status onto summaryGroups.
func summaryGroup(status checkpoint.AttemptStatus) int {
	switch status {
	case checkpoint.AttemptSucceeded, checkpoint.AttemptAdopted:
		return 0
	case checkpoint.AttemptFailed:
		return 1
	case checkpoint.AttemptInterrupted:
		return 2
	}
	return 3
}

// mapSummary builds the summary lane of a map step.
func (b *builder) mapSummary(s *history.StepReport) summary {
	var counts [summaryBins][4]int
	binW := plotWidth / summaryBins
	bin := func(t time.Time) int {
		i := int((b.sc.x(t) - labelWidth) / binW)
		return min(max(i, 0), summaryBins-1)
	}
	for i := range s.Items {
		for j := range s.Items[i].Attempts {
			a := &s.Items[i].Attempts[j]
			g := summaryGroup(a.Status)
			for k := bin(a.StartedAt); k <= bin(b.endOf(a)); k++ {
				counts[k][g]++
			}
		}
	}
	peak := 0
	for _, c := range counts {
		peak = max(peak, c[0]+c[1]+c[2]+c[3])
	}
	sm := summary{Peak: peak}
	if peak == 0 {
		return sm
	}
	for k, c := range counts {
		y := summaryHeight - 2
		for g, n := range c {
			if n == 0 {
				continue
			}
			h := float64(n) / float64(peak) * (summaryHeight - 4)
			y -= h
			sm.Bars = append(sm.Bars, aggBar{X: labelWidth + float64(k)*binW, Y: y, W: binW, H: h, Class: "agg " + summaryGroups[g]})
		}
	}
	return sm
}
