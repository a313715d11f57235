package agent

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	readChunk    = 256 << 10
	stderrTailSz = 2 << 10
	// firstReadChunk is the size of a stream reader's first buffer. Most
	// streams are short (a command step's stderr is usually empty), and a
	// buffer of readChunk for each of an attempt's two streams was most of
	// what the run's process allocated per attempt, and so most of its
	// garbage collections. A read that fills the buffer doubles it
	// (grownAfter), so a long stream is read readChunk at a time after
	// six reads.
	firstReadChunk = 4 << 10
)

// grownAfter returns the buffer for the read after one that returned n
// bytes into buf: twice as large, up to readChunk, if that read filled it;
// buf itself otherwise.
func grownAfter(buf []byte, n int) []byte {
	if n < len(buf) || len(buf) >= readChunk {
		return buf
	}
	return make([]byte, min(2*len(buf), readChunk))
}

// session is the I/O side of one running attempt: a stdin writer, a stdout
// reader that parses the protocol as lines arrive, and a stderr reader. The
// readers own their state until finishIO has waited for them; supervise only
// sees the activity and tooLarge signals.
type session struct {
	spec  Spec
	pipes *pipes
	out   *outputCopy

	activity chan struct{} // a read returned data (buffered, coalesced)
	tooLarge chan struct{} // stdout went past MaxBytes (buffered, sent once)
	// answered: the agent's final event came, or its stdout ended
	// (buffered, sent once; never for ProtocolNone).
	answered chan struct{}

	stdinDone, stdoutDone, stderrDone chan struct{}

	// sawOutput: a reader got a byte of stdout or stderr; set before
	// activity is signalled.
	sawOutput atomic.Bool
	// silentStart: supervise stopped the agent at Spec.StartTimeout.
	silentStart bool

	// Owned by the stdout reader until stdoutDone.
	res         Result
	help        helpScanner
	events      lineStream   // the protocol's parser; nil for ProtocolText
	sessionSeen string       // the session id OnSession was last called with
	answerSent  bool         // answered has been signalled
	text        bytes.Buffer // a text agent's output, when Spec.Candidate is nil
	stdoutBytes int64
	overflow    bool   // a text agent's output went past MaxBytes
	pending     []byte // a text agent's current line, when it spans reads

	// A stream protocol's current line.
	scan     *eventScanner
	prefix   []byte // its first maxTextLine bytes
	lineLen  int64
	skipping bool // it is longer than MaxEventBytes

	// Owned by the stderr reader until stderrDone.
	stderrTail tailBuffer
}

func newSession(spec Spec, p *pipes) *session {
	s := &session{
		spec:       spec,
		pipes:      p,
		out:        newOutputCopy(spec.Output, spec.OutputCap, spec.TailLines),
		activity:   make(chan struct{}, 1),
		tooLarge:   make(chan struct{}, 1),
		answered:   make(chan struct{}, 1),
		stdinDone:  make(chan struct{}),
		stdoutDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrTail: tailBuffer{size: stderrTailSz},
	}
	s.help.marker = spec.HelpMarker
	switch spec.Protocol {
	case ProtocolClaudeStream:
		c := newClaudeStream(&s.res, &s.help, time.Now, spec.MaxBytes)
		c.loc = agentZone(spec.Env)
		s.events = c
	case ProtocolCodexJSONL:
		c := newCodexStream(&s.res, &s.help, spec.MaxBytes, spec.PriorInputTokens, spec.PriorCachedTokens, spec.PriorOutputTokens)
		c.loc = agentZone(spec.Env)
		s.events = c
	case ProtocolGeminiStream:
		s.events = newGeminiStream(&s.res, &s.help, time.Now, spec.MaxBytes, spec.Resume)
	case ProtocolPiJSON:
		s.events = newPiStream(&s.res, &s.help, time.Now, spec.MaxBytes)
	case ProtocolCopilotJSON:
		s.events = newCopilotStream(&s.res, &s.help, time.Now, spec.MaxBytes)
	case ProtocolOpencodeJSON:
		s.events = newOpencodeStream(&s.res, &s.help, time.Now, spec.MaxBytes)
	case ProtocolQwenStream:
		q := newQwenStream(&s.res, &s.help, time.Now, spec.MaxBytes)
		q.loc = agentZone(spec.Env)
		s.events = q
	}
	if s.events != nil {
		s.scan = newEventScanner(s.events.captures(), lineBudget(spec.MaxBytes))
	}
	return s
}

func (s *session) startIO() {
	go s.writeStdin()
	go s.readStdout()
	go s.readStderr()
}

// finishIO runs once the agent has been reaped: it kills whatever is left of
// the process group (nothing is when kept: a supervisor that killed all
// its program started and waits for another order), unblocks the stdin
// writer, and waits for both readers, cutting them off if a process
// outside the group still holds the pipes.
func (s *session) finishIO(pgid int, kept bool) {
	if !kept {
		_ = signalGroup(pgid, syscall.SIGKILL)
	}
	if s.pipes.inW != nil {
		_ = s.pipes.inW.SetWriteDeadline(time.Now())
	}
	<-s.stdinDone
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	for _, done := range []chan struct{}{s.stdoutDone, s.stderrDone} {
		select {
		case <-done:
		case <-deadline.C:
			_ = s.pipes.outR.SetReadDeadline(time.Now())
			_ = s.pipes.errR.SetReadDeadline(time.Now())
			<-done
		}
	}
	_ = s.pipes.outR.Close()
	_ = s.pipes.errR.Close()
	s.out.close()
}

func (s *session) writeStdin() {
	defer close(s.stdinDone)
	if s.pipes.inW == nil {
		return
	}
	// An agent that exits without reading its prompt makes this fail with
	// EPIPE or the deadline set by finishIO; neither concerns the attempt.
	_, _ = s.pipes.inW.Write(s.spec.Stdin)
	_ = s.pipes.inW.Close()
}

func (s *session) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *session) readStdout() {
	defer close(s.stdoutDone)
	buf := make([]byte, firstReadChunk)
	for {
		n, err := s.pipes.outR.Read(buf)
		if n > 0 {
			s.out.write(buf[:n])
			s.sawOutput.Store(true)
			s.signal(s.activity)
			s.consume(buf[:n])
			buf = grownAfter(buf, n)
		}
		if err != nil {
			break
		}
	}
	s.endStdout()
	s.answer()
}

// answer tells supervise that the agent has given its answer: the final
// event of a stream protocol, or the end of stdout.
func (s *session) answer() {
	if s.answerSent || s.spec.Protocol == ProtocolNone {
		return
	}
	s.answerSent = true
	s.signal(s.answered)
}

// maxTextLine bounds how much of one line of a text agent's output is kept
// for the help-marker scan.
const maxTextLine = 64 << 10

// consume takes a chunk of stdout. A text agent's output is the handoff
// candidate: past MaxBytes the attempt is stopped and the rest only
// counted. A stream protocol's output is a transcript of events, parsed
// line by line in memory bounded by MaxEventBytes whatever its length.
func (s *session) consume(chunk []byte) {
	s.stdoutBytes += int64(len(chunk))
	if s.spec.Protocol == ProtocolNone {
		return
	}
	if s.events == nil {
		s.consumeText(chunk)
		return
	}
	s.consumeEvents(chunk)
}

func (s *session) consumeText(chunk []byte) {
	if s.overflow {
		return
	}
	if s.stdoutBytes > s.spec.MaxBytes {
		s.overflow = true
		s.pending = nil
		s.signal(s.tooLarge)
		return
	}
	if s.spec.Candidate != nil {
		_, _ = s.spec.Candidate.Write(chunk)
	} else {
		s.text.Write(chunk)
	}
	for {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			// Lines are only scanned for the help marker; a line without an
			// end is not kept past maxTextLine.
			keep := max(0, min(len(chunk), maxTextLine-len(s.pending)))
			s.pending = append(s.pending, chunk[:keep]...)
			return
		}
		if len(s.pending) > 0 {
			keep := max(0, min(i, maxTextLine-len(s.pending)))
			s.pending = append(s.pending, chunk[:keep]...)
			s.help.line(s.pending)
			s.pending = s.pending[:0]
		} else {
			s.help.line(chunk[:min(i, maxTextLine)])
		}
		chunk = chunk[i+1:]
	}
}

func (s *session) consumeEvents(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		part := chunk
		if i >= 0 {
			part = chunk[:i]
		}
		s.lineLen += int64(len(part))
		switch {
		case s.skipping:
		case s.lineLen > s.spec.MaxEventBytes:
			// Too long: parsing stops here, and what was captured so far
			// tells the protocol what kind of event it was.
			s.skipping = true
		default:
			s.scan.write(part)
			if n := min(len(part), maxTextLine-len(s.prefix)); n > 0 {
				s.prefix = append(s.prefix, part[:n]...)
			}
		}
		if i < 0 {
			return
		}
		s.endLine()
		chunk = chunk[i+1:]
	}
}

// endLine ends the current line of a stream protocol: an event, a line that
// is not one, or a line too long to parse.
func (s *session) endLine() {
	switch {
	case s.skipping:
		s.res.SkippedEvents++
		s.res.SkippedEventBytes += s.lineLen
		s.events.skipped(s.scan)
	case s.scan.ok():
		s.events.event(s.scan, s.prefix)
	default:
		s.events.raw(s.prefix)
	}
	s.scan.reset()
	s.prefix, s.lineLen, s.skipping = s.prefix[:0], 0, false
	if s.events.ended() {
		s.answer()
	}
	if s.res.SessionID != s.sessionSeen && s.res.SessionID != "" {
		s.sessionSeen = s.res.SessionID
		if s.spec.OnSession != nil {
			s.spec.OnSession(s.res.SessionID)
		}
	}
}

// endStdout handles what stdout ended with: a line without a final
// newline.
func (s *session) endStdout() {
	if s.events != nil {
		if s.lineLen > 0 {
			s.endLine()
		}
		return
	}
	if !s.overflow && len(s.pending) > 0 {
		s.help.line(s.pending)
	}
	s.pending = nil
}

// lineStream is a stream protocol's parser: it folds the transcript's lines
// into the session's Result as they end, and completes it once stdout and
// stderr have ended. Lines are parsed by an eventScanner with the
// protocol's captures, so a parser sees only the fields it asked for.
type lineStream interface {
	// captures lists the fields the protocol reads from an event.
	captures() []capture
	// event handles a line that is one JSON object, whose captured
	// fields e holds; line is its first maxTextLine bytes, for an object
	// that turns out not to be an event.
	event(e *eventScanner, line []byte)
	// raw handles a line that is not an event (the first maxTextLine
	// bytes of it): agents print warnings and errors as plain text.
	raw(line []byte)
	// skipped handles a line longer than MaxEventBytes, not parsed past
	// that: e holds what was captured before. The parser decides whether
	// it held the final answer.
	skipped(e *eventScanner)
	// finish sets what only the whole stream decides (the candidate text,
	// fallbacks read from the stderr tail).
	finish(stderrTail string)
	// ended reports whether the agent's final event (its final answer,
	// or the failure that ends its turn) has been seen: the process is
	// then expected to exit (see Spec.ExitGrace).
	ended() bool
}

// answerLimit is how many raw bytes of a final answer a protocol captures:
// escapes take two bytes for one (\n, \"), so an answer of maxBytes may be
// up to about twice as long in JSON.
func answerLimit(maxBytes int64) int {
	return int(min(2*maxBytes+2, 1<<31-1))
}

// answerCapture captures a final answer, a JSON string that is kept only
// while it may decode to maxBytes or less.
func answerCapture(path []string, maxBytes int64) capture {
	return capture{path: path, limit: answerLimit(maxBytes), decoded: maxBytes}
}

// lineBudget bounds what one line may capture in all: two answers' worth
// and some room for the small fields.
func lineBudget(maxBytes int64) int {
	return int(min(2*int64(answerLimit(maxBytes))+1<<20, 1<<31-1))
}

func (s *session) readStderr() {
	defer close(s.stderrDone)
	buf := make([]byte, firstReadChunk)
	for {
		n, err := s.pipes.errR.Read(buf)
		if n > 0 {
			s.out.write(buf[:n])
			s.stderrTail.write(buf[:n])
			s.sawOutput.Store(true)
			s.signal(s.activity)
			buf = grownAfter(buf, n)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				s.stderrTail.write([]byte("\n[cadence: stderr read error: " + err.Error() + "]"))
			}
			return
		}
	}
}

// result assembles the Result once both readers have finished.
func (s *session) result() *Result {
	tail := s.stderrTail.String()
	if s.events != nil {
		s.events.finish(tail)
	}
	res := s.res
	if s.events == nil && s.spec.Candidate == nil && s.spec.Protocol != ProtocolNone {
		res.Text = s.text.Bytes()
	}
	res.Help = s.help.seen
	res.HelpContext = s.help.context
	res.StdoutBytes = s.stdoutBytes
	res.StderrTail = tail
	if s.out.tail != nil {
		res.Tail = s.out.tail.String()
	}
	for _, marker := range sessionNotFoundMarkers {
		if strings.Contains(tail, marker) {
			res.SessionNotFound = true
			if res.ErrorMessage == "" {
				res.ErrorMessage = lastLineWith(tail, marker)
			}
			break
		}
	}
	return &res
}

// agentZone is the time zone the agent prints its clock times in: the
// last TZ of its environment when it names a zone this machine knows
// ("Europe/Berlin", ":Europe/Berlin"; empty is UTC), else cadence's own.
func agentZone(env []string) *time.Location {
	for i := len(env) - 1; i >= 0; i-- {
		tz, ok := strings.CutPrefix(env[i], "TZ=")
		if !ok {
			continue
		}
		if loc, err := time.LoadLocation(strings.TrimPrefix(tz, ":")); err == nil { // "" is UTC
			return loc
		}
		break
	}
	return time.Local
}

// sessionNotFoundMarkers are what the agent CLIs print, on stderr, when asked
// to resume a session they do not have: Claude Code, Codex, Gemini CLI,
// Qwen Code, pi.
var sessionNotFoundMarkers = []string{
	noConversation,
	"no rollout found for thread id",
	"Error resuming session",
	"No saved session found with ID",
	"No session found matching",
}

func lastLineWith(s, sub string) string {
	return lastLineWhere(s, func(line string) bool { return strings.Contains(line, sub) })
}

// lastLineWhere returns the last line of s for which match is true,
// trimmed; "" when none is.
func lastLineWhere(s string, match func(string) bool) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if match(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
