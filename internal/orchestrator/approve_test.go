package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// TestAnswerGateNamesWhatWaits: an answer goes to the gate waiting in the
// latest run; one naming no waiting gate, a gate answered already, a
// rejection without a comment, or a gate of that name waiting in several
// unfinished runs (without --run) is refused, saying what waits and where;
// a gate waiting in one unfinished run, not the latest, is answered there.
func TestAnswerGateNamesWhatWaits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, CadenceDir), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(ctx, filepath.Join(dir, CadenceDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// Runs "old" (interrupted) and "mid" wait at gate "ship"; run "new",
	// the latest, waits at "loop/2/review".
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		for i, r := range []struct{ id, gate string }{{"old", "ship"}, {"mid", "ship"}, {"new", "loop/2/review"}} {
			run := checkpoint.NewRun(checkpoint.Run{ID: r.id, WorkflowPath: "w.yaml", WorkflowSHA256: "0", WorkflowYAML: []byte("version: 1\n")}, t0.Add(time.Duration(i)*time.Hour))
			step := checkpoint.NewStep(checkpoint.Step{RunID: r.id, ID: r.gate}, t0)
			if err := tx.CreateRun(run, []checkpoint.Step{step}); err != nil {
				return err
			}
			if err := tx.GateWaiting(&step, checkpoint.Approval{Unit: step.Unit(), Prompt: "ok?", RequestedAt: t0}, t0); err != nil {
				return err
			}
		}
		r, err := tx.Run("old")
		if err != nil {
			return err
		}
		return tx.RunEnded(r, checkpoint.RunInterrupted, t0)
	})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	answer := func(step, decision, comment string) (*Answered, error) {
		return AnswerGate(ctx, Answer{Dir: dir, Step: step, Decision: decision, Comment: comment, By: "ana", At: t0.Add(3 * time.Hour)})
	}
	refused := []struct {
		name, step, decision, comment, want string
	}{
		{"no such gate", "deploy", checkpoint.Approved, "", "step deploy of run new is not waiting for approval; waiting: loop/2/review"},
		{"waiting in two runs", "ship", checkpoint.Approved, "", "2 runs are unfinished in this project; say which to answer:\n  old  interrupted"},
		{"a rejection without a comment", "review", checkpoint.Rejected, " ", "reject needs --comment"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := answer(tt.step, tt.decision, tt.comment)
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a usage error saying %q", err, tt.want)
			}
		})
	}
	// The inner gate is named by its id.
	got, err := answer("review", checkpoint.Approved, "fine")
	if err != nil || got.RunID != "new" || got.Gate != "loop/2/review" {
		t.Fatalf("answer = %+v, %v; want gate loop/2/review of run new", got, err)
	}
	_, err = answer("loop/2/review", checkpoint.Rejected, "changed my mind")
	if err == nil || !strings.Contains(err.Error(), "gate loop/2/review of run new was already approved by ana at 2026-11-24T13:00:00Z: the first answer stands; no gate waits for approval") {
		t.Fatalf("a second answer: err = %v", err)
	}
	// With --run, the older run's gate; then the one run where it still
	// waits, without --run, though it is not the latest.
	if got, err := AnswerGate(ctx, Answer{Dir: dir, RunID: "old", Step: "ship", Decision: checkpoint.Approved, By: "bo", At: t0}); err != nil || got.Gate != "ship" || got.RunID != "old" {
		t.Fatalf("answer with --run old = %+v, %v", got, err)
	}
	if got, err := answer("ship", checkpoint.Approved, ""); err != nil || got.RunID != "mid" {
		t.Fatalf("answer where the gate still waits = %+v, %v; want run mid", got, err)
	}
}

// TestAnswerGateWithoutState: an answer in a directory with no state is
// refused and creates none.
func TestAnswerGateWithoutState(t *testing.T) {
	dir := t.TempDir()
	_, err := AnswerGate(context.Background(), Answer{Dir: dir, Step: "gate", Decision: checkpoint.Approved, By: "ana", At: time.Now()})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "nothing waits for approval") {
		t.Fatalf("err = %v, want a usage error saying nothing waits", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CadenceDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the answer left %s behind (%v)", CadenceDir, err)
	}
}

// TestDecisionReadValues: a decision records the parts of outputs its
// expression read, each as it was, or as its size past maxReadValue; a
// part the output lacks is not recorded.
func TestDecisionReadValues(t *testing.T) {
	big := strings.Repeat("x", maxReadValue)
	out := jsonvalue.Object{"approved": true, "notes": jsonvalue.Object{"long": big, "n": json.Number("12345678901234567890")}}
	tests := []struct {
		fields []string
		want   any // nil: not recorded
	}{
		{[]string{"approved"}, json.RawMessage("true")},
		{[]string{"notes", "n"}, json.RawMessage("12345678901234567890")},
		{[]string{"notes", "long"}, fmt.Sprintf("(%d bytes)", maxReadValue+2)},
		{[]string{"notes", "missing"}, nil},
		{[]string{"approved", "deeper"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.fields, "."), func(t *testing.T) {
			v, ok := outputAt(out, tt.fields)
			if !ok {
				if tt.want != nil {
					t.Fatalf("outputAt found nothing, want %v", tt.want)
				}
				return
			}
			got := readValue(v)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("readValue = %s, want %s", got, tt.want)
			}
		})
	}
}
