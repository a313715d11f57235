package checkpoint

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestSessionMessagesAppendInOrderAcrossCalls(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
		seedRun(t, s, "r1", at, "plan")
		first := []Message{
			{SessionID: "s1", RunID: "r1", StepID: "plan", Attempt: 1, Role: "user", Content: "task", CreatedAt: at},
			{SessionID: "s1", RunID: "r1", StepID: "plan", Attempt: 1, Role: "assistant", Content: `{"a": 1}`, CreatedAt: at},
		}
		second := []Message{
			{SessionID: "s1", RunID: "r1", StepID: "plan", Attempt: 2, Role: "user", Content: "fix /a", CreatedAt: at.Add(time.Second)},
		}
		other := []Message{{SessionID: "s2", RunID: "r1", StepID: "plan", Attempt: 3, Role: "user", Content: "fresh", CreatedAt: at}}
		update(t, s, func(tx *Tx) error { return tx.AppendMessages(first) })
		update(t, s, func(tx *Tx) error { return tx.AppendMessages(second) })
		update(t, s, func(tx *Tx) error { return tx.AppendMessages(other) })

		var got []Message
		view(t, s, func(tx *Tx) error {
			var err error
			got, err = tx.Messages("s1")
			return err
		})
		want := append(append([]Message{}, first...), second...)
		for i := range want {
			want[i].Seq = i + 1
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("history of s1:\n got %+v\nwant %+v", got, want)
		}
		view(t, s, func(tx *Tx) error {
			l, err := tx.Messages("s2")
			if err == nil && (len(l) != 1 || l[0].Seq != 1 || l[0].Content != "fresh") {
				t.Errorf("history of s2: %+v", l)
			}
			return err
		})
	})
}

func TestSessionMessagesRefuseMixedSessionsAndReadOnlyWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		at := time.Now().UTC()
		seedRun(t, s, "r1", at, "plan")
		err := s.Update(t.Context(), func(tx *Tx) error {
			return tx.AppendMessages([]Message{
				{SessionID: "a", RunID: "r1", StepID: "plan", Role: "user", CreatedAt: at},
				{SessionID: "b", RunID: "r1", StepID: "plan", Role: "user", CreatedAt: at},
			})
		})
		if err == nil {
			t.Fatal("messages of two sessions in one call were accepted")
		}
		err = s.View(t.Context(), func(tx *Tx) error {
			return tx.AppendMessages([]Message{{SessionID: "a", RunID: "r1", StepID: "plan", Role: "user", CreatedAt: at}})
		})
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("write inside View: %v, want ErrReadOnly", err)
		}
		err = s.Update(t.Context(), func(tx *Tx) error {
			return tx.AppendMessages([]Message{{SessionID: "a", RunID: "r1", StepID: "plan", Role: "tool", CreatedAt: at}})
		})
		if err == nil {
			t.Fatal("a message with role tool was accepted")
		}
	})
}

func TestCountCountedLeavesOutHelpRoundsAndUncountedAttempts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		at := time.Now().UTC()
		seedRun(t, s, "r1", at, "plan")
		rows := []Attempt{
			{Kind: KindInitial},                   // counts
			{Kind: KindHelp},                      // a help round: does not count
			{Kind: KindFollowup, Uncounted: true}, // a usage-limit refusal: does not count
			{Kind: KindFollowup},                  // counts
		}
		update(t, s, func(tx *Tx) error {
			for i, a := range rows {
				a.RunID, a.StepID, a.N, a.status, a.StartedAt = "r1", "plan", i+1, AttemptRunning, at
				if err := tx.InsertAttempt(a); err != nil {
					return err
				}
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			n, err := tx.CountCounted("r1", "plan")
			if err == nil && n != 2 {
				t.Errorf("CountCounted = %d, want 2", n)
			}
			return err
		})
	})
}
