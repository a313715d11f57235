package checkpoint

import "fmt"

// AddEvent appends e to the audit log; e.ID is ignored and assigned by the
// database.
func (t *Tx) AddEvent(e Event) error {
	if err := t.mustWrite("add event " + e.Kind); err != nil {
		return err
	}
	row := eventToRow(e)
	row.Project = t.project
	if _, err := t.namedExec(`INSERT INTO events (project, run_id, at, kind, detail)
		VALUES (:project, :run_id, :at, :kind, :detail)`, row); err != nil {
		return fmt.Errorf("add event %s: %w", e.Kind, err)
	}
	return nil
}

// Events returns the audit log of a run in the order it was written; with
// runID "" it returns the project-wide events (those of no run) of the
// store's project.
func (t *Tx) Events(runID string) ([]Event, error) {
	var rows []eventRow
	var err error
	if runID == "" {
		err = t.selectRows(&rows, `SELECT id, run_id, at, kind, detail FROM events
			WHERE run_id IS NULL AND project = ? ORDER BY id`, t.project)
	} else {
		err = t.selectRows(&rows, `SELECT id, run_id, at, kind, detail FROM events
			WHERE run_id = ? ORDER BY id`, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("read events of run %q: %w", runID, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}
