package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// InsertAttempt checks the next number against what its transaction read
// of the unit's attempts, or against the table when it read nothing: the
// next number is taken, any other is ErrAttemptNumber, on both engines.
func TestInsertAttemptNumberAfterARead(t *testing.T) {
	cases := []struct {
		name     string
		existing int    // attempts 1…existing before the transaction
		read     string // in the transaction, before the inserts: "" nothing, "all" UnitAttempts, "last" UnitLastAttempt
		inserts  []int  // numbers inserted in order
		wantErr  bool   // the last insert is refused with ErrAttemptNumber
	}{
		{name: "next after a read of all", existing: 1, read: "all", inserts: []int{2}},
		{name: "two in a row after a read of all", existing: 1, read: "all", inserts: []int{2, 3}},
		{name: "the last again after a read of all", existing: 1, read: "all", inserts: []int{1}, wantErr: true},
		{name: "a gap after a read of all", existing: 1, read: "all", inserts: []int{3}, wantErr: true},
		{name: "the same twice after a read of all", existing: 1, read: "all", inserts: []int{2, 2}, wantErr: true},
		{name: "first after a read of none", read: "all", inserts: []int{1}},
		{name: "next after a read of the last", existing: 2, read: "last", inserts: []int{3, 4}},
		{name: "a gap after a read of the last", existing: 2, read: "last", inserts: []int{4}, wantErr: true},
		{name: "the same twice after a read of the last", existing: 2, read: "last", inserts: []int{3, 3}, wantErr: true},
		{name: "first after no last", read: "last", inserts: []int{1}},
		{name: "a gap after no last", read: "last", inserts: []int{2}, wantErr: true},
		{name: "next without a read", existing: 1, inserts: []int{2}},
		{name: "a gap without a read", existing: 1, inserts: []int{3}, wantErr: true},
	}
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := e.newStore(t)
				seedRun(t, s, "r", t0, "s")
				var want []int
				for n := 1; n <= tc.existing; n++ {
					update(t, s, func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", "s", n)) })
					want = append(want, n)
				}
				u := Unit{RunID: "r", StepID: "s"}
				err := s.Update(context.Background(), func(tx *Tx) error {
					switch tc.read {
					case "all":
						if _, err := tx.UnitAttempts(u); err != nil {
							return err
						}
					case "last":
						if _, err := tx.UnitLastAttempt(u); err != nil && !errors.Is(err, ErrNotFound) {
							return err
						}
					}
					for _, n := range tc.inserts {
						if err := tx.InsertAttempt(sampleAttempt("r", "s", n)); err != nil {
							return err
						}
					}
					return nil
				})
				if got := errors.Is(err, ErrAttemptNumber); got != tc.wantErr || (err != nil && !tc.wantErr) {
					t.Fatalf("inserts %v: %v, want ErrAttemptNumber %v", tc.inserts, err, tc.wantErr)
				}
				if !tc.wantErr {
					want = append(want, tc.inserts...)
				}
				if got := attemptNumbers(t, s); !slices.Equal(got, want) {
					t.Errorf("attempts %v after the commit, want %v", got, want)
				}
			})
		}
	})
}

// On PostgreSQL an attempt another process inserted after the
// transaction read the unit's attempts makes the transaction's insert
// fail at SERIALIZABLE and run again from its read: the numbers stay
// dense and none is taken twice.
func TestInsertAttemptAfterAConcurrentInsert(t *testing.T) {
	target := postgresEngine.target(t)
	s := openStore(t, target)
	other := openStore(t, target)
	seedRun(t, s, "r", t0, "s")
	u := Unit{RunID: "r", StepID: "s"}
	update(t, s, func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", "s", 1)) })
	interleaved := false
	err := s.Update(context.Background(), func(tx *Tx) error {
		got, err := tx.UnitAttempts(u)
		if err != nil {
			return err
		}
		if !interleaved {
			interleaved = true
			if err := other.Update(context.Background(), func(otx *Tx) error {
				return otx.InsertAttempt(sampleAttempt("r", "s", len(got)+1))
			}); err != nil {
				return fmt.Errorf("the other process's insert: %w", err)
			}
		}
		return tx.InsertAttempt(sampleAttempt("r", "s", len(got)+1))
	})
	if err != nil {
		t.Fatalf("insert after a concurrent one: %v, want it run again and committed", err)
	}
	if got := attemptNumbers(t, s); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("attempts %v, want [1 2 3]", got)
	}
}

// attemptNumbers returns the numbers of the attempts of step r/s.
func attemptNumbers(t *testing.T, s *Store) []int {
	t.Helper()
	var ns []int
	view(t, s, func(tx *Tx) error {
		as, err := tx.UnitAttempts(Unit{RunID: "r", StepID: "s"})
		for _, a := range as {
			ns = append(ns, a.N)
		}
		return err
	})
	return ns
}
