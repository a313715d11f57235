package agent

import (
	"fmt"
	"io"
)

// Replay reads a stored copy of an agent's output, such as an attempt's
// .out file, in protocol proto, exactly as Run reads the live stream, and
// returns what it says: for a stream protocol the final answer (Text,
// StructuredOutput) and whether the turn failed (IsError), for
// ProtocolText the whole output. It starts no process. maxBytes and
// maxEventBytes are the limits the attempt ran with (zero: the defaults).
//
// It lets the handoff of a past attempt be judged again (`cadence validate
// --failed`) from the very bytes the attempt produced, with the parser
// that judged it the first time.
func Replay(r io.Reader, proto Protocol, maxBytes, maxEventBytes int64) (*Result, error) {
	if !knownProtocol(proto) {
		return nil, fmt.Errorf("agent: replay: unknown protocol %q", proto)
	}
	s := newSession(withDefaults(Spec{Protocol: proto, MaxBytes: maxBytes, MaxEventBytes: maxEventBytes}), nil)
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.consume(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("agent: replay: %w", err)
		}
	}
	s.endStdout()
	return s.result(), nil
}
