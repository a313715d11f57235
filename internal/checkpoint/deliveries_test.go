package checkpoint

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestDeliveriesOutbox: on both engines, events enqueued in a transaction
// are numbered per run, found by subject, due by their next try, and a
// delivery marked delivered is final; a rolled-back transaction leaves no
// row.
func TestDeliveriesOutbox(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r1", t0, "a")
		now := t0.UTC()
		row := func(seq, target int, event, subject string) Delivery {
			return Delivery{RunID: "r1", Seq: seq, TargetIdx: target, Event: event, Subject: subject,
				Target: "webhook https://hooks.example.com/…", TargetJSON: []byte(`{"webhook":"https://hooks.example.com/x"}`),
				BodyJSON: []byte(`{"event":"` + event + `"}`), IdempotencyKey: "r1/" + event, CreatedAt: now,
				Status: DeliveryPending, NextTryAt: now}
		}
		update(t, s, func(tx *Tx) error {
			seq, err := tx.NextDeliverySeq("r1")
			if err != nil || seq != 1 {
				t.Fatalf("NextDeliverySeq = %d, %v; want 1", seq, err)
			}
			if err := tx.AddDelivery(row(1, 0, "long_wait", "usage limit/until")); err != nil {
				return err
			}
			return tx.AddDelivery(row(1, 1, "long_wait", "usage limit/until"))
		})
		// A transaction that fails takes its events with it.
		boom := errors.New("boom")
		if err := s.Update(t.Context(), func(tx *Tx) error {
			if err := tx.AddDelivery(row(2, 0, "run_failed", "")); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("Update = %v, want boom", err)
		}
		view(t, s, func(tx *Tx) error {
			seq, err := tx.NextDeliverySeq("r1")
			if err != nil || seq != 2 {
				t.Fatalf("NextDeliverySeq = %d, %v; want 2", seq, err)
			}
			for subject, want := range map[string]bool{"usage limit/until": true, "circuit/other": false} {
				if got, err := tx.HasDeliverySubject("r1", "long_wait", subject); err != nil || got != want {
					t.Errorf("HasDeliverySubject(%q) = %v, %v; want %v", subject, got, err, want)
				}
			}
			due, err := tx.DueDeliveries(now, 10, nil)
			if err != nil || len(due) != 2 || due[0].TargetIdx != 0 || due[1].TargetIdx != 1 {
				t.Fatalf("DueDeliveries = %+v, %v", due, err)
			}
			if string(due[0].TargetJSON) != `{"webhook":"https://hooks.example.com/x"}` || !due[0].CreatedAt.Equal(now) {
				t.Errorf("row read back as %+v", due[0])
			}
			return nil
		})
		// A try that failed moves the next one later; one that succeeded is
		// final.
		later := now.Add(5 * time.Second)
		update(t, s, func(tx *Tx) error {
			d := row(1, 0, "long_wait", "")
			d.Attempts, d.LastError, d.NextTryAt = 1, "HTTP 500", later
			if err := tx.UpdateDelivery(d); err != nil {
				return err
			}
			d2 := row(1, 1, "long_wait", "")
			d2.Attempts, d2.Status, d2.DeliveredAt = 1, DeliveryDelivered, &now
			return tx.UpdateDelivery(d2)
		})
		view(t, s, func(tx *Tx) error {
			if due, err := tx.DueDeliveries(now, 10, nil); err != nil || len(due) != 0 {
				t.Errorf("due at now after the tries = %+v, %v; want none", due, err)
			}
			if at, err := tx.NextDeliveryAt(); err != nil || at == nil || !at.Equal(later) {
				t.Errorf("NextDeliveryAt = %v, %v; want %v", at, err, later)
			}
			all, err := tx.RunDeliveries("r1")
			if err != nil || len(all) != 2 {
				t.Fatalf("RunDeliveries = %+v, %v", all, err)
			}
			if all[0].Status != DeliveryPending || all[0].Attempts != 1 || all[0].LastError != "HTTP 500" {
				t.Errorf("the failed try reads back as %+v", all[0])
			}
			if all[1].Status != DeliveryDelivered || all[1].DeliveredAt == nil || !all[1].DeliveredAt.Equal(now) {
				t.Errorf("the delivered row reads back as %+v", all[1])
			}
			return nil
		})
		err := s.Update(t.Context(), func(tx *Tx) error {
			d := row(1, 1, "long_wait", "")
			d.Attempts, d.NextTryAt = 2, later
			return tx.UpdateDelivery(d)
		})
		if !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("updating a delivered row: %v, want ErrInvalidTransition", err)
		}
		if err := s.Update(t.Context(), func(tx *Tx) error {
			d := row(3, 0, "run_failed", "")
			d.Attempts = 1
			return tx.AddDelivery(d)
		}); !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("adding a tried delivery: %v, want ErrInvalidTransition", err)
		}
	})
}

// TestDeliveryClaimOfDeadHolder: on both engines, a try under way is
// claimed with its holder; a row claimed by a holder that gone says is
// dead is due at once, before the rows due by time and within the limit,
// while one whose holder lives waits for its next try; recording the
// outcome clears the claim.
func TestDeliveryClaimOfDeadHolder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r1", t0, "a")
		now := t0.UTC()
		later := now.Add(40 * time.Second)
		row := func(seq int) Delivery {
			return Delivery{RunID: "r1", Seq: seq, Event: "run_succeeded", Target: "command ./page.sh",
				TargetJSON: []byte(`{"command":["./page.sh"]}`), BodyJSON: []byte(`{}`), IdempotencyKey: "r1/run_succeeded/" + strconv.Itoa(seq),
				CreatedAt: now, Status: DeliveryPending, NextTryAt: now}
		}
		dead := Lease{Owner: "host/pid:[1]/4242/99/dead", Host: "host", PID: 4242}
		live := Lease{Owner: "host/pid:[1]/4343/99/live", Host: "host", PID: 4343}
		update(t, s, func(tx *Tx) error {
			for seq := 1; seq <= 3; seq++ {
				if err := tx.AddDelivery(row(seq)); err != nil {
					return err
				}
			}
			// Rows 1 and 2 are under way, in a dead and a live process;
			// row 3 is due.
			for seq, h := range map[int]Lease{1: dead, 2: live} {
				d := row(seq)
				d.Attempts, d.NextTryAt, d.Claim = 1, later, h
				if err := tx.UpdateDelivery(d); err != nil {
					return err
				}
			}
			return nil
		})
		var asked []string
		gone := func(h Lease) bool { asked = append(asked, h.Owner); return h.Owner == dead.Owner }
		seqs := func(ds []Delivery) []int {
			var out []int
			for _, d := range ds {
				out = append(out, d.Seq)
			}
			return out
		}
		view(t, s, func(tx *Tx) error {
			due, err := tx.DueDeliveries(now, 10, gone)
			if err != nil {
				return err
			}
			if got := seqs(due); !slices.Equal(got, []int{1, 3}) {
				t.Errorf("due with gone = %v, want [1 3]: the dead holder's row first, the live holder's not", got)
			}
			if c := due[0].Claim; c.Owner != dead.Owner || c.Host != "host" || c.PID != 4242 || due[0].Attempts != 1 {
				t.Errorf("the dead holder's row reads back as %+v", due[0])
			}
			if !slices.Contains(asked, live.Owner) {
				t.Errorf("gone was asked about %v, not about the live holder", asked)
			}
			if due, err := tx.DueDeliveries(now, 1, gone); err != nil || !slices.Equal(seqs(due), []int{1}) {
				t.Errorf("due with limit 1 = %v, %v; want [1]", seqs(due), err)
			}
			if due, err := tx.DueDeliveries(now, 10, nil); err != nil || !slices.Equal(seqs(due), []int{3}) {
				t.Errorf("due without gone = %v, %v; want [3]: claims run out by time alone", seqs(due), err)
			}
			return nil
		})
		// The outcome recorded, the claim is gone with the try.
		update(t, s, func(tx *Tx) error {
			d := row(1)
			d.Attempts, d.Status, d.DeliveredAt = 2, DeliveryDelivered, &now
			return tx.UpdateDelivery(d)
		})
		view(t, s, func(tx *Tx) error {
			due, err := tx.DueDeliveries(later, 10, func(Lease) bool { return true })
			if err != nil {
				return err
			}
			if got := seqs(due); !slices.Equal(got, []int{3, 2}) {
				t.Errorf("due at the claims' end = %v, want [3 2]", got)
			}
			for _, d := range due {
				if d.Seq == 3 && d.Claim != (Lease{}) {
					t.Errorf("an unclaimed row reads back with a claim: %+v", d.Claim)
				}
			}
			return nil
		})
	})
}
