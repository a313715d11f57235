package checkpoint

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func countRows(t *testing.T, s *Store) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, table := range []string{"runs", "steps", "attempts", "circuits", "events"} {
		var n int
		if err := s.db.Get(&n, "SELECT count(*) FROM "+table); err != nil {
			t.Fatal(err)
		}
		got[table] = n
	}
	return got
}

func TestUpdateErrorRollsBackEverything(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		s := e.newStore(t)
		before := countRows(t, s)
		boom := errors.New("boom")
		writeAll := func(tx *Tx) error {
			if err := tx.CreateRun(sampleRun("r", t0), []Step{sampleStep("r", "plan", 0)}); err != nil {
				return err
			}
			if err := tx.InsertAttempt(sampleAttempt("r", "plan", 1)); err != nil {
				return err
			}
			if err := tx.PutCircuit(fullCircuit()); err != nil {
				return err
			}
			return tx.AddEvent(Event{RunID: "r", At: t0, Kind: "run_started"})
		}

		err := s.Update(ctx, func(tx *Tx) error {
			if err := writeAll(tx); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update returned %v, want fn's error", err)
		}
		if got := countRows(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("rows after a failed Update: %v, want %v", got, before)
		}

		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic did not propagate")
				}
			}()
			_ = s.Update(ctx, func(tx *Tx) error {
				if err := writeAll(tx); err != nil {
					return err
				}
				panic("fn panicked")
			})
		}()
		if got := countRows(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("rows after a panicking Update: %v, want %v", got, before)
		}

		// The store stays usable and the same writes now commit.
		update(t, s, writeAll)
		if got := countRows(t, s); got["runs"] != 1 || got["attempts"] != 1 || got["events"] != 1 {
			t.Fatalf("rows after a good Update: %v", got)
		}
	})
}

func TestViewRefusesWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		writes := map[string]func(tx *Tx) error{
			"CreateRun":     func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), nil) },
			"UpdateRun":     func(tx *Tx) error { return tx.UpdateRun(sampleRun("r", t0)) },
			"UpdateStep":    func(tx *Tx) error { return tx.UpdateStep(sampleStep("r", "plan", 0)) },
			"InsertAttempt": func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", "plan", 1)) },
			"UpdateAttempt": func(tx *Tx) error { return tx.UpdateAttempt(sampleAttempt("r", "plan", 1)) },
			"PutCircuit":    func(tx *Tx) error { return tx.PutCircuit(fullCircuit()) },
			"AddEvent":      func(tx *Tx) error { return tx.AddEvent(Event{At: t0, Kind: "x"}) },
		}
		for name, fn := range writes {
			t.Run(name, func(t *testing.T) {
				if err := s.View(context.Background(), fn); !errors.Is(err, ErrReadOnly) {
					t.Fatalf("%s inside View: %v, want ErrReadOnly", name, err)
				}
			})
		}
	})
}

func TestMissingRowsAreNotFound(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		reads := map[string]func(tx *Tx) error{
			"Run":         func(tx *Tx) error { _, err := tx.Run("nope"); return err },
			"Step":        func(tx *Tx) error { _, err := tx.Step("r", "nope"); return err },
			"Attempt":     func(tx *Tx) error { _, err := tx.Attempt("r", "plan", 1); return err },
			"LastAttempt": func(tx *Tx) error { _, err := tx.LastAttempt("r", "plan"); return err },
			"Circuit":     func(tx *Tx) error { _, err := tx.Circuit("claude"); return err },
		}
		for name, fn := range reads {
			t.Run(name, func(t *testing.T) {
				if err := s.View(context.Background(), fn); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: %v, want ErrNotFound", name, err)
				}
			})
		}
		writes := map[string]func(tx *Tx) error{
			"UpdateRun":     func(tx *Tx) error { return tx.UpdateRun(sampleRun("nope", t0)) },
			"UpdateStep":    func(tx *Tx) error { return tx.UpdateStep(sampleStep("r", "nope", 5)) },
			"UpdateAttempt": func(tx *Tx) error { return tx.UpdateAttempt(sampleAttempt("r", "plan", 1)) },
		}
		for name, fn := range writes {
			t.Run(name, func(t *testing.T) {
				if err := s.Update(context.Background(), fn); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: %v, want ErrNotFound", name, err)
				}
			})
		}

		empty := e.newStore(t)
		view(t, empty, func(tx *Tx) error {
			if _, err := tx.LatestRun(); !errors.Is(err, ErrNotFound) {
				t.Errorf("LatestRun on an empty store: %v, want ErrNotFound", err)
			}
			if _, err := tx.LatestUnfinishedRun(); !errors.Is(err, ErrNotFound) {
				t.Errorf("LatestUnfinishedRun on an empty store: %v, want ErrNotFound", err)
			}
			return nil
		})
	})
}

func TestInsertAttemptNumbering(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan", "implement")
		tests := []struct {
			step string
			n    int
			ok   bool
		}{
			{"plan", 2, false}, // must start at 1
			{"plan", 0, false},
			{"plan", 1, true},
			{"plan", 1, false}, // duplicate
			{"plan", 3, false}, // gap
			{"plan", 2, true},
			{"implement", 1, true}, // numbering is per step
		}
		for _, tt := range tests {
			err := s.Update(ctx, func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", tt.step, tt.n)) })
			if tt.ok && err != nil {
				t.Errorf("insert %s #%d: %v", tt.step, tt.n, err)
			}
			if !tt.ok && !errors.Is(err, ErrAttemptNumber) {
				t.Errorf("insert %s #%d: %v, want ErrAttemptNumber", tt.step, tt.n, err)
			}
		}
		// The foreign key refuses an attempt of a step that does not exist.
		if err := s.Update(ctx, func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", "ghost", 1)) }); err == nil {
			t.Error("inserted an attempt for a step that does not exist")
		}
	})
}

func TestLatestRuns(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
		runs := []struct {
			id      string
			started time.Time
			status  RunStatus
		}{
			{"a", at(0), RunRunning},
			{"b", at(10), RunInterrupted},
			{"c", at(10), RunInterrupted}, // same start as b: the id breaks the tie
			{"d", at(20), RunSucceeded},
			{"e", at(30), RunFailed},
			{"f", at(-5), RunRunning},
		}
		update(t, s, func(tx *Tx) error {
			for _, r := range runs {
				run := sampleRun(r.id, r.started)
				run.status = r.status
				if err := tx.CreateRun(run, nil); err != nil {
					return err
				}
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			latest, err := tx.LatestRun()
			if err != nil {
				return err
			}
			unfinished, err := tx.LatestUnfinishedRun()
			if err != nil {
				return err
			}
			if latest.ID != "e" || unfinished.ID != "c" {
				t.Errorf("LatestRun %s, LatestUnfinishedRun %s; want e and c", latest.ID, unfinished.ID)
			}
			all, err := tx.Runs()
			if err != nil {
				return err
			}
			var ids []string
			for _, r := range all {
				ids = append(ids, r.ID)
			}
			if want := []string{"f", "a", "b", "c", "d", "e"}; !reflect.DeepEqual(ids, want) {
				t.Errorf("Runs order %v, want %v", ids, want)
			}
			return nil
		})
	})
}

// Timestamps must order correctly as stored text even when one has no
// fractional seconds (RFC3339Nano would write "05Z" after "05.5Z").
func TestLatestRunOrdersWholeSeconds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		whole := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
		update(t, s, func(tx *Tx) error {
			if err := tx.CreateRun(sampleRun("later", whole.Add(500*time.Millisecond)), nil); err != nil {
				return err
			}
			return tx.CreateRun(sampleRun("earlier", whole), nil)
		})
		view(t, s, func(tx *Tx) error {
			r, err := tx.LatestRun()
			if err == nil && r.ID != "later" {
				t.Errorf("LatestRun %s, want later", r.ID)
			}
			return err
		})
	})
}

func TestAttemptQueries(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		// Steps are created out of idx order to show AllAttempts sorts by idx.
		update(t, s, func(tx *Tx) error {
			return tx.CreateRun(sampleRun("r", t0), []Step{sampleStep("r", "zeta", 0), sampleStep("r", "alpha", 1)})
		})
		seedRun(t, s, "other", t0, "zeta")
		type spec struct {
			step   string
			kind   string
			status AttemptStatus
			cost   *float64
			done   bool
		}
		specs := []spec{
			{"alpha", KindInitial, AttemptFailed, ptr(0.25), true},
			{"alpha", KindHelp, AttemptSucceeded, nil, true}, // finished, cost unknown
			{"alpha", KindFollowup, AttemptRunning, nil, false},
			{"zeta", KindInitial, AttemptFailed, ptr(1.0), true},
			{"zeta", KindFresh, AttemptInterrupted, nil, true}, // finished, cost unknown
			{"zeta", KindFresh, AttemptRunning, ptr(0.5), false},
		}
		update(t, s, func(tx *Tx) error {
			n := map[string]int{}
			for _, sp := range specs {
				n[sp.step]++
				a := sampleAttempt("r", sp.step, n[sp.step])
				a.Kind, a.status, a.CostUSD = sp.kind, sp.status, sp.cost
				if sp.done {
					a.FinishedAt = ptr(t0.Add(time.Minute))
				}
				if err := tx.InsertAttempt(a); err != nil {
					return err
				}
			}
			// Another run's attempts must not leak into this run's answers.
			o := sampleAttempt("other", "zeta", 1)
			o.CostUSD = ptr(100.0)
			return tx.InsertAttempt(o)
		})
		view(t, s, func(tx *Tx) error {
			all, err := tx.AllAttempts("r")
			if err != nil {
				return err
			}
			var order []string
			for _, a := range all {
				order = append(order, a.StepID+"#"+string(rune('0'+a.N)))
			}
			if want := []string{"zeta#1", "zeta#2", "zeta#3", "alpha#1", "alpha#2", "alpha#3"}; !reflect.DeepEqual(order, want) {
				t.Errorf("AllAttempts order %v, want %v", order, want)
			}

			running, err := tx.RunningAttempts("r")
			if err != nil {
				return err
			}
			var runningKeys []string
			for _, a := range running {
				runningKeys = append(runningKeys, a.StepID+"#"+string(rune('0'+a.N)))
			}
			if want := []string{"alpha#3", "zeta#3"}; !reflect.DeepEqual(runningKeys, want) {
				t.Errorf("RunningAttempts %v, want %v", runningKeys, want)
			}

			last, err := tx.LastAttempt("r", "alpha")
			if err != nil {
				return err
			}
			if last.N != 3 || last.Kind != KindFollowup {
				t.Errorf("LastAttempt(alpha) = #%d %s, want #3 followup", last.N, last.Kind)
			}

			counts := []struct {
				step  string
				kinds []string
				want  int
			}{
				{"alpha", nil, 3},
				{"alpha", []string{KindHelp}, 1},
				{"alpha", []string{KindInitial, KindFollowup, KindFresh}, 2},
				{"zeta", []string{KindFresh}, 2},
				{"zeta", []string{KindHelp}, 0},
				{"ghost", nil, 0},
			}
			for _, c := range counts {
				n, err := tx.CountAttempts("r", c.step, c.kinds...)
				if err != nil {
					return err
				}
				if n != c.want {
					t.Errorf("CountAttempts(%s, %v) = %d, want %d", c.step, c.kinds, n, c.want)
				}
			}

			cost, unknown, err := tx.RunCost("r")
			if err != nil {
				return err
			}
			if cost != 1.75 || unknown != 2 {
				t.Errorf("RunCost = %v, %d unknown; want 1.75, 2", cost, unknown)
			}
			cost, unknown, err = tx.RunCost("no-such-run")
			if err != nil || cost != 0 || unknown != 0 {
				t.Errorf("RunCost of an unknown run = %v, %d, %v; want 0, 0, nil", cost, unknown, err)
			}
			return nil
		})
	})
}

func TestCreateRunRejectsForeignSteps(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		err := s.Update(context.Background(), func(tx *Tx) error {
			return tx.CreateRun(sampleRun("r", t0), []Step{sampleStep("other", "plan", 0)})
		})
		if err == nil {
			t.Fatal("CreateRun accepted a step of another run")
		}
		if got := countRows(t, s); got["runs"] != 0 || got["steps"] != 0 {
			t.Fatalf("rows left behind: %v", got)
		}
	})
}

func TestInsertStep(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan", "implement")
		added := fullStep("r")
		added.ID, added.Idx, added.status = "review", 2, StepPending
		update(t, s, func(tx *Tx) error { return tx.InsertStep(added) })
		view(t, s, func(tx *Tx) error {
			steps, err := tx.Steps("r")
			if err != nil {
				return err
			}
			if len(steps) != 3 || !reflect.DeepEqual(steps[2], utc(added)) {
				t.Errorf("steps after InsertStep: %+v", steps)
			}
			return nil
		})
		dup := sampleStep("r", "plan", 7)
		if err := s.Update(ctx, func(tx *Tx) error { return tx.InsertStep(dup) }); err == nil {
			t.Error("InsertStep accepted a duplicate step id")
		}
		orphan := sampleStep("no-such-run", "plan", 0)
		if err := s.Update(ctx, func(tx *Tx) error { return tx.InsertStep(orphan) }); err == nil {
			t.Error("InsertStep accepted a step of a run that does not exist")
		}
		if err := s.View(ctx, func(tx *Tx) error { return tx.InsertStep(sampleStep("r", "x", 9)) }); !errors.Is(err, ErrReadOnly) {
			t.Errorf("InsertStep inside View: %v, want ErrReadOnly", err)
		}
	})
}
