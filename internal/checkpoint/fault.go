package checkpoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInjectedFault is the error of a storage fault injected on purpose
// (CADENCE_STOREFAULT), the way durable engines test what they do when
// their storage fails.
var ErrInjectedFault = errors.New("injected storage fault")

// Fault describes one injected failure of a write transaction. Tx counts
// the store's write transactions from 1. Before commit, the transaction is
// rolled back and Update returns an error: nothing was written. After
// commit, the transaction is committed and Update still returns an error,
// so the caller cannot tell whether it landed (an ambiguous commit).
//
// UnsyncedStarts is another kind of fault: a deliberately broken build.
// The commits that must be on disk before a process starts (an attempt's
// row and its agent's pid, UpdateBeforeStart) are made without an fsync,
// as a cadence that got G1 wrong would make them. A kill cannot tell; a
// power cut can, and the power-cut schedule must fail on it.
type Fault struct {
	Tx             int
	AfterCommit    bool
	UnsyncedStarts bool
}

// faultUnsyncedStarts is the text form of Fault.UnsyncedStarts.
const faultUnsyncedStarts = "unsynced-starts"

// ParseFault reads a fault from its text form, "before-commit:K",
// "after-commit:K" or "unsynced-starts". The empty string is no fault.
func ParseFault(s string) (Fault, error) {
	if s == "" {
		return Fault{}, nil
	}
	if s == faultUnsyncedStarts {
		return Fault{UnsyncedStarts: true}, nil
	}
	when, k, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(k)
	if !ok || err != nil || n < 1 || (when != "before-commit" && when != "after-commit") {
		return Fault{}, fmt.Errorf("storage fault %q: want before-commit:K, after-commit:K with K ≥ 1, or %s", s, faultUnsyncedStarts)
	}
	return Fault{Tx: n, AfterCommit: when == "after-commit"}, nil
}

// InjectFault arms f on the store. It is for tests of the code above the
// store: no production path calls it unless CADENCE_STOREFAULT is set.
func (s *Store) InjectFault(f Fault) {
	s.fault = f
	s.writes.Store(0)
}

// injected returns the fault for the write transaction about to commit, if
// any.
func (s *Store) injected() (Fault, bool) {
	if s.fault.Tx == 0 {
		return Fault{}, false
	}
	return s.fault, s.writes.Add(1) == int64(s.fault.Tx)
}
