package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// abandonment is an unfinished run that cadence run --new abandons: the
// attempts it left running are settled with it (SPEC §7), since no
// process resumes it. Left running, each would take a place of its
// agent's max_concurrent for ever.
type abandonment struct {
	p      *project
	runID  string
	cancel bool // the run is cancelled (Cancel), not abandoned
	settle []func(tx *checkpoint.Tx, now time.Time) error
}

// attempts reads the attempts that the run left running and that its
// abandonment settles: every one, but on a shared database those of a
// step or item a live process still holds (it ends them itself).
func (ab *abandonment) attempts(tx *checkpoint.Tx) ([]checkpoint.Attempt, error) {
	running, err := tx.RunningAttempts(ab.runID)
	if err != nil || !ab.p.shared() {
		return running, err
	}
	out := running[:0]
	for _, a := range running {
		l, err := tx.LiveLease(a.RunID, a.StepID, a.ItemKey)
		if err != nil {
			return nil, err
		}
		if l == nil || ab.p.id.gone(*l) {
			out = append(out, a)
		}
	}
	return out, nil
}

// prepare kills the agents that the run's attempts left running on this
// machine (G6), before commit settles those attempts. A run a live
// process holds is left alone (its abandonment is refused).
func (ab *abandonment) prepare(ctx context.Context) error {
	var running []checkpoint.Attempt
	if err := ab.p.store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		if err := ab.p.heldByOther(tx, ab.runID); err != nil {
			return err
		}
		running, err = ab.attempts(tx)
		return err
	}); err != nil {
		var held *checkpoint.LeaseHeldError
		if errors.As(err, &held) {
			return err
		}
		return fmt.Errorf("read the attempts run %s left running: %w", ab.runID, err)
	}
	for i := range running {
		ab.settle = append(ab.settle, ab.p.attempts.Abandon(ctx, &running[i], ab.cancel))
	}
	return nil
}

// commit settles, in the transaction that abandons the run, the attempts
// prepare found: interrupted, as a resume would have settled them.
func (ab *abandonment) commit(tx *checkpoint.Tx, now time.Time) error {
	for _, settle := range ab.settle {
		if err := settle(tx, now); err != nil {
			return fmt.Errorf("settle the attempts of run %s: %w", ab.runID, err)
		}
	}
	return nil
}
