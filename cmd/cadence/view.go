package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cadence-dev/cadence/internal/history"
)

// view prints a run's events: one human line per transition, a live status
// line while waiting (only on a terminal), or JSON Lines with --json.
type view struct {
	mu       sync.Mutex
	out, err io.Writer
	json     bool
	quiet    bool
	color    bool
	live     bool // stdout is a terminal: a status line may be redrawn
	liveText bool // a live line is currently shown
	enc      *json.Encoder
	// stopTicker ends the live line of the running attempt.
	stopTicker chan struct{}
}

func newView(stdout, stderr io.Writer, o output) *view {
	tty := isTerminal(stdout)
	return &view{
		out:   stdout,
		err:   stderr,
		json:  o.JSON,
		quiet: o.Quiet,
		color: tty && !o.NoColor && os.Getenv("NO_COLOR") == "" && !o.JSON,
		live:  tty && !o.JSON && !o.Quiet,
		enc:   json.NewEncoder(jsonSafe{stdout}),
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (v *view) Emit(ev history.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.json {
		_ = v.enc.Encode(ev)
		return
	}
	if v.live {
		switch ev.Type {
		case history.EventAttemptStarted:
			v.startTicker(ev)
		case history.EventAttemptFinished, history.EventRunInterrupted, history.EventRunFinished:
			v.stopTickerLocked()
		}
	}
	// An unimportant line is not cleaned under --quiet: a resume of a
	// long run emits one for each step done before.
	text, important := eventText(ev)
	if text == "" || (v.quiet && !important) {
		return
	}
	line := cleanLines(text)
	if line == "" {
		return
	}
	v.clearLive()
	if v.color {
		switch {
		case ev.Type == history.EventStepSucceeded || (ev.Type == history.EventRunFinished && ev.Status == "succeeded"):
			line = "\x1b[32m" + line + "\x1b[0m"
		case ev.Type == history.EventStepFailed || (ev.Type == history.EventRunFinished && ev.Status == "failed"):
			line = "\x1b[31m" + line + "\x1b[0m"
		}
	}
	fmt.Fprintln(v.out, line)
}

func (v *view) Tick(step, what string, d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.live {
		return
	}
	fmt.Fprintf(v.out, "\r\x1b[K%-12s %s: %s left", clean(step, maxQuote), clean(what, maxErrorLine), d.Round(time.Second))
	v.liveText = true
}

// startTicker shows a live line for a running attempt: elapsed time,
// agent and attempt, redrawn every second until the attempt ends.
func (v *view) startTicker(ev history.Event) {
	v.stopTickerLocked()
	stop := make(chan struct{})
	v.stopTicker = stop
	started := ev.Time
	name := ev.Step
	if ev.Item != "" {
		// Cleaned before it is padded, for the padding to count what
		// is shown.
		name += "[" + clean(ev.Item, maxQuote) + "]"
	}
	label := fmt.Sprintf("%-12s attempt %d (%d of %d), agent %s", name, ev.Attempt, ev.Counted, ev.MaxAttempts, ev.Agent)
	if ev.Kind == "help" {
		label = fmt.Sprintf("%-12s help round %d, advisor %s", name, ev.HelpRound, ev.Agent)
	}
	// The item's key is the agent's: the label is cleaned as every line is.
	label = cleanLines(label)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				v.mu.Lock()
				select {
				case <-stop:
				default:
					fmt.Fprintf(v.out, "\r\x1b[K%s: running %s", label, now.Sub(started).Round(time.Second))
					v.liveText = true
				}
				v.mu.Unlock()
			}
		}
	}()
}

func (v *view) stopTickerLocked() {
	if v.stopTicker != nil {
		close(v.stopTicker)
		v.stopTicker = nil
	}
}

func (v *view) clearLive() {
	if v.liveText {
		fmt.Fprint(v.out, "\r\x1b[K")
		v.liveText = false
	}
}

func (v *view) close() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopTickerLocked()
	v.clearLive()
}

// humanLine renders one event; important lines survive --quiet. Each of
// its lines is cleaned for the terminal (cleanLines): an event quotes what
// agents wrote, in a map item's key, an error, a decision's value.
func humanLine(ev history.Event) (string, bool) {
	line, important := eventText(ev)
	return cleanLines(line), important
}

// eventText is the text of humanLine, before it is cleaned.
func eventText(ev history.Event) (string, bool) {
	name := ev.Step
	if ev.Item != "" {
		// Cleaned before it is padded, for the padding to count what
		// is shown.
		name += "[" + clean(ev.Item, maxQuote) + "]"
	}
	step := fmt.Sprintf("%-12s", name)
	clock := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.Local().Format("15:04:05")
	}
	switch ev.Type {
	case history.EventRunStarted:
		return fmt.Sprintf("run %s started%s", ev.RunID, paren(ev.Message)), false
	case history.EventRunResumed:
		return fmt.Sprintf("run %s resumed%s", ev.RunID, paren(ev.Message)), false
	case history.EventAttemptSettled:
		return fmt.Sprintf("%s attempt %d %s: %s", step, ev.Attempt, ev.Status, ev.Message), true
	case history.EventStepAlreadyDone:
		return fmt.Sprintf("%s already succeeded, not run again", step), false
	case history.EventStepSkipped:
		return fmt.Sprintf("%s skipped: %s", step, ev.Message), false
	case history.EventIterationStarted:
		return fmt.Sprintf("%s iteration %d started", step, ev.Attempt), false
	case history.EventIterationEnded:
		return fmt.Sprintf("%s iteration %d: %s", step, ev.Attempt, ev.Message), false
	case history.EventGateWaiting:
		// The prompt may quote agent output: it is cleaned, line by line.
		var b strings.Builder
		fmt.Fprintf(&b, "%s WAITING FOR APPROVAL", step)
		for _, l := range strings.Split(ev.Message, "\n") {
			b.WriteString("\n    " + clean(l, maxQuote))
		}
		return b.String(), true
	case history.EventGateDecided:
		// A comment of several lines is shown on one.
		return fmt.Sprintf("%s %s%s", step, ev.Status, paren(clean(strings.ReplaceAll(ev.Message, "\n", " "), maxQuote))), true
	case history.EventAttemptStarted:
		// An agent without a process of its own (openai) has no pid, and a
		// follower may read an attempt before its pid is recorded.
		pid := ""
		if ev.PID > 0 {
			pid = fmt.Sprintf(", pid %d", ev.PID)
		}
		if ev.Kind == "help" {
			return fmt.Sprintf("%s attempt %d started (help round %d, advisor %s%s)", step, ev.Attempt, ev.HelpRound, ev.Agent, pid), false
		}
		who := "agent " + ev.Agent
		if ev.Agent == "" {
			who = "command" // a command step (SPEC 16.2) has no agent
		}
		return fmt.Sprintf("%s attempt %d started (%s, %d of %d, %s%s)", step, ev.Attempt, ev.Kind, ev.Counted, ev.MaxAttempts, who, pid), false
	case history.EventAttemptFinished:
		s := fmt.Sprintf("%s attempt %d %s in %.1fs", step, ev.Attempt, ev.Status, ev.Elapsed)
		if ev.Kind == "help" {
			s = fmt.Sprintf("%s attempt %d (help round %d) %s in %.1fs", step, ev.Attempt, ev.HelpRound, ev.Status, ev.Elapsed)
		}
		if ev.Error != "" {
			s += ": " + clean(firstLine(ev.Error), maxErrorLine)
			if cause := clean(ev.Stderr, maxQuote); cause != "" {
				s += " (stderr: " + cause + ")"
			}
			for _, line := range strings.Split(ev.Tail, "\n") {
				indent := len(line) - len(strings.TrimLeft(line, " "))
				if line = clean(line, maxQuote); line != "" {
					s += "\n    " + strings.Repeat(" ", indent) + line
				}
			}
		}
		// Where the handoff came from is said when it was cut out of
		// something (a fence, prose) or repaired: the whole output or the
		// handoff file as it was is the norm, and says nothing.
		from, prov := "handoff from ", clean(ev.Provenance, maxQuote)
		if ev.Status != "succeeded" {
			from = "found in " // where the value refused as a handoff was
		} else if len(ev.Repairs) == 0 && (prov == "output" || prov == "file") {
			prov = ""
		}
		switch {
		case prov != "" && len(ev.Repairs) > 0:
			s += " (" + from + prov + "; repaired: " + strings.Join(ev.Repairs, ", ") + ")"
		case prov != "":
			s += " (" + from + prov + ")"
		case len(ev.Repairs) > 0:
			s += " (repaired: " + strings.Join(ev.Repairs, ", ") + ")"
		}
		switch {
		case ev.Uncounted && ev.Status == "interrupted":
			s += " (stopped by cadence: not counted against max_attempts)"
		case ev.Uncounted && ev.Class == "auth":
			s += " (a login to fix: not counted against max_attempts)"
		case ev.Uncounted:
			s += " (a usage limit: not counted against max_attempts)"
		}
		if ev.Until != nil {
			s += fmt.Sprintf("; retry at %s", clock(ev.Until))
		}
		if ev.Warning != "" {
			// Shown with --quiet too: the run goes on, but something
			// is off.
			s += "; WARNING: " + ev.Warning
			return s, true
		}
		return s, ev.Status != "succeeded"
	case history.EventCheckStarted:
		return fmt.Sprintf("%s attempt %d check %s started: %s", step, ev.Attempt, ev.Check, firstLine(ev.Message)), false
	case history.EventCheckFinished:
		s := fmt.Sprintf("%s attempt %d check %s %s in %.1fs", step, ev.Attempt, ev.Check, ev.Status, ev.Elapsed)
		if ev.Error != "" {
			s += ": " + firstLine(ev.Error)
		}
		return s, ev.Status != "passed"
	case history.EventWaiting:
		left := time.Until(*ev.Until).Round(100 * time.Millisecond)
		switch ev.Reason {
		case "usage limit":
			return fmt.Sprintf("%s waiting for the usage limit to lift at %s (%s)", step, clock(ev.Until), left), false
		case "circuit":
			// Shown with --quiet too: a wait of minutes must say what
			// it waits for and how to end it.
			return fmt.Sprintf("%s waiting for agent %s's circuit to half-open at %s (%s); %s",
				step, ev.Agent, clock(ev.Until), left, history.ResetHint(ev.Agent)), true
		}
		return fmt.Sprintf("%s waiting for %s until %s (%s)", step, ev.Reason, clock(ev.Until), left), false
	case history.EventItemsFrozen:
		return fmt.Sprintf("%s map over %s", step, ev.Message), false
	case history.EventItemTakenOver, history.EventFallback:
		return fmt.Sprintf("%s %s", step, ev.Message), true
	case history.EventLeaseLost:
		return fmt.Sprintf("%s LEASE LOST: %s (%s)", step, ev.Message, firstLine(ev.Error)), true
	case history.EventItemDead:
		return fmt.Sprintf("%s DEAD: %s: %s", step, ev.Message, firstLine(ev.Error)), true
	case history.EventStepSucceeded:
		s := fmt.Sprintf("%s succeeded (%d of %d attempts used)", step, ev.Counted, ev.MaxAttempts)
		if ev.MaxAttempts == 0 && ev.Message != "" {
			s = fmt.Sprintf("%s succeeded (%s)", step, ev.Message)
		}
		if ev.CostUSD > 0 {
			s += fmt.Sprintf(", $%.4f", ev.CostUSD)
		}
		return s, false
	case history.EventStepFailed:
		return fmt.Sprintf("%s FAILED: %s", step, firstLine(ev.Message)), true
	case history.EventRunFinished:
		if ev.Status == "succeeded" && ev.Message != "" {
			// The steps it skipped: a gate among them was not asked.
			return fmt.Sprintf("run %s %s; %s", ev.RunID, ev.Status, ev.Message), true
		}
		return fmt.Sprintf("run %s %s", ev.RunID, ev.Status), true
	case history.EventRunInterrupted:
		if ev.Message == "" || ev.Message == "interrupted" {
			return fmt.Sprintf("run %s interrupted", ev.RunID), true
		}
		return fmt.Sprintf("run %s interrupted: %s", ev.RunID, ev.Message), true
	}
	return "", false
}

// paren is " (s)", or "" when s is empty.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// escapes matches terminal escape sequences: CSI (colours, cursor moves)
// and OSC (titles, links), so that clean drops them whole.
var escapes = regexp.MustCompile(`\x1b\[[0-9:;<=>?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b[ -/]*[0-~]`)

// maxQuote bounds what the view quotes of an agent's own words; an
// error's first line (which may quote the agent too) has its own bound.
const (
	maxQuote     = 160
	maxErrorLine = 400
)

// clean makes text an agent wrote safe to print on a terminal: control
// characters (escape sequences among them) and invalid UTF-8 are dropped,
// tabs become spaces, surrounding space is trimmed, and the result is cut
// to at most n runes.
func clean(s string, n int) string {
	s = escapes.ReplaceAllString(s, "")
	var b strings.Builder
	runes := 0
	for _, r := range s {
		switch {
		case r == '\t':
			r = ' '
		case r == utf8.RuneError, unicode.IsControl(r), r == '\u2028', r == '\u2029',
			unicode.In(r, unicode.Bidi_Control):
			continue
		}
		if runes == n {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		runes++
	}
	return strings.TrimSpace(b.String())
}

// jsonSafe writes JSON safe for a terminal, with the same value:
// encoding/json escapes the C0 controls in strings, but writes DEL and the
// C1 controls (U+0080 to U+009F, among them U+009B, a CSI) as they are,
// and a terminal may act on them. jsonSafe writes those as \u escapes.
// Outside strings JSON has neither, and in valid UTF-8 the bytes C2 80 to
// C2 9F are exactly the C1 controls. Each Write must hold whole UTF-8
// sequences, as json.Encoder's do (one value per Write).
type jsonSafe struct{ w io.Writer }

func (j jsonSafe) Write(p []byte) (int, error) {
	i := bytes.IndexFunc(p, func(r rune) bool { return r == 0x7f || (r >= 0x80 && r <= 0x9f) })
	if i < 0 {
		return j.w.Write(p)
	}
	b := make([]byte, 0, len(p)+16)
	b = append(b, p[:i]...)
	for _, r := range string(p[i:]) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			b = fmt.Appendf(b, `\u%04x`, r)
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	if _, err := j.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// answerHint is how a person answers the approval gate whose row is step.
func answerHint(step string) string {
	return fmt.Sprintf("answer with: cadence approve %s [--comment TEXT]  or: cadence reject %s --comment TEXT", step, step)
}
