package checkpoint

import (
	"errors"
	"testing"
	"time"
)

// TestDeleteRun: deleting a finished run removes its rows from every table
// that holds a run's rows, in one transaction, and nothing of another run;
// an unfinished run is refused.
func TestDeleteRun(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "old", t0, "plan", "build")
		seedRun(t, s, "open", t0.Add(time.Minute), "plan")
		update(t, s, func(tx *Tx) error {
			for _, id := range []string{"old", "open"} {
				if err := tx.InsertAttempt(sampleAttempt(id, "plan", 1)); err != nil {
					return err
				}
				if err := tx.AddEvent(Event{RunID: id, Kind: "run_started", Detail: "started", At: t0}); err != nil {
					return err
				}
			}
			r, err := tx.Run("old")
			if err != nil {
				return err
			}
			return tx.RunEnded(r, RunSucceeded, t0.Add(time.Hour))
		})

		var before []Run
		view(t, s, func(tx *Tx) error {
			var err error
			before, err = tx.FinishedRunsBefore(t0.Add(2 * time.Hour))
			return err
		})
		if len(before) != 1 || before[0].ID != "old" {
			t.Fatalf("finished runs before: %+v, want old only", before)
		}

		err := s.Update(t.Context(), func(tx *Tx) error {
			_, err := tx.DeleteRun("open")
			return err
		})
		if err == nil {
			t.Fatal("an unfinished run was deleted")
		}

		var pruned Pruned
		update(t, s, func(tx *Tx) error {
			var err error
			pruned, err = tx.DeleteRun("old")
			return err
		})
		for table, want := range map[string]int64{"runs": 1, "steps": 2, "attempts": 1, "events": 1} {
			if pruned[table] < want {
				t.Errorf("deleted %d rows from %s, want at least %d", pruned[table], table, want)
			}
		}
		view(t, s, func(tx *Tx) error {
			if _, err := tx.Run("old"); !errors.Is(err, ErrNotFound) {
				t.Errorf("run old after its deletion: %v", err)
			}
			for _, table := range pruneTables {
				var n int
				if err := tx.getRow(&n, `SELECT count(*) FROM `+table+` WHERE run_id = ?`, "old"); err != nil {
					return err
				}
				if n != 0 {
					t.Errorf("%s still holds %d rows of run old", table, n)
				}
			}
			steps, err := tx.Steps("open")
			if err != nil {
				return err
			}
			att, err := tx.AllAttempts("open")
			if err != nil {
				return err
			}
			if len(steps) != 1 || len(att) != 1 {
				t.Errorf("run open after deleting old: %d steps, %d attempts, want 1 and 1", len(steps), len(att))
			}
			return nil
		})
	})
}
