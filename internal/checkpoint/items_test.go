package checkpoint

import (
	"errors"
	"strings"
	"testing"
)

func sampleItem(runID, stepID, key string, idx int) Step {
	s := sampleStep(runID, stepID, 1)
	s.ItemKey, s.ItemIdx, s.ItemJSON = key, idx, []byte(`{"id":"`+key+`"}`)
	return s
}

// Items of a map step have the state of a step of their own: their own
// attempt numbering, counts and last attempt, apart from the step's and
// from each other's; the step's list of steps does not show them.
func TestItemsAreUnitsOfTheirOwn(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan", "fix")
		update(t, s, func(tx *Tx) error {
			return tx.InsertItems([]Step{sampleItem("r", "fix", "b", 1), sampleItem("r", "fix", "a", 2)})
		})
		a := Unit{RunID: "r", StepID: "fix", Item: "a"}
		b := Unit{RunID: "r", StepID: "fix", Item: "b"}
		update(t, s, func(tx *Tx) error {
			for _, u := range []Unit{a, a, b} {
				last, err := tx.UnitLastAttempt(u)
				n := 1
				if err == nil {
					n = last.N + 1
				} else if !errors.Is(err, ErrNotFound) {
					return err
				}
				at := sampleAttempt("r", "fix", n)
				at.ItemKey = u.Item
				if err := tx.InsertAttempt(at); err != nil {
					return err
				}
			}
			// Numbers are dense per item: a gap is refused.
			gap := sampleAttempt("r", "fix", 5)
			gap.ItemKey = "b"
			if err := tx.InsertAttempt(gap); !errors.Is(err, ErrAttemptNumber) {
				t.Errorf("attempt 5 of item b after 1: %v, want ErrAttemptNumber", err)
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			steps, err := tx.Steps("r")
			if err != nil {
				return err
			}
			if len(steps) != 2 {
				t.Errorf("Steps lists %d rows, want the 2 steps without items", len(steps))
			}
			items, err := tx.Items("r", "fix")
			if err != nil {
				return err
			}
			if len(items) != 2 || items[0].ItemKey != "b" || items[1].ItemKey != "a" || string(items[1].ItemJSON) != `{"id":"a"}` {
				t.Errorf("items in frozen order: %+v", items)
			}
			for u, want := range map[Unit]int{a: 2, b: 1, {RunID: "r", StepID: "fix"}: 0} {
				n, err := tx.UnitCountCounted(u)
				if err != nil {
					return err
				}
				if n != want {
					t.Errorf("%s counts %d attempts, want %d", u, n, want)
				}
			}
			running, err := tx.RunningAttempts("r")
			if err != nil {
				return err
			}
			if len(running) != 3 {
				t.Errorf("%d running attempts, want 3", len(running))
			}
			all, err := tx.AllAttempts("r")
			if err != nil {
				return err
			}
			var order []string
			for _, x := range all {
				order = append(order, x.ItemKey+"/"+string(rune('0'+x.N)))
			}
			if got, want := strings.Join(order, " "), "b/1 a/1 a/2"; got != want {
				t.Errorf("history order %q, want %q (items in frozen order, attempts by number)", got, want)
			}
			return nil
		})
	})
}

// Only a failed item enters the dead-letter queue, once; retrying takes it
// out again.
func TestDeadLetters(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "fix")
		update(t, s, func(tx *Tx) error { return tx.InsertItems([]Step{sampleItem("r", "fix", "a", 1)}) })
		d := DeadLetter{RunID: "r", StepID: "fix", ItemKey: "a", Class: "schema", Error: "bad", Signature: "schema: bad",
			Attempts: 3, FirstAt: t0, LastAt: t0, DeadAt: t0}
		update(t, s, func(tx *Tx) error {
			if err := tx.AddDeadLetter(d); !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("dead-lettering a pending item: %v, want ErrInvalidTransition", err)
			}
			it, err := tx.Unit(Unit{RunID: "r", StepID: "fix", Item: "a"})
			if err != nil {
				return err
			}
			it.status = StepFailed
			if err := tx.UpdateStep(*it); err != nil {
				return err
			}
			return tx.AddDeadLetter(d)
		})
		// A transaction of its own: on PostgreSQL the refused insert
		// aborts the transaction it runs in.
		if err := s.Update(t.Context(), func(tx *Tx) error { return tx.AddDeadLetter(d) }); err == nil {
			t.Error("the same item dead-lettered twice")
		}
		view(t, s, func(tx *Tx) error {
			list, err := tx.DeadLetters("r")
			if err != nil {
				return err
			}
			if len(list) != 1 || list[0].Signature != "schema: bad" || list[0].Attempts != 3 || !list[0].FirstAt.Equal(t0) {
				t.Errorf("queue: %+v", list)
			}
			return nil
		})
		update(t, s, func(tx *Tx) error {
			u := Unit{RunID: "r", StepID: "fix", Item: "a"}
			if err := tx.RemoveDeadLetter(u); err != nil {
				return err
			}
			if err := tx.RemoveDeadLetter(u); !errors.Is(err, ErrNotFound) {
				t.Errorf("removing twice: %v, want ErrNotFound", err)
			}
			return nil
		})
	})
}

// RunningItems names the items of one map step that have an attempt
// recorded running, each once however many it has, and nothing else: not
// an item whose attempts ended, not the step's own attempts, not another
// step's items.
func TestRunningItems(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedItems(t, s, 4)
		update(t, s, func(tx *Tx) error {
			// An item of another step with the same key.
			other := sampleItem("r", "plan", "k1", 1)
			other.Idx = 0
			if err := tx.InsertItems([]Step{other}); err != nil {
				return err
			}
			for _, a := range []struct {
				step, key string
				n         int
				end       func(*Tx, *Attempt) error // nil: left running
			}{
				{"fix", "k1", 1, (*Tx).AttemptFailed},
				{"fix", "k1", 2, nil},
				{"fix", "k1", 3, nil},
				{"fix", "k2", 1, func(tx *Tx, a *Attempt) error { return tx.AttemptSucceeded(a, false) }},
				{"fix", "k4", 1, nil},
				{"fix", "", 1, nil},
				{"plan", "k1", 1, nil},
			} {
				at := sampleAttempt("r", a.step, a.n)
				at.ItemKey = a.key
				if err := tx.InsertAttempt(at); err != nil {
					return err
				}
				if a.end != nil {
					if err := a.end(tx, &at); err != nil {
						return err
					}
				}
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			for _, c := range []struct {
				run, step string
				want      []string
			}{
				{"r", "fix", []string{"k1", "k4"}},
				{"r", "plan", []string{"k1"}},
				{"r", "none", nil},
				{"other", "fix", nil},
			} {
				got, err := tx.RunningItems(c.run, c.step)
				if err != nil {
					return err
				}
				if strings.Join(got, ",") != strings.Join(c.want, ",") {
					t.Errorf("RunningItems(%q, %q) = %q, want %q", c.run, c.step, got, c.want)
				}
			}
			return nil
		})
	})
}
