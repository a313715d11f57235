package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The allowed transitions, written out independently of the tables in
// transitions.go. Every pair of statuses not listed here must be refused.
var (
	runStatuses     = names(RunRunning, RunSucceeded, RunFailed, RunInterrupted, RunAbandoned)
	allowedRunMoves = set(
		"running>running", "running>succeeded", "running>failed", "running>interrupted", "running>abandoned",
		"interrupted>running", "interrupted>abandoned",
		"failed>running",
	)
	stepStatuses     = names(StepPending, StepRunning, StepWaiting, StepSucceeded, StepFailed)
	allowedStepMoves = set(
		"pending>pending", "pending>running", "pending>failed", "pending>succeeded",
		"pending>waiting", // an approval gate reached
		"running>running", "running>waiting", "running>succeeded", "running>failed", "running>pending",
		"waiting>waiting", "waiting>running", "waiting>failed",
		"waiting>succeeded", // an approval gate answered
		"failed>pending",
	)
	attemptStatuses     = names(AttemptRunning, AttemptSucceeded, AttemptFailed, AttemptInterrupted, AttemptAdopted)
	allowedAttemptMoves = set(
		"running>running", "running>succeeded", "running>failed", "running>interrupted", "running>adopted",
	)
	checkStatuses     = []string{CheckRunning, CheckPassed, CheckFailed, CheckInterrupted}
	allowedCheckMoves = set("running>running", "running>passed", "running>failed", "running>interrupted")
)

// names is a list of statuses as strings, so that the tests can try
// every string, unknown ones included, on every machine alike.
func names[S ~string](statuses ...S) []string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return out
}

// typed adapts a machine's transition check to strings.
func typed[S ~string](check func(from, to S) error) func(from, to string) error {
	return func(from, to string) error { return check(S(from), S(to)) }
}

func set(moves ...string) map[string]bool {
	m := make(map[string]bool, len(moves))
	for _, mv := range moves {
		m[mv] = true
	}
	return m
}

func TestTransitionTables(t *testing.T) {
	machines := []struct {
		name     string
		statuses []string
		allowed  map[string]bool
		check    func(from, to string) error
	}{
		{"run", runStatuses, allowedRunMoves, typed(RunTransition)},
		{"step", stepStatuses, allowedStepMoves, typed(StepTransition)},
		{"attempt", attemptStatuses, allowedAttemptMoves, typed(AttemptTransition)},
		{"check", checkStatuses, allowedCheckMoves, typed(CheckTransition)},
	}
	for _, m := range machines {
		// Every pair, plus unknown and empty statuses on either side.
		all := append(append([]string{}, m.statuses...), "bogus", "")
		for _, from := range all {
			for _, to := range all {
				err := m.check(from, to)
				if m.allowed[from+">"+to] {
					if err != nil {
						t.Errorf("%s %q → %q: %v, want allowed", m.name, from, to, err)
					}
					continue
				}
				if !errors.Is(err, ErrInvalidTransition) {
					t.Errorf("%s %q → %q: %v, want ErrInvalidTransition", m.name, from, to, err)
				}
			}
		}
	}
}

// The Tx update methods enforce the same tables on stored rows, name the row
// in their error and leave a refused row unchanged.
func TestUpdatesEnforceTransitions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		s := e.newStore(t)

		type machine struct {
			name     string
			statuses []string
			allowed  map[string]bool
			// seed stores a row in status from under key; move tries to set to;
			// status reads the stored status back.
			seed   func(tx *Tx, key, from string) error
			move   func(tx *Tx, key, to string) error
			status func(tx *Tx, key string) (string, error)
			row    func(key string) string
		}
		machines := []machine{
			{
				name: "run", statuses: runStatuses, allowed: allowedRunMoves,
				seed: func(tx *Tx, key, from string) error {
					r := sampleRun(key, t0)
					r.status = RunStatus(from)
					return tx.CreateRun(r, nil)
				},
				move: func(tx *Tx, key, to string) error {
					r, err := tx.Run(key)
					if err != nil {
						return err
					}
					r.status = RunStatus(to)
					return tx.UpdateRun(*r)
				},
				status: func(tx *Tx, key string) (string, error) {
					r, err := tx.Run(key)
					if err != nil {
						return "", err
					}
					return string(r.Status()), nil
				},
				row: func(key string) string { return "run " + key },
			},
			{
				name: "step", statuses: stepStatuses, allowed: allowedStepMoves,
				seed: func(tx *Tx, key, from string) error {
					st := sampleStep(key, "s", 0)
					st.status = StepStatus(from)
					return tx.CreateRun(sampleRun(key, t0), []Step{st})
				},
				move: func(tx *Tx, key, to string) error {
					st, err := tx.Step(key, "s")
					if err != nil {
						return err
					}
					st.status = StepStatus(to)
					return tx.UpdateStep(*st)
				},
				status: func(tx *Tx, key string) (string, error) {
					st, err := tx.Step(key, "s")
					if err != nil {
						return "", err
					}
					return string(st.Status()), nil
				},
				row: func(key string) string { return "step " + key + "/s" },
			},
			{
				name: "attempt", statuses: attemptStatuses, allowed: allowedAttemptMoves,
				seed: func(tx *Tx, key, from string) error {
					if err := tx.CreateRun(sampleRun(key, t0), []Step{sampleStep(key, "s", 0)}); err != nil {
						return err
					}
					a := sampleAttempt(key, "s", 1)
					a.status = AttemptStatus(from)
					return tx.InsertAttempt(a)
				},
				move: func(tx *Tx, key, to string) error {
					a, err := tx.Attempt(key, "s", 1)
					if err != nil {
						return err
					}
					a.status = AttemptStatus(to)
					return tx.UpdateAttempt(*a)
				},
				status: func(tx *Tx, key string) (string, error) {
					a, err := tx.Attempt(key, "s", 1)
					if err != nil {
						return "", err
					}
					return string(a.Status()), nil
				},
				row: func(key string) string { return "attempt " + key + "/s/1" },
			},
		}
		for _, m := range machines {
			for _, from := range m.statuses {
				for _, to := range m.statuses {
					key := fmt.Sprintf("%s-%s-%s", m.name, from, to)
					update(t, s, func(tx *Tx) error { return m.seed(tx, key, from) })
					err := s.Update(ctx, func(tx *Tx) error { return m.move(tx, key, to) })
					want := from
					if m.allowed[from+">"+to] {
						if err != nil {
							t.Errorf("%s: %v, want allowed", key, err)
						}
						want = to
					} else if !errors.Is(err, ErrInvalidTransition) ||
						!strings.Contains(err.Error(), m.row(key)) || !strings.Contains(err.Error(), from+" → "+to) {
						t.Errorf("%s: error %v, want ErrInvalidTransition naming %q and %s → %s", key, err, m.row(key), from, to)
					}
					view(t, s, func(tx *Tx) error {
						got, err := m.status(tx, key)
						if err == nil && got != want {
							t.Errorf("%s: stored status %q, want %q", key, got, want)
						}
						return err
					})
				}
			}
		}
	})
}

func TestCreateRefusesUnknownStatus(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		ctx := context.Background()
		badRun := sampleRun("r1", t0)
		badRun.status = "paused"
		badStep := sampleStep("r2", "s", 0)
		badStep.status = "done"
		badAttempt := sampleAttempt("r3", "s", 1)
		badAttempt.status = "ok"
		badKind := sampleAttempt("r3", "s", 1)
		badKind.Kind = "retry"
		tests := []struct {
			name string
			fn   func(tx *Tx) error
			want error
		}{
			{"run status", func(tx *Tx) error { return tx.CreateRun(badRun, nil) }, ErrInvalidTransition},
			{"step status", func(tx *Tx) error { return tx.CreateRun(sampleRun("r2", t0), []Step{badStep}) }, ErrInvalidTransition},
			{"attempt status", func(tx *Tx) error {
				if err := tx.CreateRun(sampleRun("r3", t0), []Step{sampleStep("r3", "s", 0)}); err != nil {
					return err
				}
				return tx.InsertAttempt(badAttempt)
			}, ErrInvalidTransition},
			{"attempt kind", func(tx *Tx) error {
				if err := tx.CreateRun(sampleRun("r3", t0), []Step{sampleStep("r3", "s", 0)}); err != nil {
					return err
				}
				return tx.InsertAttempt(badKind)
			}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := s.Update(ctx, tt.fn)
				if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
					t.Fatalf("got %v, want an error (%v)", err, tt.want)
				}
			})
		}
		view(t, s, func(tx *Tx) error {
			runs, err := tx.Runs()
			if len(runs) != 0 {
				t.Errorf("refused creates left %d runs behind", len(runs))
			}
			return err
		})
	})
}

// TestTransitionTablesComplete: the compiler holds that only the named
// transitions set a row's status (the fields are unexported) and that a
// table holds statuses of its own type. What it cannot say is that a
// table names every constant of its type, so that no status the code can
// write is refused as unknown, and that every move leads to a status the
// table knows. The constants are read from the package's source.
func TestTransitionTablesComplete(t *testing.T) {
	declared := declaredStatuses(t)
	for _, tt := range []struct {
		typ   string
		table map[string][]string
	}{
		{"AttemptStatus", stringTable(attemptTransitions)},
		{"StepStatus", stringTable(stepTransitions)},
		{"RunStatus", stringTable(runTransitions)},
	} {
		var keys []string
		for from, next := range tt.table {
			keys = append(keys, from)
			for _, to := range next {
				if _, ok := tt.table[to]; !ok {
					t.Errorf("%s: %s → %s leads to a status the table does not know", tt.typ, from, to)
				}
			}
		}
		slices.Sort(keys)
		want := declared[tt.typ]
		slices.Sort(want)
		if len(want) == 0 || !slices.Equal(keys, want) {
			t.Errorf("%s: the table knows %v, the constants are %v", tt.typ, keys, want)
		}
	}
}

// stringTable is a transition table with its statuses as strings.
func stringTable[S ~string](table map[S][]S) map[string][]string {
	out := make(map[string][]string, len(table))
	for from, next := range table {
		out[string(from)] = names(next...)
	}
	return out
}

// declaredStatuses reads, from the package's source files, the values of
// the constants declared with a type whose name ends in Status.
func declaredStatuses(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok || !strings.HasSuffix(typ.Name, "Status") {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a %s constant that is not a string literal", fset.Position(v.Pos()), typ.Name)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[typ.Name] = append(out[typ.Name], s)
				}
			}
		}
	}
	return out
}
