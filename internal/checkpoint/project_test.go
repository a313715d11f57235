package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// openProject opens target confined to project id.
func openProject(t *testing.T, target, id string) *Store {
	t.Helper()
	s := openStore(t, target)
	if err := s.SetProject(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return s
}

// seedProject writes, in store s, one of everything a project owns that
// is found without naming a run: an unfinished run with a running attempt
// of agent sim, a breaker of sim, a due delivery and a project-wide
// event; and a finished run.
func seedProject(t *testing.T, s *Store, runID, finishedID string) {
	t.Helper()
	seedRun(t, s, runID, t0, "a")
	seedRun(t, s, finishedID, t0.Add(-time.Hour), "a")
	update(t, s, func(tx *Tx) error {
		if err := tx.InsertAttempt(sampleAttempt(runID, "a", 1)); err != nil {
			return err
		}
		fin := sampleRun(finishedID, t0.Add(-time.Hour))
		fin.status, fin.FinishedAt = RunSucceeded, ptr(t0.Add(-time.Minute))
		if err := tx.UpdateRun(fin); err != nil {
			return err
		}
		if err := tx.PutCircuit(Circuit{Agent: "sim", State: "open", Failures: 3, UpdatedAt: t0}); err != nil {
			return err
		}
		if err := tx.AddEvent(Event{At: t0, Kind: "circuit_reset", Detail: runID}); err != nil {
			return err
		}
		return tx.AddDelivery(Delivery{RunID: runID, Seq: 1, Event: "run_started", Target: "t", TargetJSON: []byte(`{}`),
			BodyJSON: []byte(`{}`), IdempotencyKey: runID + "-1", CreatedAt: t0, Status: DeliveryPending, NextTryAt: t0})
	})
}

// projectView is everything a project sees without naming a run.
type projectView struct {
	latest, unfinished    string // run ids, "" when none
	runs, open, finished  int
	circuit               string // the state of sim's breaker, "" when none
	circuits, due, events int
	nextDelivery          bool
	runningSim            int
}

func viewProject(t *testing.T, s *Store) projectView {
	t.Helper()
	var v projectView
	view(t, s, func(tx *Tx) error {
		if r, err := tx.LatestRun(); err == nil {
			v.latest = r.ID
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		if r, err := tx.LatestUnfinishedRun(); err == nil {
			v.unfinished = r.ID
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		runs, err := tx.Runs()
		if err != nil {
			return err
		}
		open, err := tx.UnfinishedRuns()
		if err != nil {
			return err
		}
		fin, err := tx.FinishedRunsBefore(t0.Add(time.Hour))
		if err != nil {
			return err
		}
		v.runs, v.open, v.finished = len(runs), len(open), len(fin)
		if c, err := tx.Circuit("sim"); err == nil {
			v.circuit = c.State
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		cs, err := tx.Circuits()
		if err != nil {
			return err
		}
		due, err := tx.DueDeliveries(t0.Add(time.Hour), 10, func(Lease) bool { return true })
		if err != nil {
			return err
		}
		next, err := tx.NextDeliveryAt()
		if err != nil {
			return err
		}
		evs, err := tx.Events("")
		if err != nil {
			return err
		}
		v.circuits, v.due, v.events, v.nextDelivery = len(cs), len(due), len(evs), next != nil
		v.runningSim, err = tx.RunningOfAgent("sim")
		return err
	})
	return v
}

// Two projects on one state see, answer and change only their own rows,
// even when they name the other's run by its id.
func TestProjectsShareAStateApart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		target := e.target(t)
		a := openProject(t, target, "proj-a")
		b := openProject(t, target, "proj-b")
		seedProject(t, a, "run-a", "old-a")

		own := projectView{latest: "run-a", unfinished: "run-a", runs: 2, open: 1, finished: 1, circuit: "open",
			circuits: 1, due: 1, events: 1, nextDelivery: true, runningSim: 1}
		if got := viewProject(t, a); got != own {
			t.Errorf("project a sees %+v, want %+v", got, own)
		}
		if got := viewProject(t, b); got != (projectView{}) {
			t.Errorf("project b sees a's rows: %+v", got)
		}

		// Named by id, a's runs are not found from b, and not changed.
		for _, tc := range []struct {
			name string
			fn   func(tx *Tx) error
		}{
			{"Run", func(tx *Tx) error { _, err := tx.Run("run-a"); return err }},
			{"UpdateRun", func(tx *Tx) error {
				r := sampleRun("run-a", t0)
				r.status = RunAbandoned
				return tx.UpdateRun(r)
			}},
			{"DeleteRun", func(tx *Tx) error { _, err := tx.DeleteRun("old-a"); return err }},
		} {
			err := b.Update(context.Background(), tc.fn)
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s of a's run from b: %v, want ErrNotFound", tc.name, err)
			}
		}

		// b's breaker of an agent of the same name is its own.
		update(t, b, func(tx *Tx) error {
			return tx.PutCircuit(Circuit{Agent: "sim", State: "closed", UpdatedAt: t0})
		})
		seedProject(t, b, "run-b", "old-b")
		if got := viewProject(t, a); got != own {
			t.Errorf("after b wrote its own rows, project a sees %+v, want %+v", got, own)
		}
		wantB := own
		wantB.latest, wantB.unfinished = "run-b", "run-b"
		if got := viewProject(t, b); got != wantB {
			t.Errorf("project b sees %+v, want %+v", got, wantB)
		}
		if err := b.Update(context.Background(), func(tx *Tx) error {
			_, err := tx.DeleteRun("old-b")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got := viewProject(t, a); got.finished != 1 || got.runs != 2 {
			t.Errorf("b's prune changed a: %+v", got)
		}
	})
}

// The rows written before runs recorded their project are adopted by the
// first project that opens the state for writing, and only by it; a
// read-only store without a project reads them until then.
func TestProjectAdoptsRowsWithoutProject(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		target := e.target(t)
		legacy := openStore(t, target) // no SetProject: rows of project ''
		seedProject(t, legacy, "run-old", "older")

		ro, err := OpenReadOnly(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if err := ro.SetProject(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if got := viewProject(t, ro); got.latest != "run-old" || got.runs != 2 {
			t.Errorf("before adoption, a project without an id sees %+v, want the old rows", got)
		}

		a := openProject(t, target, "proj-a")
		b := openProject(t, target, "proj-b")
		want := projectView{latest: "run-old", unfinished: "run-old", runs: 2, open: 1, finished: 1, circuit: "open",
			circuits: 1, due: 1, events: 1, nextDelivery: true, runningSim: 1}
		if got := viewProject(t, a); got != want {
			t.Errorf("the first project sees %+v, want the adopted rows %+v", got, want)
		}
		if got := viewProject(t, b); got != (projectView{}) {
			t.Errorf("the second project sees rows it did not write: %+v", got)
		}
		if got := viewProject(t, ro); got != (projectView{}) {
			t.Errorf("after adoption, project '' still sees %+v", got)
		}
	})
}

// A writable store needs a project id; a read-only one may have none.
func TestSetProjectRefusesEmptyIDForWriting(t *testing.T) {
	s := newStore(t)
	if err := s.SetProject(context.Background(), ""); err == nil {
		t.Fatal("SetProject(\"\") on a writable store: no error")
	}
}

// A state written before runs recorded their project keeps its runs,
// breakers and project-wide events through the projects migration: the
// first project to open it adopts them, a cancelled status can then be
// stored (the widened CHECK), and another project sees none of them.
func TestProjectsMigrationKeepsAnOlderState(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		db := e.raw(t, target)
		before := fstest.MapFS{}
		entries, err := fs.ReadDir(e.migrations, ".")
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if strings.HasSuffix(en.Name(), projectsMigration) {
				break // the projects migration and those after it
			}
			b, err := fs.ReadFile(e.migrations, en.Name())
			if err != nil {
				t.Fatal(err)
			}
			before[en.Name()] = &fstest.MapFile{Data: b}
		}
		if err := e.migrate(ctx, db, before); err != nil {
			t.Fatal(err)
		}
		ts := "2026-11-01T10:00:00.000000000Z"
		for _, q := range []string{
			`INSERT INTO runs (id, status, workflow_path, workflow_sha256, workflow_yaml, started_at, updated_at)
				VALUES ('old', 'interrupted', 'w.yaml', 'sha', 'version: 1', '` + ts + `', '` + ts + `')`,
			`INSERT INTO circuits (agent, state, failures, updated_at) VALUES ('sim', 'open', 3, '` + ts + `')`,
			`INSERT INTO events (run_id, at, kind, detail) VALUES (NULL, '` + ts + `', 'circuit_reset', 'sim')`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()

		a := openProject(t, target, "proj-a")
		b := openProject(t, target, "proj-b")
		view(t, a, func(tx *Tx) error {
			r, err := tx.LatestUnfinishedRun()
			if err != nil || r.ID != "old" {
				t.Errorf("the adopted unfinished run: %+v, %v", r, err)
			}
			c, err := tx.Circuit("sim")
			if err != nil || c.State != "open" || c.Failures != 3 {
				t.Errorf("the adopted breaker: %+v, %v", c, err)
			}
			evs, err := tx.Events("")
			if err != nil || len(evs) != 1 || evs[0].Detail != "sim" {
				t.Errorf("the adopted project-wide events: %+v, %v", evs, err)
			}
			return nil
		})
		update(t, a, func(tx *Tx) error {
			r, err := tx.Run("old")
			if err != nil {
				return err
			}
			return tx.RunEnded(r, RunCancelled, t0)
		})
		if got := viewProject(t, b); got != (projectView{}) {
			t.Errorf("the other project sees %+v", got)
		}
		if got := viewProject(t, a); got.latest != "old" || got.finished != 1 || got.open != 0 {
			t.Errorf("after its cancel, the project sees %+v", got)
		}
	})
}
