package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// num formats an SVG coordinate with at most one decimal: enough for a
// pixel, and short, since a report of 10,000 attempts carries tens of
// thousands of them.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// human formats a duration for a reader: "0s", "850ms", "12.3s", "4m05s",
// "2h03m", "3d04h". It never shows more than two units.
func human(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		d = d.Round(time.Hour)
		return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}

// money formats a cost in US dollars with four decimals, as inspect does.
func money(v float64) string { return fmt.Sprintf("$%.4f", v) }

// percent formats a share in [0, 1] as a whole percentage, or "<1%" for a
// share too small to round up to one.
func percent(share float64) string {
	switch {
	case share <= 0:
		return "0%"
	case share < 0.005:
		return "<1%"
	default:
		return fmt.Sprintf("%.0f%%", share*100)
	}
}

// clock formats an instant as UTC wall-clock time with the date.
func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// clip shortens s to at most n bytes on a character boundary, marking the
// cut with an ellipsis and the number of bytes left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more bytes]", len(s)-cut)
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
