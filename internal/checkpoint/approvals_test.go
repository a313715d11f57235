package checkpoint

import (
	"errors"
	"testing"
	"time"
)

// A gate reached is waiting with its prompt; the first decision is
// recorded with who and when; a second one is refused and the first
// stands; a gate never reached cannot be decided, nor one at or after its
// deadline.
func TestApprovalDecidedOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r1", t0, "build", "gate")
		u := Unit{RunID: "r1", StepID: "gate"}
		timeout := t0.Add(72 * time.Hour)
		update(t, s, func(tx *Tx) error {
			st, err := tx.Unit(u)
			if err != nil {
				return err
			}
			return tx.GateWaiting(st, Approval{Unit: u, Prompt: "Merge it?", RequestedAt: t0, TimeoutAt: &timeout}, t0)
		})
		view(t, s, func(tx *Tx) error {
			st, err := tx.Unit(u)
			if err != nil {
				return err
			}
			if st.Status() != StepWaiting {
				t.Errorf("gate status %q, want %q", st.Status(), StepWaiting)
			}
			a, err := tx.Approval(u)
			if err != nil {
				return err
			}
			if a.Decided() || a.Prompt != "Merge it?" || !a.TimeoutAt.Equal(timeout) {
				t.Errorf("approval after the request = %+v", a)
			}
			return nil
		})
		for _, late := range []time.Time{timeout, timeout.Add(time.Second)} {
			err := s.Update(t.Context(), func(tx *Tx) error {
				return tx.DecideApproval(Approval{Unit: u, Decision: Approved, By: "late", DecidedAt: &late})
			})
			if !errors.Is(err, ErrPastDeadline) {
				t.Fatalf("a decision at %s, the deadline being %s: err = %v, want ErrPastDeadline", late, timeout, err)
			}
		}
		at := t0.Add(time.Hour)
		first := Approval{Unit: u, Decision: Approved, Comment: "ship it", By: "ana@laptop", DecidedAt: &at}
		update(t, s, func(tx *Tx) error { return tx.DecideApproval(first) })
		later := at.Add(time.Minute)
		err := s.Update(t.Context(), func(tx *Tx) error {
			return tx.DecideApproval(Approval{Unit: u, Decision: Rejected, Comment: "no", By: "bo@desk", DecidedAt: &later})
		})
		if !errors.Is(err, ErrAlreadyDecided) {
			t.Fatalf("second decision: err = %v, want ErrAlreadyDecided", err)
		}
		err = s.Update(t.Context(), func(tx *Tx) error {
			return tx.DecideApproval(Approval{Unit: Unit{RunID: "r1", StepID: "build"}, Decision: Approved, DecidedAt: &later})
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("decision on a step never waiting: err = %v, want ErrNotFound", err)
		}
		view(t, s, func(tx *Tx) error {
			all, err := tx.Approvals("r1")
			if err != nil {
				return err
			}
			if len(all) != 1 {
				t.Fatalf("approvals = %d, want 1", len(all))
			}
			a := all[0]
			if a.Decision != Approved || a.Comment != "ship it" || a.By != "ana@laptop" || !a.DecidedAt.Equal(at) {
				t.Errorf("stored decision = %+v, want the first one", a)
			}
			return nil
		})
	})
}
