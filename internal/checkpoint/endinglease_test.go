package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The transaction that ends a step run under WithEndingLease releases the
// step's lease with the step's end, in one commit, as the one an item
// succeeds in does; any other transaction, an item's failure, a plain
// WithLease and a lease already lost leave the lease as it was, and a lost
// lease commits nothing.
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
		{name: "item succeeded", item: true, ending: true, end: succeed, wantOwner: "", wantStatus: StepSucceeded},
		{name: "failed item keeps it", item: true, ending: true, end: fail, wantOwner: "a", wantStatus: StepFailed},
		{name: "interrupted item keeps it", item: true, ending: true, end: interrupt, wantOwner: "a", wantStatus: StepPending},
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

// The release that ends a step does not read the lease again: the check
// its transaction made first holds to the commit. On PostgreSQL that is
// SERIALIZABLE's doing, so it is tested there: another process takes the
// lease after the transaction's check and before its release, and the
// transaction commits nothing (its write of the lease's row meets the
// taker's and it is run again, whose check finds the lease lost); the taker keeps the lease and the step stays
// running. On SQLite no other writer can commit while the transaction
// holds the write lock (BEGIN IMMEDIATE), which TestStorageBusy* cover.
func TestEndingLeaseTakenAfterTheCheckCommitsNothing(t *testing.T) {
	target := postgresEngine.target(t)
	s := openStore(t, target)
	other := openStore(t, target)
	seedRun(t, s, "r", t0, "plan")
	u := Unit{RunID: "r", StepID: "plan"}
	l := owner("a")
	l.RunID, l.StepID = u.RunID, u.StepID
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
	taken := false
	err := s.Update(WithEndingLease(context.Background(), a), func(tx *Tx) error {
		st, err := tx.Unit(u)
		if err != nil {
			return err
		}
		if !taken {
			taken = true
			b := owner("b")
			b.RunID, b.StepID = u.RunID, u.StepID
			if err := other.Update(context.Background(), func(otx *Tx) error {
				_, _, err := otx.AcquireLease(b, time.Hour, func(Lease) bool { return true })
				return err
			}); err != nil {
				return fmt.Errorf("the other process's claim: %w", err)
			}
		}
		return succeed(tx, st)
	})
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("commit after the lease was taken: %v, want ErrLeaseLost", err)
	}
	view(t, s, func(tx *Tx) error {
		cur, err := tx.LeaseOf(u.RunID, u.StepID, "")
		if err != nil {
			return err
		}
		if cur.Owner != "b" {
			t.Errorf("lease owner %q, want b (the taker)", cur.Owner)
		}
		st, err := tx.Unit(u)
		if err != nil {
			return err
		}
		if st.Status() != StepRunning {
			t.Errorf("step %s, want running: the lost holder's end must not commit", st.Status())
		}
		return nil
	})
}
