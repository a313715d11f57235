package agent

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

const (
	readChunk    = 32 << 10
	stderrTailSz = 2 << 10
)

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

	stdinDone, stdoutDone, stderrDone chan struct{}

	// Owned by the stdout reader until stdoutDone.
	res         Result
	help        helpScanner
	stream      *claudeStream // ProtocolClaudeStream only
	events      lineStream    // the protocol's parser; nil for ProtocolText
	sessionSeen bool          // OnSession has been called
	text        bytes.Buffer
	stdoutBytes int64
	overflow    bool
	pending     []byte

	// Owned by the stderr reader until stderrDone.
	stderrTail tailBuffer
}

func newSession(spec Spec, p *pipes) *session {
	s := &session{
		spec:       spec,
		pipes:      p,
		out:        newOutputCopy(spec.Output, spec.OutputCap),
		activity:   make(chan struct{}, 1),
		tooLarge:   make(chan struct{}, 1),
		stdinDone:  make(chan struct{}),
		stdoutDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrTail: tailBuffer{size: stderrTailSz},
	}
	s.help.marker = spec.HelpMarker
	switch spec.Protocol {
	case ProtocolClaudeStream:
		s.stream = newClaudeStream(&s.res, &s.help, time.Now)
		s.events = s.stream
	case ProtocolCodexJSONL:
		s.events = newCodexStream(&s.res, &s.help, spec.PriorInputTokens, spec.PriorOutputTokens)
	case ProtocolGeminiStream:
		s.events = newGeminiStream(&s.res, &s.help, time.Now, spec.Resume)
	}
	return s
}

func (s *session) startIO() {
	go s.writeStdin()
	go s.readStdout()
	go s.readStderr()
}

// finishIO runs once the agent has been reaped: it kills whatever is left of
// the process group, unblocks the stdin writer, and waits for both readers,
// cutting them off if a process outside the group still holds the pipes.
func (s *session) finishIO(pgid int) {
	_ = signalGroup(pgid, syscall.SIGKILL)
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
	buf := make([]byte, readChunk)
	for {
		n, err := s.pipes.outR.Read(buf)
		if n > 0 {
			s.out.write(buf[:n])
			s.signal(s.activity)
			s.consume(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if !s.overflow && len(s.pending) > 0 {
		s.line(s.pending)
		s.pending = nil
	}
}

// consume adds a chunk of stdout to the candidate and feeds complete lines to
// the protocol. Past MaxBytes nothing more is kept: the rest is only counted.
// maxTextLine bounds how much of one line of a text agent's output is kept
// for the help-marker scan.
const maxTextLine = 64 << 10

func (s *session) consume(chunk []byte) {
	s.stdoutBytes += int64(len(chunk))
	if s.overflow {
		return
	}
	if s.stdoutBytes > s.spec.MaxBytes {
		s.overflow = true
		s.pending = nil
		s.signal(s.tooLarge)
		return
	}
	if s.spec.Protocol == ProtocolText {
		s.text.Write(chunk)
	}
	for {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			if s.spec.Protocol == ProtocolText && len(s.pending)+len(chunk) > maxTextLine {
				// A text agent's lines are only scanned for the help marker,
				// and the whole output is already kept in s.text: a line
				// without an end is not copied a second time.
				chunk = chunk[:max(0, min(len(chunk), maxTextLine-len(s.pending)))]
			}
			s.pending = append(s.pending, chunk...)
			return
		}
		if len(s.pending) > 0 {
			s.pending = append(s.pending, chunk[:i]...)
			s.line(s.pending)
			s.pending = s.pending[:0]
		} else {
			s.line(chunk[:i])
		}
		chunk = chunk[i+1:]
	}
}

// lineStream is a stream protocol's parser: it folds stdout lines into the
// session's Result as they arrive, and completes it once stdout and stderr
// have ended.
type lineStream interface {
	// line handles one stdout line without its newline; it must not
	// retain the slice.
	line(line []byte)
	// finish sets what only the whole stream decides (the candidate text,
	// fallbacks read from the stderr tail).
	finish(stderrTail string)
}

// line handles one complete stdout line; it must not retain the slice.
func (s *session) line(line []byte) {
	if s.events == nil {
		s.help.line(string(line))
		return
	}
	s.events.line(line)
	if !s.sessionSeen && s.res.SessionID != "" {
		s.sessionSeen = true
		if s.spec.OnSession != nil {
			s.spec.OnSession(s.res.SessionID)
		}
	}
}

func (s *session) readStderr() {
	defer close(s.stderrDone)
	buf := make([]byte, readChunk)
	for {
		n, err := s.pipes.errR.Read(buf)
		if n > 0 {
			s.out.write(buf[:n])
			s.stderrTail.write(buf[:n])
			s.signal(s.activity)
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
	if s.events == nil {
		res.Text = s.text.Bytes()
	}
	res.Help = s.help.seen
	res.HelpContext = s.help.context
	res.StdoutBytes = s.stdoutBytes
	res.StderrTail = tail
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

// sessionNotFoundMarkers are what the agent CLIs print, on stderr, when asked
// to resume a session they do not have: Claude Code, Codex, Gemini CLI.
var sessionNotFoundMarkers = []string{
	noConversation,
	"no rollout found for thread id",
	"Error resuming session",
}

func lastLineWith(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
