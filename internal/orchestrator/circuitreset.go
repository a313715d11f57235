package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/projectid"
)

// ResetCircuit closes an agent's circuit by hand and records that it did.
// It takes the project lock, like every command that writes state.
func ResetCircuit(ctx context.Context, dir, state, agentName string, now time.Time) (before string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	cdir := filepath.Join(abs, CadenceDir)
	lock, err := checkpoint.AcquireLock(cdir)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	store, err := projectid.Open(ctx, abs, history.StateTarget(abs, state))
	if err != nil {
		return "", err
	}
	defer store.Close()
	err = store.Update(ctx, func(tx *checkpoint.Tx) error {
		if _, err := tx.Circuit(agentName); errors.Is(err, checkpoint.ErrNotFound) {
			return usagef("no circuit recorded for agent %q in %s (an agent gets one when it first runs)", agentName, abs)
		}
		b, err := attempt.LoadBreaker(tx, agentName)
		if err != nil {
			return err
		}
		before = string(b.State)
		next := circuit.Reset(b, now)
		if err := tx.PutCircuit(attempt.BreakerRow(next, now)); err != nil {
			return err
		}
		return tx.AddEvent(checkpoint.Event{At: now, Kind: "circuit_reset",
			Detail: fmt.Sprintf("circuit of agent %s reset by hand (was %s, %d failures)", agentName, b.State, b.Failures)})
	})
	return before, err
}
