package checkpoint

import (
	"errors"
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
			due, err := tx.DueDeliveries(now, 10)
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
			if due, err := tx.DueDeliveries(now, 10); err != nil || len(due) != 0 {
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
