package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func owner(name string) Lease { return Lease{Owner: name, Host: "host-" + name, PID: 100} }

// seedItems makes run r with map step fix and its items, keyed k1…kN.
func seedItems(t *testing.T, s *Store, n int) {
	t.Helper()
	seedRun(t, s, "r", t0, "plan", "fix")
	items := make([]Step, n)
	for i := range items {
		items[i] = sampleItem("r", "fix", fmt.Sprintf("k%d", i+1), i+1)
	}
	update(t, s, func(tx *Tx) error { return tx.InsertItems(items) })
}

// A lease is held until it expires or is released; a new holder gets the
// next epoch, and only the holder of the current epoch may renew,
// release or commit under it.
func TestLeaseLifecycle(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		run := func(o Lease) Lease { o.RunID = "r"; return o }

		var a Lease
		update(t, s, func(tx *Tx) (err error) {
			a, _, err = tx.AcquireLease(run(owner("a")), time.Hour, nil)
			return err
		})
		if a.Epoch != 1 {
			t.Fatalf("first lease has epoch %d, want 1", a.Epoch)
		}

		// A live holder keeps it: the message names its pid and host.
		err := s.Update(context.Background(), func(tx *Tx) error {
			_, _, err := tx.AcquireLease(run(owner("b")), time.Hour, nil)
			return err
		})
		var held *LeaseHeldError
		if !errors.As(err, &held) || held.Holder.Owner != "a" {
			t.Fatalf("second holder while a holds it: %v, want *LeaseHeldError naming a", err)
		}
		if want := "run r is held by another cadence process (pid 100 on host host-a)"; !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}

		// Unless the caller knows that holder is dead.
		var b, prev Lease
		update(t, s, func(tx *Tx) (err error) {
			b, prev, err = tx.AcquireLease(run(owner("b")), time.Hour, func(h Lease) bool { return h.Owner == "a" })
			return err
		})
		if b.Epoch != 2 || prev.Owner != "a" || prev.Epoch != 1 {
			t.Fatalf("takeover: got epoch %d, previous %s@%d; want 2, a@1", b.Epoch, prev.Owner, prev.Epoch)
		}

		// a's lease is lost: it can neither renew, release nor commit.
		ctx := WithLease(context.Background(), a)
		err = s.Update(ctx, func(tx *Tx) error { return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "fenced"}) })
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("commit under a lost lease: %v, want ErrLeaseLost", err)
		}
		for name, op := range map[string]func(tx *Tx) error{
			"renew":   func(tx *Tx) error { _, err := tx.RenewLease(a, time.Hour); return err },
			"release": func(tx *Tx) error { return tx.ReleaseLease(a) },
		} {
			if err := s.Update(context.Background(), op); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("%s a lost lease: %v, want ErrLeaseLost", name, err)
			}
		}
		view(t, s, func(tx *Tx) error {
			events, err := tx.Events("r")
			if err != nil {
				return err
			}
			if len(events) != 0 {
				t.Errorf("the fenced commit wrote %d events", len(events))
			}
			return nil
		})

		// b commits under its lease, then releases it; c takes it at once.
		update(t, s, func(tx *Tx) error {
			_, err := tx.RenewLease(b, time.Hour)
			return err
		})
		if err := s.Update(WithLease(context.Background(), b), func(tx *Tx) error {
			return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "held"})
		}); err != nil {
			t.Fatalf("commit under a held lease: %v", err)
		}
		update(t, s, func(tx *Tx) error { return tx.ReleaseLease(b) })
		var c Lease
		update(t, s, func(tx *Tx) (err error) {
			c, _, err = tx.AcquireLease(run(owner("c")), time.Hour, nil)
			return err
		})
		if c.Epoch != 3 {
			t.Errorf("after release the next holder has epoch %d, want 3", c.Epoch)
		}
	})
}

// An expired lease is taken by the next process without any knowledge of
// its holder, and its holder commits nothing more. On PostgreSQL it
// commits nothing from the moment it expired; on SQLite, whose writers
// are serialised, an expired lease nobody took yet is still its holder's
// (a machine that slept does not stop a run), until the next process
// takes it.
func TestExpiredLeaseIsFencedAndTaken(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		var a Lease
		update(t, s, func(tx *Tx) (err error) {
			a, _, err = tx.AcquireLease(Lease{RunID: "r", Owner: "a"}, time.Millisecond, nil)
			return err
		})
		// Wait, by the database's clock, until the lease has expired.
		for {
			var now time.Time
			view(t, s, func(tx *Tx) (err error) { now, err = tx.Now(); return err })
			if now.After(a.ExpiresAt) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		late := func() error {
			return s.Update(WithLease(context.Background(), a), func(tx *Tx) error {
				return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "late"})
			})
		}
		err := late()
		switch {
		case e.name == "postgres" && !errors.Is(err, ErrLeaseLost):
			t.Fatalf("commit under an expired lease: %v, want ErrLeaseLost", err)
		case e.name != "postgres" && err != nil:
			t.Fatalf("commit under an expired lease nobody took: %v, want it to commit", err)
		}
		update(t, s, func(tx *Tx) error {
			_, _, err := tx.AcquireLease(Lease{RunID: "r", Owner: "b"}, time.Hour, nil)
			return err
		})
		if err := late(); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("commit under a lease another process took: %v, want ErrLeaseLost", err)
		}
	})
}

// ClaimItem takes items in order, skipping those that are finished,
// waiting out a backoff or held by a live lease.
func TestClaimItemSkipsUnclaimable(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedItems(t, s, 5)
		future := time.Now().Add(time.Hour)
		// k1 running, k2 succeeded, k3 waiting an hour: each through the
		// transitions a run makes.
		update(t, s, func(tx *Tx) error {
			for _, ch := range []struct {
				key    string
				status StepStatus
			}{
				{"k1", StepRunning}, {"k2", StepRunning}, {"k2", StepSucceeded}, {"k3", StepRunning}, {"k3", StepWaiting},
			} {
				st, err := tx.Unit(Unit{RunID: "r", StepID: "fix", Item: ch.key})
				if err != nil {
					return err
				}
				st.status = ch.status
				if ch.status == StepWaiting {
					st.NextRetryAt = &future
				}
				if err := tx.UpdateStep(*st); err != nil {
					return err
				}
			}
			return nil
		})
		// Every item but k2 (succeeded) is open, claimable now or not.
		view(t, s, func(tx *Tx) error {
			n, err := tx.OpenItems("r", "fix")
			if err == nil && n != 4 {
				t.Errorf("%d open items, want 4 (k1, k3, k4, k5)", n)
			}
			return err
		})
		// k1 is running but unleased (its holder is gone): claimable.
		var got []string
		for range 3 {
			err := s.Update(context.Background(), func(tx *Tx) error {
				l, _, err := tx.ClaimItem("r", "fix", owner("w"), time.Hour)
				if err == nil {
					got = append(got, l.ItemKey)
				}
				return err
			})
			if errors.Is(err, ErrNotFound) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if want := []string{"k1", "k4", "k5"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("claimed %v, want %v", got, want)
		}
	})
}

// Claimers at once, each with a store of its own as separate processes
// have, never take the same item, and between them take every item.
func TestConcurrentClaimsTakeEachItemOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		target := e.target(t)
		first := openStore(t, target)
		const items, claimers = 40, 4
		seedItems(t, first, items)

		var mu sync.Mutex
		taken := map[string][]int{}
		var wg sync.WaitGroup
		errs := make(chan error, claimers)
		for c := range claimers {
			store := first
			if e.name == "postgres" {
				store = openStore(t, target)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					l, _, err := store.ClaimItem(context.Background(), "r", "fix", owner(fmt.Sprint(c)), time.Hour)
					if errors.Is(err, ErrNotFound) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					taken[l.ItemKey] = append(taken[l.ItemKey], c)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(taken) != items {
			t.Errorf("%d items claimed, want %d", len(taken), items)
		}
		for key, by := range taken {
			if len(by) != 1 {
				t.Errorf("item %s claimed by %v", key, by)
			}
		}
	})
}

// A lease whose holder is known dead is broken: the item is claimable at
// once, under the next epoch. A lease that changed hands since it was
// read is left alone.
func TestBreakLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedItems(t, s, 2)
		var a, b Lease
		update(t, s, func(tx *Tx) (err error) {
			if a, _, err = tx.ClaimItem("r", "fix", owner("a"), time.Hour); err != nil {
				return err
			}
			b, _, err = tx.ClaimItem("r", "fix", owner("b"), time.Hour)
			return err
		})
		var held []Lease
		view(t, s, func(tx *Tx) (err error) { held, err = tx.HeldLeases("r"); return err })
		if len(held) != 2 || held[0].Owner != "a" || held[1].Owner != "b" {
			t.Fatalf("held leases %+v, want a's and b's", held)
		}
		stale := b
		stale.Epoch-- // as read before b took it
		update(t, s, func(tx *Tx) error {
			if err := tx.BreakLease(a); err != nil {
				return err
			}
			return tx.BreakLease(stale)
		})
		var c Lease
		update(t, s, func(tx *Tx) (err error) {
			c, _, err = tx.ClaimItem("r", "fix", owner("c"), time.Hour)
			return err
		})
		if c.ItemKey != a.ItemKey || c.Epoch != a.Epoch+1 {
			t.Errorf("after breaking a's lease, c claimed %s at epoch %d; want %s at %d", c.ItemKey, c.Epoch, a.ItemKey, a.Epoch+1)
		}
		if err := s.Update(WithLease(context.Background(), b), func(tx *Tx) error { return nil }); err != nil {
			t.Errorf("b's lease was broken by a stale read: %v", err)
		}
	})
}

// A claim that stops at max_failures counts the step's dead items in its
// own transaction: it claims while they are at most maxDead, and refuses
// with the count once they are more, claiming nothing; a negative maxDead
// claims whatever the count. Dead items of another step do not count.
func TestClaimItemUnlessDead(t *testing.T) {
	cases := []struct {
		name       string
		dead       int // items of fix failed and dead-lettered, k1…
		otherDead  bool
		maxDead    int
		wantRefuse bool
	}{
		{name: "none dead", dead: 0, maxDead: 0},
		{name: "at the limit", dead: 1, maxDead: 1},
		{name: "over the limit", dead: 2, maxDead: 1, wantRefuse: true},
		{name: "over a limit of none", dead: 1, maxDead: 0, wantRefuse: true},
		{name: "another step's dead", dead: 0, otherDead: true, maxDead: 0},
		{name: "no limit", dead: 2, maxDead: -1},
	}
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s := e.newStore(t)
				seedItems(t, s, 4)
				update(t, s, func(tx *Tx) error {
					other := sampleItem("r", "plan", "x", 1)
					other.Idx = 0
					return tx.InsertItems([]Step{other})
				})
				kill := func(tx *Tx, step, key string) error {
					it, err := tx.Unit(Unit{RunID: "r", StepID: step, Item: key})
					if err != nil {
						return err
					}
					it.status = StepFailed
					if err := tx.UpdateStep(*it); err != nil {
						return err
					}
					return tx.AddDeadLetter(DeadLetter{RunID: "r", StepID: step, ItemKey: key, Class: "failed",
						Signature: "failed", Attempts: 1, FirstAt: t0, LastAt: t0, DeadAt: t0})
				}
				update(t, s, func(tx *Tx) error {
					for i := range tc.dead {
						if err := kill(tx, "fix", fmt.Sprintf("k%d", i+1)); err != nil {
							return err
						}
					}
					if tc.otherDead {
						return kill(tx, "plan", "x")
					}
					return nil
				})
				l, _, err := s.ClaimItemUnlessDead(context.Background(), "r", "fix", owner("w"), time.Hour, tc.maxDead)
				var tooMany *TooManyDeadError
				if tc.wantRefuse {
					if !errors.As(err, &tooMany) || tooMany.Dead != tc.dead {
						t.Fatalf("claim with %d dead and max %d: %v, want a TooManyDeadError of %d", tc.dead, tc.maxDead, err, tc.dead)
					}
					view(t, s, func(tx *Tx) error {
						held, err := tx.HeldLeases("r")
						if err == nil && len(held) != 0 {
							t.Errorf("a refused claim left leases %v", held)
						}
						return err
					})
					return
				}
				if err != nil {
					t.Fatalf("claim with %d dead and max %d: %v", tc.dead, tc.maxDead, err)
				}
				if want := fmt.Sprintf("k%d", tc.dead+1); l.ItemKey != want || l.Owner != "w" {
					t.Errorf("claimed %s for %q, want %s for w", l.ItemKey, l.Owner, want)
				}
			})
		}
	})
}
