package orchestrator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cadence-dev/cadence/internal/address"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// DeadRetry selects the dead-lettered items `cadence dlq retry` reopens.
type DeadRetry struct {
	RunID string   // "" means the latest run
	Step  string   // "" means every map step
	Keys  []string // the items' keys; empty with All
	All   bool
}

// deadRetryRun finds the run whose dead items are retried: the given one or
// the latest, which must not have ended for good.
func deadRetryRun(tx *checkpoint.Tx, runID string) (*checkpoint.Run, error) {
	var (
		r   *checkpoint.Run
		err error
	)
	if runID == "" {
		r, err = tx.LatestRun()
	} else {
		r, err = tx.Run(runID)
	}
	if errors.Is(err, checkpoint.ErrNotFound) {
		if runID == "" {
			return nil, usagef("no runs yet: the dead-letter queue is empty")
		}
		return nil, usagef("no run %q", runID)
	}
	if err != nil {
		return nil, err
	}
	switch r.Status() {
	case checkpoint.RunSucceeded:
		return nil, usagef("run %s succeeded: its dead items were within max_failures and the steps after the map have used its output; "+
			"a succeeded run is never run again: to run the dead items again, start a new run (cadence run); to make the run fail on them instead, lower the map's max_failures", r.ID)
	case checkpoint.RunAbandoned:
		return nil, usagef("run %s was abandoned; its dead items cannot be retried", r.ID)
	case checkpoint.RunCancelled:
		return nil, usagef("run %s was cancelled; its dead items cannot be retried", r.ID)
	}
	return r, nil
}

// reopenDead reopens the selected dead items of a run with fresh attempts:
// each leaves the dead-letter queue and becomes pending with max_attempts
// raised by what it already used, so its history stays and its attempt
// numbers continue; it starts a fresh session. A map step that failed
// because of them is reopened too.
func (p *project) reopenDead(tx *checkpoint.Tx, runID string, sel *DeadRetry, now time.Time) error {
	dead, err := tx.DeadLetters(runID)
	if err != nil {
		return err
	}
	var picked []checkpoint.DeadLetter
	found := map[string]bool{}
	for _, d := range dead {
		if sel.Step != "" && d.StepID != sel.Step && address.Of(d.StepID).StepName() != sel.Step {
			continue
		}
		if sel.All || slices.Contains(sel.Keys, d.ItemKey) {
			picked = append(picked, d)
			found[d.ItemKey] = true
		}
	}
	var missing []string
	for _, k := range sel.Keys {
		if !found[k] {
			missing = append(missing, k)
		}
	}
	switch {
	case len(missing) > 0:
		return usagef("run %s has no dead item with key %s (see cadence dlq list)", runID, strings.Join(missing, ", "))
	case len(picked) == 0:
		return usagef("run %s has no dead items to retry", runID)
	}
	steps := map[string]bool{}
	for _, d := range picked {
		u := checkpoint.Unit{RunID: runID, StepID: d.StepID, Item: d.ItemKey}
		ws, _ := p.wf.AtPath(d.StepID) // a map step at any depth: LOOP/N/STEP inside a loop
		if ws == nil || ws.Map == nil {
			return usagef("step %s of run %s is no longer a map step in the workflow", d.StepID, runID)
		}
		if it := address.Of(d.StepID).Parent().String(); it != "" {
			row, err := tx.Step(runID, it)
			if err != nil {
				return err
			}
			if row.Status() == checkpoint.StepSucceeded {
				return usagef("item %q of step %s died in iteration %s, which has ended (the loop went on within max_failures): "+
					"a finished iteration never runs again, so its dead items can be shown, not retried", d.ItemKey, d.StepID, it)
			}
		}
		if err := tx.RemoveDeadLetter(u); err != nil {
			return err
		}
		steps[d.StepID] = true
		if d.Class == checkpoint.DeadMergeConflict {
			// The item's work succeeded and is on its branch: what is
			// retried is the merge, once the branch merges cleanly.
			if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: "item_reopened",
				Detail: fmt.Sprintf("the merge of item %q of step %s is retried by `dlq retry`", d.ItemKey, d.StepID)}); err != nil {
				return err
			}
			continue
		}
		it, err := tx.Unit(u)
		if err != nil {
			return err
		}
		used, err := tx.UnitCountCounted(u)
		if err != nil {
			return err
		}
		it.MaxAttempts = used + ws.Retry.MaxAttempts
		it.FreshSession = true
		if err := tx.StepReopened(it, now); err != nil {
			return err
		}
		if err := tx.AddEvent(checkpoint.Event{RunID: runID, At: now, Kind: "item_reopened",
			Detail: fmt.Sprintf("item %q of step %s reopened by `dlq retry` with %d more attempts (was %s: %s)",
				d.ItemKey, d.StepID, ws.Retry.MaxAttempts, d.Class, d.Signature)}); err != nil {
			return err
		}
		steps[d.StepID] = true
	}
	for id := range steps {
		// The map step, and, for one inside a loop, the iteration and
		// the loop it failed (LOOP/N/STEP: LOOP/N, then LOOP, and so on
		// up): the loop goes on in the iteration the item died in.
		for path := address.Of(id); !path.IsZero(); path = path.Parent() {
			s, err := tx.Step(runID, path.String())
			if err != nil {
				return err
			}
			if s.Status() == checkpoint.StepFailed {
				if err := tx.StepReopened(s, now); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reopenDeadOfFailedMaps reopens every dead item of each map step that
// failed (resume --retry-failed), which reopens the step too.
func (p *project) reopenDeadOfFailedMaps(tx *checkpoint.Tx, runID string, now time.Time) error {
	steps, err := tx.Steps(runID)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if s.Status() != checkpoint.StepFailed {
			continue
		}
		items, err := tx.Items(runID, s.ID)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			continue
		}
		if err := p.reopenDead(tx, runID, &DeadRetry{Step: s.ID, All: true}, now); err != nil {
			return err
		}
	}
	return nil
}
