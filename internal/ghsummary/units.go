package ghsummary

import (
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// unit is one row of the summary's table: a step, a loop's inner step
// (by its path, such as implement/2/code) or a map item.
type unit struct {
	ID          string
	Step, Item  string // the step row and map item the unit's attempts are stored under
	Status      checkpoint.StepStatus
	Agent       string
	Used, Max   int
	Attempts    []history.AttemptReport
	Cost        float64
	CostUnknown bool
	In, Out     int64
	TokUnknown  bool
	// Items, for a map step, counts its items by status.
	Items map[checkpoint.StepStatus]int
	// Start and End span the unit's attempts, its items' included; zero
	// when none ran.
	Start, End time.Time
}

// units flattens a report's steps in their order: each loop's iterations'
// inner steps follow the loop's own row, and a map step's failed items
// are units of their own (named STEP[KEY]) after the step's row.
func units(steps []history.StepReport) []unit {
	var out []unit
	for _, s := range steps {
		u := unit{ID: s.ID, Step: s.ID, Status: s.Status, Agent: s.Agent, Used: s.AttemptsUsed, Max: s.MaxAttempts,
			Attempts: s.Attempts, Cost: s.CostUSD, CostUnknown: s.CostUnknown, In: s.InputTokens, Out: s.OutputTokens,
			TokUnknown: s.TokensUnknown, Items: s.ItemCounts}
		u.Start, u.End = span(s.Attempts, time.Time{}, time.Time{})
		var failed []unit
		for _, it := range s.Items {
			u.Start, u.End = span(it.Attempts, u.Start, u.End)
			if it.Status != "failed" {
				continue
			}
			iu := unit{ID: s.ID + "[" + it.Key + "]", Step: s.ID, Item: it.Key, Status: it.Status, Agent: s.Agent, Used: it.AttemptsUsed,
				Max: it.MaxAttempts, Attempts: it.Attempts, Cost: it.CostUSD, In: it.InputTokens, Out: it.OutputTokens}
			iu.Start, iu.End = span(it.Attempts, time.Time{}, time.Time{})
			failed = append(failed, iu)
		}
		out = append(out, u)
		out = append(out, failed...)
		for _, it := range s.Iterations {
			out = append(out, units(it.Steps)...)
		}
	}
	return out
}

// span widens [start, end] to cover the attempts; an attempt still
// running ends at its start.
func span(atts []history.AttemptReport, start, end time.Time) (time.Time, time.Time) {
	for _, a := range atts {
		if start.IsZero() || a.StartedAt.Before(start) {
			start = a.StartedAt
		}
		fin := a.StartedAt
		if a.FinishedAt != nil {
			fin = *a.FinishedAt
		}
		if fin.After(end) {
			end = fin
		}
	}
	return start, end
}

// last is the unit's last attempt, nil when none ran.
func (u unit) last() *history.AttemptReport {
	if len(u.Attempts) == 0 {
		return nil
	}
	return &u.Attempts[len(u.Attempts)-1]
}

// Diagnosed lists the attempts whose diagnosis the summary and the
// annotations show: the last attempt of each failed unit, as many as the
// summary shows. Their details are read apart (history.AttemptDetails),
// rather than with every attempt's prompt.
func Diagnosed(rep *history.Report) []history.AttemptRef {
	var out []history.AttemptRef
	for _, u := range units(rep.Steps) {
		if a := u.last(); u.Status == "failed" && a != nil && len(out) < maxFailures {
			out = append(out, history.AttemptRef{Step: u.Step, Item: u.Item, N: a.N})
		}
	}
	return out
}

// SetDetails puts the details read for Diagnosed's attempts into the
// report's attempts.
func SetDetails(rep *history.Report, details map[history.AttemptRef]string) {
	var walk func(steps []history.StepReport)
	set := func(step, item string, atts []history.AttemptReport) {
		for i := range atts {
			if d, ok := details[history.AttemptRef{Step: step, Item: item, N: atts[i].N}]; ok {
				atts[i].Details = d
			}
		}
	}
	walk = func(steps []history.StepReport) {
		for _, s := range steps {
			set(s.ID, "", s.Attempts)
			for _, it := range s.Items {
				set(s.ID, it.Key, it.Attempts)
			}
			for _, it := range s.Iterations {
				walk(it.Steps)
			}
		}
	}
	walk(rep.Steps)
}
