package attempt

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Failpoints are the named places of the run loop where CADENCE_FAILPOINT
// makes cadence kill itself with SIGKILL, so that tests can prove the
// durability guarantees at every commit boundary. The value is NAME, or
// NAME:K to fire on the K-th time the point is reached in this process.
const (
	// FailAfterAttemptCommit fires after an attempt's row is committed and
	// before its agent process starts.
	FailAfterAttemptCommit = "after-attempt-commit"
	// FailAfterAgentStart fires after the agent started and its pid was
	// committed, while it runs.
	FailAfterAgentStart = "after-agent-start"
	// FailAfterHandoffWritten fires after the accepted handoff's envelope (or a
	// failed attempt's failed-handoff record) is written to disk, before the
	// outcome is committed.
	FailAfterHandoffWritten = "after-handoff-written"
	// FailBeforeOutcomeCommit fires just before the attempt's outcome
	// transaction.
	FailBeforeOutcomeCommit = "before-outcome-commit"
	// FailAfterOutcomeCommit fires right after the outcome transaction.
	FailAfterOutcomeCommit = "after-outcome-commit"
	// FailDuringBackoff fires once a backoff deadline is committed and the
	// wait for it has begun.
	FailDuringBackoff = "during-backoff"
	// FailBeforeCheck fires after a check's row is committed and before
	// its process starts.
	FailBeforeCheck = "before-check"
	// FailDuringCheck fires after a check's process started and its pid
	// was committed, while it runs.
	FailDuringCheck = "during-check"
	// FailAfterCheckCommit fires right after a check's result is
	// committed.
	FailAfterCheckCommit = "after-check-commit"
	// FailAfterDecision fires right after a step's decision (its when
	// evaluated, or a skip) is committed, before anything depends on it.
	FailAfterDecision = "after-decision"
	// FailAfterFallback fires right after a step's move to a fallback
	// agent entry is committed, before its attempt there begins.
	FailAfterFallback = "after-fallback"
	// FailAfterIterationStart fires right after a loop's iteration and
	// its inner steps' rows are committed, before any of them runs.
	FailAfterIterationStart = "after-iteration-start"
	// FailAfterUntil fires right after an iteration's end (its until
	// decided, and what it means for the loop) is committed.
	FailAfterUntil = "after-until"
	// FailAfterGateWaiting fires right after an approval gate is
	// committed waiting, before its prompt is shown.
	FailAfterGateWaiting = "after-gate-waiting"
	// FailAfterGateDecided fires right after a gate's answer is
	// committed as its output.
	FailAfterGateDecided = "after-gate-decided"
	// FailAfterRestore fires right after restore_on_retry put the work
	// tree back, before the next attempt's row is committed.
	FailAfterRestore = "after-restore"
)

// Failpoints lists every failpoint name, in run-loop order.
var Failpoints = []string{
	FailAfterRestore, FailAfterAttemptCommit, FailAfterAgentStart,
	FailBeforeCheck, FailDuringCheck, FailAfterCheckCommit,
	FailAfterHandoffWritten, FailBeforeOutcomeCommit, FailAfterOutcomeCommit, FailDuringBackoff,
	FailAfterDecision, FailAfterFallback, FailAfterIterationStart, FailAfterUntil, FailAfterGateWaiting, FailAfterGateDecided,
}

// Failpoint is the parsed CADENCE_FAILPOINT setting of one process.
type Failpoint struct {
	name string
	nth  int
	mu   sync.Mutex // the items of a map step reach failpoints at once
	hits int
}

// ParseFailpoint parses a CADENCE_FAILPOINT value; "" is nil, no failpoint.
func ParseFailpoint(s string) *Failpoint {
	if s == "" {
		return nil
	}
	name, k, found := strings.Cut(s, ":")
	fp := &Failpoint{name: name, nth: 1}
	if found {
		if n, err := strconv.Atoi(k); err == nil && n > 0 {
			fp.nth = n
		}
	}
	return fp
}

// Hit kills the process with SIGKILL when name is the configured failpoint
// and this is the configured occurrence. SIGKILL, not exit: nothing deferred
// runs, exactly as in a crash.
func (f *Failpoint) Hit(name string) {
	if f == nil || f.name != name {
		return
	}
	f.mu.Lock()
	f.hits++
	fire := f.hits == f.nth
	f.mu.Unlock()
	if fire {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered asynchronously; never continue
	}
}
