package report

import (
	"fmt"
	"strconv"
	"time"
)

// Geometry of the timeline, in CSS pixels. Every lane group is its own SVG
// of the same width with the same horizontal scale, so lanes line up across
// the steps' sections and a collapsed map step's item lanes.
const (
	labelWidth = 190.0 // the lane names on the left
	plotWidth  = 1000.0
	svgWidth   = labelWidth + plotWidth + 16
	// laneHeight is the height of a lane; the template draws a bar 14px
	// high at y 3, and a wait 3px high at y 10, under its label.
	laneHeight = 20.0
	// minBarWidth keeps an attempt of a few milliseconds visible in a run
	// of hours.
	minBarWidth = 1.5
	// targetTicks is how many ticks the axis aims for; the tick step is
	// the smallest round duration that gives no more.
	targetTicks = 10
)

// scale maps instants of a run onto the x axis of the plot.
type scale struct {
	t0   time.Time
	span time.Duration
}

// newScale covers [t0, t1]; an empty or inverted interval becomes one
// second long so that a run with nothing to show still has an axis.
func newScale(t0, t1 time.Time) scale {
	span := t1.Sub(t0)
	if span < time.Second {
		span = time.Second
	}
	return scale{t0: t0, span: span}
}

// x is the horizontal position of t, clamped to the plot.
func (s scale) x(t time.Time) float64 {
	f := float64(t.Sub(s.t0)) / float64(s.span)
	f = min(max(f, 0), 1)
	return labelWidth + f*plotWidth
}

// width is the width of [from, to] on the plot, at least min.
func (s scale) width(from, to time.Time, least float64) float64 {
	return max(s.x(to)-s.x(from), least)
}

// tick is one mark of the time axis.
type tick struct {
	X     float64
	Label string
}

// tickSteps are the round durations an axis may step by, smallest first.
var tickSteps = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// tickStep returns the smallest round step that cuts span into at most
// targetTicks intervals; beyond the largest, it grows in multiples of it.
func tickStep(span time.Duration) time.Duration {
	for _, st := range tickSteps {
		if span/st <= targetTicks {
			return st
		}
	}
	last := tickSteps[len(tickSteps)-1]
	return last * (span/last/targetTicks + 1)
}

// ticks returns the axis marks of a scale: offsets from the run's start,
// at a round step chosen by the run's length.
func (s scale) ticks() []tick {
	st := tickStep(s.span)
	out := make([]tick, 0, targetTicks+1)
	for d := time.Duration(0); d <= s.span; d += st {
		out = append(out, tick{X: s.x(s.t0.Add(d)), Label: offset(d, st)})
	}
	return out
}

// offset labels a tick at d from the start with its two largest units,
// leaving out a zero second unit: "+500ms", "+1.5s", "+2m", "+1m30s",
// "+1h", "+1d06h". Below a second step, ticks fall between whole seconds.
func offset(d, step time.Duration) string {
	if d == 0 {
		return "0"
	}
	if step < time.Second && d%time.Second != 0 {
		if d < time.Second {
			return fmt.Sprintf("+%dms", d.Milliseconds())
		}
		return "+" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	for i, u := range units {
		if d < u.size {
			continue
		}
		s := fmt.Sprintf("+%d%s", d/u.size, u.name)
		if rest := d % u.size; i+1 < len(units) && rest >= units[i+1].size {
			s += fmt.Sprintf("%02d%s", rest/units[i+1].size, units[i+1].name)
		}
		return s
	}
	return "+" + d.String()
}
