package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"log/slog"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// runRows are the step rows of the run a resume will most likely continue,
// read while the workflow loads, with the data of each succeeded row's
// envelope decoded: a resume of a long run would otherwise read and decode
// them after the load, one core idle while the other parses the workflow.
//
// They are read before the run is taken, so they are used only where
// nothing can have written the run's steps since: on SQLite, whose
// workflow lock this process holds, for a run that is unfinished (taking
// a failed one reopens its steps), and when taking the run applied no
// changed workflow (see Resume). A process that answers a gate meanwhile is the same race as
// one that answers it just after the rows are read again, which the gate
// settles by reading its own row.
type runRows struct {
	runID string
	steps []checkpoint.Step
	data  map[string]decodedData // by step row id
	// restore rewrites the envelope files of the succeeded steps among
	// steps (restoreEnvelopes) and sends what that returned on restored;
	// a map's items are left to the loop, which knows the map steps from
	// the workflow.
	restore  func()
	restored chan error
}

// decodedData is the data of the envelope raw, decoded.
type decodedData struct {
	raw []byte
	v   any
}

// errNotResumed ends the reading of rows ahead for a run that is not
// plainly resumed.
var errNotResumed = errors.New("the run is not unfinished")

// rowsAhead says which run's rows to read ahead, and where.
type rowsAhead struct {
	log   *slog.Logger
	dir   string // the project directory
	runID string // the run, or "": the latest unfinished run of the workflow at rel
	rel   string
}

// read reads the rows of the run with store, to be used before their
// restore makes the envelope files of the run's succeeded steps hold what
// their rows committed; nil when there is no such run, on a shared
// database, or on any error reading them (the resume then reads them
// itself and reports what is wrong).
func (a rowsAhead) read(ctx context.Context, store *checkpoint.Store) *runRows {
	if store.Shared() {
		return nil
	}
	rows := &runRows{}
	err := store.View(ctx, func(tx *checkpoint.Tx) error {
		var r *checkpoint.Run
		var err error
		if a.runID == "" {
			r, err = tx.LatestUnfinishedRunOf(a.rel)
		} else {
			r, err = tx.Run(a.runID)
		}
		if err != nil {
			return err
		}
		if st := r.Status(); st != checkpoint.RunRunning && st != checkpoint.RunInterrupted {
			return errNotResumed // a resume that may refuse it writes nothing for it
		}
		rows.runID = r.ID
		rows.steps, err = tx.Steps(r.ID)
		return err
	})
	if err != nil {
		return nil
	}
	rows.data = make(map[string]decodedData, len(rows.steps))
	var succeeded []checkpoint.Step
	for _, s := range rows.steps {
		if s.Status() != checkpoint.StepSucceeded || len(s.HandoffJSON) == 0 {
			continue
		}
		succeeded = append(succeeded, s)
		if v, err := attempt.EnvelopeData(s.HandoffJSON); err == nil {
			rows.data[s.ID] = decodedData{raw: s.HandoffJSON, v: v}
		}
	}
	rows.restored = make(chan error, 1)
	rows.restore = func() { rows.restored <- restoreEnvelopes(a.log, a.dir, succeeded) }
	return rows
}

// envelopeData is attempt.EnvelopeData of the row id's envelope envJSON,
// taken from the rows read ahead when they hold the same envelope. Each
// value is handed out once.
func (r *runRows) envelopeData(id string, envJSON []byte) (any, error) {
	if r != nil {
		if d, ok := r.data[id]; ok && bytes.Equal(d.raw, envJSON) {
			delete(r.data, id)
			return d.v, nil
		}
	}
	return attempt.EnvelopeData(envJSON)
}

// readingRows is the reading of runRows beside the workflow's load.
type readingRows struct {
	done chan struct{} // closed once rows is set
	rows *runRows
	// finished is closed once the reading has ended, its restore of the
	// envelope files included: the project waits for it before it lets
	// go of its store and lock.
	finished chan struct{}
}

// take waits for the rows and returns them when they are run runID's, nil
// otherwise. They are handed out once.
func (r *readingRows) take(runID string) *runRows {
	if r == nil {
		return nil
	}
	<-r.done
	rows := r.rows
	r.rows = nil
	if rows == nil || rows.runID != runID {
		return nil
	}
	return rows
}
