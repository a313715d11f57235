package agent

import (
	"crypto/rand"
	"errors"
	"fmt"
)

// NewSessionID returns a random (version 4) UUID, the form Claude Code
// accepts for --session-id.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// MaxSessionIDLen bounds the length of a session id cadence uses.
const MaxSessionIDLen = 128

// ErrBadSessionID marks a session id that is not a plain token.
var ErrBadSessionID = errors.New("not a plain session id")

// CheckSessionID reports whether id may be used as a session id: a plain
// token of ASCII letters, digits, '-', '_' and '.', at most
// MaxSessionIDLen bytes, that does not start with '-'. A session id comes
// from an agent's output, which is untrusted, and goes into the next
// attempt's argv (and a workflow's continue_args): anything else could
// add an option to the agent's command line, such as
// --dangerously-bypass-approvals-and-sandbox.
func CheckSessionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrBadSessionID)
	case len(id) > MaxSessionIDLen:
		return fmt.Errorf("%w: %d bytes, over %d", ErrBadSessionID, len(id), MaxSessionIDLen)
	case id[0] == '-':
		return fmt.Errorf("%w: %q starts with '-'", ErrBadSessionID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w: %q holds %q", ErrBadSessionID, id, c)
		}
	}
	return nil
}

// takeSessionID sets res.SessionID to the id an agent's stream reported:
// the last one reported wins, as `claude --resume` can hand back a new id
// (anthropics/claude-code#8069, #10806). An id that is not a plain token
// is not used: res.SessionIDRejected says why, and the attempt goes on
// with the id reported before, if any.
func takeSessionID(res *Result, id string) {
	if id == "" || id == res.SessionID {
		return
	}
	if err := CheckSessionID(id); err != nil {
		if res.SessionIDRejected == "" {
			res.SessionIDRejected = cutText(err.Error(), 2*MaxSessionIDLen)
		}
		return
	}
	res.SessionID = id
}
