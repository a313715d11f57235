package attempt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// shellCheck is a check given as a string, run by /bin/sh.
func shellCheck(name, command string, timeout time.Duration) workflow.Check {
	return workflow.Check{Name: name, Argv: []string{"/bin/sh", "-c", command}, Command: command, Shell: true,
		Timeout: timeout, FeedbackLines: workflow.DefaultFeedbackLines}
}

// TestChecksJudged runs a step's checks as real processes on an accepted
// handoff {"ok": true} (SPEC §11) and commits the attempt they judged: all
// passing, the step succeeds; the first failing one makes the attempt a
// check failure, followed up in the session after the backoff, quoting
// its last lines, and the checks after it do not run; a check whose
// program is not there is the workflow's fault (class config), not
// retried; a check past its timeout is killed and fails.
func TestChecksJudged(t *testing.T) {
	for _, tt := range []struct {
		name    string
		checks  []workflow.Check
		class   string // "" for success
		step    checkpoint.StepStatus
		ran     []string // the statuses of the check rows, in order
		quoted  string   // in the failed-handoff record's check output
		outcome string   // in the diagnosis
	}{
		{name: "every check passes, reading the stored handoff",
			checks: []workflow.Check{shellCheck("vet", "true", time.Minute),
				shellCheck("handoff", `grep -q '"ok":true' "$CADENCE_HANDOFF_PATH" && test "$CADENCE_CHECK" = handoff`, time.Minute)},
			step: checkpoint.StepSucceeded, ran: []string{checkpoint.CheckPassed, checkpoint.CheckPassed}},
		{name: "the second check fails, the third never runs",
			checks: []workflow.Check{shellCheck("vet", "true", time.Minute),
				shellCheck("tests", "echo 'ok   shop/db'; echo '--- FAIL: TestCart' >&2; exit 3", time.Minute),
				shellCheck("lint", "true", time.Minute)},
			class: string(handoff.ClassCheck), step: checkpoint.StepWaiting, ran: []string{checkpoint.CheckPassed, checkpoint.CheckFailed},
			quoted: "--- FAIL: TestCart", outcome: "exited with code 3"},
		{name: "a check that reads another handoff than it was given fails",
			checks: []workflow.Check{shellCheck("handoff", `grep -q '"ok":false' "$CADENCE_HANDOFF_PATH"`, time.Minute)},
			class:  string(handoff.ClassCheck), step: checkpoint.StepWaiting, ran: []string{checkpoint.CheckFailed}, outcome: "exited with code 1"},
		{name: "a check whose program is not there is not retried",
			checks: []workflow.Check{shellCheck("tests", "no-such-program-here --all", time.Minute)},
			class:  string(handoff.ClassConfig), step: checkpoint.StepFailed, ran: []string{checkpoint.CheckFailed}, outcome: "exited with code 127"},
		{name: "a check past its timeout is killed and fails",
			checks: []workflow.Check{shellCheck("slow", "exec sleep 30", 300*time.Millisecond)},
			class:  string(handoff.ClassCheck), step: checkpoint.StepWaiting, ran: []string{checkpoint.CheckFailed}, outcome: "ran past its timeout of 300ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := judgeStep(t, nil, false)
			ws.Retry = testStep(nil).Retry
			ws.Checks = tt.checks
			f := newOutcomeFixture(t, ws, checkpoint.StepRunning, nil, checkpoint.KindInitial)
			f.r.Grace = 100 * time.Millisecond
			tr := f.try(t)
			j := judgement{ok: true, result: handoff.Result{OK: true, JSON: []byte(`{"ok":true}`), Repairs: []string{}}}
			j, err := tr.checkHandoff(t.Context(), j, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(j.class) != tt.class || j.ok != (tt.class == "") {
				t.Fatalf("judged ok %v class %q, want %q (%+v)", j.ok, j.class, tt.class, j.diag)
			}
			if tt.outcome != "" && (j.diag.Check == nil || !strings.Contains(j.diag.Check.Outcome(), tt.outcome)) {
				t.Errorf("diagnosis %+v does not say %q", j.diag, tt.outcome)
			}
			if _, err := tr.commit(t.Context(), nil, j); err != nil {
				t.Fatal(err)
			}
			got, _ := f.committed(t)
			if got.step != tt.step || got.class != tt.class {
				t.Errorf("step %s, attempt class %q; want %s, %q", got.step, got.class, tt.step, tt.class)
			}
			var statuses []string
			err = f.r.Store.View(t.Context(), func(tx *checkpoint.Tx) error {
				rows, err := tx.Checks("r1", ws.ID, "", f.row.N)
				for _, c := range rows {
					statuses = append(statuses, c.Status)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(statuses, " ") != strings.Join(tt.ran, " ") {
				t.Errorf("check rows %v, want %v", statuses, tt.ran)
			}
			if tt.quoted == "" {
				return
			}
			b, err := os.ReadFile(filepath.Join(f.r.Dir, f.row.FailedHandoff))
			if err != nil {
				t.Fatal(err)
			}
			var rec handoff.FailedRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Check == nil || !strings.Contains(rec.Check.Output, tt.quoted) || !strings.Contains(rec.FollowupPrompt, tt.quoted) {
				t.Errorf("the record does not quote %q: check %+v, follow-up %q", tt.quoted, rec.Check, rec.FollowupPrompt)
			}
		})
	}
}
