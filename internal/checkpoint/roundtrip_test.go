package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// utc returns v with every time.Time (and *time.Time) it holds converted to
// UTC, which is how the store hands timestamps back.
func utc[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	toUTC(rv)
	return v
}

func toUTC(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			v.Set(reflect.ValueOf(t.UTC()))
			return
		}
		for i := range v.NumField() {
			toUTC(v.Field(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			cp := reflect.New(v.Elem().Type())
			cp.Elem().Set(v.Elem())
			toUTC(cp.Elem())
			v.Set(cp)
		}
	}
}

// checkUTC fails unless every timestamp in v is in time.UTC.
func checkUTC(t *testing.T, what string, v any) {
	t.Helper()
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			if tm, ok := v.Interface().(time.Time); ok {
				if tm.Location() != time.UTC {
					t.Errorf("%s: timestamp %v read back in %v, want UTC", what, tm, tm.Location())
				}
				return
			}
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		}
	}
	walk(reflect.ValueOf(v))
}

func fullRun(t *testing.T) Run {
	t.Helper()
	yaml, err := os.ReadFile(filepath.Join("testdata", "workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return Run{
		ID: "run-full", status: RunRunning, WorkflowPath: ".cadence/workflow.yaml",
		WorkflowSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		WorkflowYAML:   yaml, BudgetUSD: ptr(12.5),
		StartedAt: t0, FinishedAt: ptr(t0.Add(90 * time.Minute)), UpdatedAt: t0.Add(time.Nanosecond),
	}
}

func fullStep(runID string) Step {
	return Step{
		RunID: runID, ID: "implement", Idx: 1, Agent: "claude", status: StepWaiting, MaxAttempts: 5,
		NextRetryAt: ptr(t0.Add(1873 * time.Millisecond)), DelayMS: ptr(int64(1873)),
		SessionID: "sess-1", FreshSession: true,
		HandoffJSON: []byte(`{"component":"implement","data":{"ok":true}}`),
		HelpRounds:  2, Advice: "check the schema\nline two", CostUSD: 0.41, CostKnown: true, Turns: 12,
		InputTokens: 1 << 40, OutputTokens: 98765, UpdatedAt: t0.Add(time.Second),
	}
}

func fullAttempt(runID, stepID string) Attempt {
	return Attempt{
		RunID: runID, StepID: stepID, N: 1, Kind: KindFollowup, status: AttemptFailed,
		Class: "schema", Error: "schema: /success: expected boolean",
		DetailsJSON: []byte(`{"violations":[{"pointer":"/success"}]}`),
		Prompt:      "Rewrite the complete, corrected JSON.", StartedAt: t0,
		FinishedAt: ptr(t0.Add(3 * time.Second)), PID: ptr(4242), ExitCode: ptr(0),
		SessionID: "sess-1", CircuitGen: 7, DelayMS: ptr(int64(0)), NextRetryAt: ptr(t0.Add(5 * time.Second)),
		RetryAfterMS: ptr(int64(30000)), Repairs: []string{"single_quotes", "trailing_comma"},
		OutputFile: ".cadence/attempts/run-full/implement/1.out", FailedHandoff: ".cadence/failed_handoffs/run-full/implement/1.json",
		CostUSD: ptr(0.0), Turns: 3, InputTokens: 1200, OutputTokens: 300, HelpContext: `{"question":"which file?"}`, Uncounted: true,
		CachedTokens: 800, Agent: "claude-2", Provenance: "file",
		Snapshot: "0123456789abcdef0123456789abcdef01234567", SnapshotAfter: "89abcdef0123456789abcdef0123456789abcdef",
	}
}

func fullCircuit() Circuit {
	return Circuit{
		Agent: "claude", State: "half_open", Failures: 3, Generation: 1 << 33,
		OpenedAt: ptr(t0), OpenUntil: ptr(t0.Add(2 * time.Minute)), Trials: 1, Successes: 0, UpdatedAt: t0,
	}
}

func TestRunRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		full := fullRun(t)
		minimal := Run{ID: "run-min", status: RunRunning, StartedAt: t0.Add(-time.Hour), UpdatedAt: t0}
		s := e.newStore(t)
		update(t, s, func(tx *Tx) error {
			if err := tx.CreateRun(full, nil); err != nil {
				return err
			}
			return tx.CreateRun(minimal, nil)
		})
		view(t, s, func(tx *Tx) error {
			for _, want := range []Run{full, minimal} {
				got, err := tx.Run(want.ID)
				if err != nil {
					return err
				}
				if want.WorkflowYAML == nil {
					want.WorkflowYAML = []byte{} // NOT NULL column: empty, never nil
				}
				if !reflect.DeepEqual(*got, utc(want)) {
					t.Errorf("Run(%s):\n got  %+v\n want %+v", want.ID, *got, utc(want))
				}
				checkUTC(t, "run "+want.ID, *got)
			}
			return nil
		})

		// A full-row update replaces every field, including pointers set to nil.
		changed := full
		changed.status = RunInterrupted
		changed.WorkflowPath = "other.yaml"
		changed.BudgetUSD = nil
		changed.FinishedAt = nil
		changed.UpdatedAt = t0.Add(time.Hour)
		update(t, s, func(tx *Tx) error { return tx.UpdateRun(changed) })
		view(t, s, func(tx *Tx) error {
			got, err := tx.Run(full.ID)
			if err == nil && !reflect.DeepEqual(*got, utc(changed)) {
				t.Errorf("after UpdateRun:\n got  %+v\n want %+v", *got, utc(changed))
			}
			return err
		})
	})
}

func TestStepRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		full := fullStep("r")
		minimal := Step{RunID: "r", ID: "plan", Idx: 0, Agent: "sim", status: StepPending, MaxAttempts: 1, UpdatedAt: t0}
		update(t, s, func(tx *Tx) error { return tx.CreateRun(sampleRun("r", t0), []Step{minimal, full}) })
		view(t, s, func(tx *Tx) error {
			steps, err := tx.Steps("r")
			if err != nil {
				return err
			}
			want := []Step{utc(minimal), utc(full)} // ordered by idx
			if !reflect.DeepEqual(steps, want) {
				t.Errorf("Steps:\n got  %+v\n want %+v", steps, want)
			}
			for _, w := range want {
				got, err := tx.Step("r", w.ID)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(*got, w) {
					t.Errorf("Step(%s):\n got  %+v\n want %+v", w.ID, *got, w)
				}
				checkUTC(t, "step "+w.ID, *got)
			}
			return nil
		})

		// Swap the two: the full step loses its pointers, the minimal one gains them.
		a, b := full, minimal
		a.status, a.NextRetryAt, a.DelayMS, a.HandoffJSON, a.FreshSession, a.CostKnown = StepRunning, nil, nil, nil, false, false
		b.status, b.NextRetryAt, b.DelayMS, b.HandoffJSON = StepRunning, ptr(t0), ptr(int64(5)), []byte(`{}`)
		update(t, s, func(tx *Tx) error {
			if err := tx.UpdateStep(a); err != nil {
				return err
			}
			return tx.UpdateStep(b)
		})
		view(t, s, func(tx *Tx) error {
			for _, w := range []Step{a, b} {
				got, err := tx.Step("r", w.ID)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(*got, utc(w)) {
					t.Errorf("after UpdateStep(%s):\n got  %+v\n want %+v", w.ID, *got, utc(w))
				}
			}
			return nil
		})
	})
}

func TestAttemptRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan", "implement")
		running := sampleAttempt("r", "implement", 1)
		full := fullAttempt("r", "implement")
		emptyRepairs := sampleAttempt("r", "implement", 2)
		emptyRepairs.Repairs = []string{}
		emptyRepairs.DetailsJSON = []byte{}
		// The kind of an attempt on a fallback agent entry (SPEC §17): the
		// engines' CHECK constraints admit it.
		emptyRepairs.Kind, emptyRepairs.Agent = KindFallback, "codex"
		update(t, s, func(tx *Tx) error {
			if err := tx.InsertAttempt(running); err != nil {
				return err
			}
			if err := tx.UpdateAttempt(full); err != nil {
				return err
			}
			return tx.InsertAttempt(emptyRepairs)
		})
		view(t, s, func(tx *Tx) error {
			got, err := tx.Attempt("r", "implement", 1)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(*got, utc(full)) {
				t.Errorf("Attempt 1:\n got  %+v\n want %+v", *got, utc(full))
			}
			checkUTC(t, "attempt 1", *got)
			got, err = tx.Attempt("r", "implement", 2)
			if err != nil {
				return err
			}
			// Nil and empty stay distinct: nil means "not recorded".
			if !reflect.DeepEqual(*got, utc(emptyRepairs)) || got.Repairs == nil || got.DetailsJSON == nil || got.PID != nil {
				t.Errorf("Attempt 2:\n got  %+v\n want %+v", *got, utc(emptyRepairs))
			}
			all, err := tx.Attempts("r", "implement")
			if err != nil {
				return err
			}
			if want := []Attempt{utc(full), utc(emptyRepairs)}; !reflect.DeepEqual(all, want) {
				t.Errorf("Attempts:\n got  %+v\n want %+v", all, want)
			}
			return nil
		})
	})
}

func TestCircuitRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		full := fullCircuit()
		closed := Circuit{Agent: "codex", State: "closed", UpdatedAt: t0}
		update(t, s, func(tx *Tx) error {
			if err := tx.PutCircuit(full); err != nil {
				return err
			}
			return tx.PutCircuit(closed)
		})
		view(t, s, func(tx *Tx) error {
			for _, w := range []Circuit{full, closed} {
				got, err := tx.Circuit(w.Agent)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(*got, utc(w)) {
					t.Errorf("Circuit(%s):\n got  %+v\n want %+v", w.Agent, *got, utc(w))
				}
				checkUTC(t, "circuit "+w.Agent, *got)
			}
			all, err := tx.Circuits()
			if err != nil {
				return err
			}
			if want := []Circuit{utc(full), utc(closed)}; !reflect.DeepEqual(all, want) {
				t.Errorf("Circuits:\n got  %+v\n want %+v", all, want)
			}
			return nil
		})

		// PutCircuit on an existing agent replaces it (upsert), nil pointers included.
		reclosed := Circuit{Agent: "claude", State: "closed", Generation: full.Generation + 1, UpdatedAt: t0.Add(time.Minute)}
		update(t, s, func(tx *Tx) error { return tx.PutCircuit(reclosed) })
		view(t, s, func(tx *Tx) error {
			got, err := tx.Circuit("claude")
			if err == nil && !reflect.DeepEqual(*got, utc(reclosed)) {
				t.Errorf("after upsert:\n got  %+v\n want %+v", *got, utc(reclosed))
			}
			all, err2 := tx.Circuits()
			if len(all) != 2 {
				t.Errorf("%d circuits after upsert, want 2", len(all))
			}
			return errorsJoin(err, err2)
		})
	})
}

func TestEventRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		events := []Event{
			{RunID: "r", At: t0, Kind: "workflow_changed_allowed", Detail: "steps: +review"},
			{RunID: "", At: t0.Add(time.Second), Kind: "circuit_reset", Detail: "claude"},
			{RunID: "r", At: t0.Add(2 * time.Second), Kind: "run_abandoned", Detail: ""},
		}
		update(t, s, func(tx *Tx) error {
			for _, e := range events {
				if err := tx.AddEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			got, err := tx.Events("r")
			if err != nil {
				return err
			}
			if len(got) != 2 {
				t.Fatalf("Events(r): %d events, want 2", len(got))
			}
			for i, w := range []Event{events[0], events[2]} {
				if got[i].ID == 0 {
					t.Errorf("event %d has no id", i)
				}
				w.ID = got[i].ID
				if !reflect.DeepEqual(got[i], utc(w)) {
					t.Errorf("event %d:\n got  %+v\n want %+v", i, got[i], utc(w))
				}
			}
			if got[0].ID >= got[1].ID {
				t.Errorf("event ids %d, %d not increasing", got[0].ID, got[1].ID)
			}
			project, err := tx.Events("")
			if err != nil {
				return err
			}
			if len(project) != 1 || project[0].Kind != "circuit_reset" || project[0].RunID != "" {
				t.Errorf("Events(\"\"): %+v, want the one circuit_reset", project)
			}
			return nil
		})
	})
}
