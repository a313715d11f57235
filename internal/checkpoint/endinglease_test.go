package checkpoint

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The transaction that ends a step run under WithEndingLease releases the
// step's lease with the step's end, in one commit; any other transaction,
// an item's end, a plain WithLease and a lease already lost leave the
// lease as it was, and a lost lease commits nothing.
func TestEndingLeaseIsReleasedWithTheStep(t *testing.T) {
	cases := []struct {
		name   string
		item   bool // the lease and the unit are item k1 of map step fix
		ending bool // WithEndingLease rather than WithLease
		lost   bool // another process took the lease first
		end    func(tx *Tx, s *Step) error
		// want: the lease's owner after the commit ("" released), the
		// unit's status, and whether the commit is refused as lost.
		wantOwner  string
		wantStatus StepStatus
		wantLost   bool
	}{
		{name: "succeeded", ending: true, end: succeed, wantOwner: "", wantStatus: StepSucceeded},
		{name: "failed", ending: true, end: fail, wantOwner: "", wantStatus: StepFailed},
		{name: "interrupted keeps it", ending: true, end: interrupt, wantOwner: "a", wantStatus: StepPending},
		{name: "plain lease keeps it", end: succeed, wantOwner: "a", wantStatus: StepSucceeded},
		{name: "item keeps it", item: true, ending: true, end: fail, wantOwner: "a", wantStatus: StepFailed},
		{name: "lost lease commits nothing", ending: true, lost: true, end: succeed, wantOwner: "b", wantStatus: StepRunning, wantLost: true},
	}
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := e.newStore(t)
				seedItems(t, s, 1)
				u := Unit{RunID: "r", StepID: "plan"}
				if tc.item {
					u = Unit{RunID: "r", StepID: "fix", Item: "k1"}
				}
				l := owner("a")
				l.RunID, l.StepID, l.ItemKey = u.RunID, u.StepID, u.Item
				var a Lease
				update(t, s, func(tx *Tx) (err error) {
					st, err := tx.Unit(u)
					if err != nil {
						return err
					}
					st.status = StepRunning
					if err := tx.UpdateStep(*st); err != nil {
						return err
					}
					a, _, err = tx.AcquireLease(l, time.Hour, nil)
					return err
				})
				if tc.lost {
					update(t, s, func(tx *Tx) error {
						b := owner("b")
						b.RunID, b.StepID, b.ItemKey = u.RunID, u.StepID, u.Item
						_, _, err := tx.AcquireLease(b, time.Hour, func(Lease) bool { return true })
						return err
					})
				}
				ctx := WithLease(context.Background(), a)
				if tc.ending {
					ctx = WithEndingLease(context.Background(), a)
				}
				err := s.Update(ctx, func(tx *Tx) error {
					st, err := tx.Unit(u)
					if err != nil {
						return err
					}
					return tc.end(tx, st)
				})
				if got := errors.Is(err, ErrLeaseLost); got != tc.wantLost || (err != nil && !tc.wantLost) {
					t.Fatalf("commit: %v, want lost %v", err, tc.wantLost)
				}
				view(t, s, func(tx *Tx) error {
					cur, err := tx.LeaseOf(u.RunID, u.StepID, u.Item)
					if err != nil {
						return err
					}
					if cur.Owner != tc.wantOwner {
						t.Errorf("lease owner %q after the commit, want %q", cur.Owner, tc.wantOwner)
					}
					st, err := tx.Unit(u)
					if err != nil {
						return err
					}
					if st.Status() != tc.wantStatus {
						t.Errorf("unit %s, want %s", st.Status(), tc.wantStatus)
					}
					return nil
				})
			})
		}
	})
}

func succeed(tx *Tx, s *Step) error {
	return tx.StepSucceeded(s, []byte(`{"status":"success"}`), t0)
}
func fail(tx *Tx, s *Step) error      { return tx.StepFailed(s, t0) }
func interrupt(tx *Tx, s *Step) error { return tx.StepInterrupted(s, t0) }
