package checkpoint

import (
	"context"
	"fmt"
)

// Legacy rows: the runs, breakers and project-wide events written before runs recorded their
// project have project ”. adoptRunsQuery and adoptCircuitsQuery give
// them to the project that opens the state for writing; a breaker the
// project already has a row of its own for is left behind.
const (
	// legacyRowsQuery counts whether there is any row to adopt, reading
	// at most one row of each table.
	legacyRowsQuery = `SELECT
		(SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE project = '' LIMIT 1) r) +
		(SELECT COUNT(*) FROM (SELECT 1 FROM circuits WHERE project = '' LIMIT 1) c) +
		(SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE project = '' LIMIT 1) e)`
	adoptRunsQuery   = `UPDATE runs SET project = ? WHERE project = ''`
	adoptEventsQuery = `UPDATE events SET project = ? WHERE project = ''`
	// NOT EXISTS keeps the key (project, agent) unique.
	adoptCircuitsQuery = `UPDATE circuits SET project = ? WHERE project = ''
		AND NOT EXISTS (SELECT 1 FROM circuits c WHERE c.project = ? AND c.agent = circuits.agent)`
)

// SetProject confines the store to the rows of project id: every query
// that names no run reads and writes that project's runs and breakers
// only, and a run of another project is not found even by its id (issue
// 33: several projects share a PostgreSQL state, or a SQLite file named
// by --state). id may be empty only on a read-only store: a project that
// has no id yet reads the rows written before runs recorded their
// project.
//
// On a writable store, the rows written before runs recorded their
// project (project ”) are adopted first, in one transaction: an
// upgraded state of one project keeps its runs. On a state several
// projects shared before the upgrade, those rows cannot be told apart and
// go to the first project that opens it.
//
// Call it once, right after opening, before the store is used by more
// than one goroutine.
func (s *Store) SetProject(ctx context.Context, id string) error {
	if id == "" && !s.readOnly {
		return fmt.Errorf("open %s: the project has no id", s.path)
	}
	if !s.readOnly {
		if err := s.adoptLegacy(ctx, id); err != nil {
			return fmt.Errorf("open %s for project %s: %w", s.path, id, err)
		}
	}
	s.project = id
	return nil
}

// Project returns the id SetProject confined the store to.
func (s *Store) Project() string { return s.project }

// adoptLegacy gives the rows of project ” to project id, reading first
// so that a state without any takes no write lock.
func (s *Store) adoptLegacy(ctx context.Context, id string) error {
	var legacy int
	err := s.View(ctx, func(tx *Tx) error {
		if err := tx.getRow(&legacy, legacyRowsQuery); err != nil {
			return fmt.Errorf("look for rows without a project: %w", err)
		}
		return nil
	})
	if err != nil || legacy == 0 {
		return err
	}
	return s.Update(ctx, func(tx *Tx) error {
		if _, err := tx.exec(adoptRunsQuery, id); err != nil {
			return fmt.Errorf("adopt the runs without a project: %w", err)
		}
		if _, err := tx.exec(adoptEventsQuery, id); err != nil {
			return fmt.Errorf("adopt the events without a project: %w", err)
		}
		if _, err := tx.exec(adoptCircuitsQuery, id, id); err != nil {
			return fmt.Errorf("adopt the breakers without a project: %w", err)
		}
		return nil
	})
}

// projectsQuery lists the projects that have runs in the state, at most
// two: enough to tell whether the state is one project's.
const projectsQuery = `SELECT DISTINCT project FROM runs WHERE project <> '' ORDER BY project LIMIT 2`

// Projects returns the ids of the projects that have runs in the state,
// at most two of them (so a caller can tell whether it is one project's).
func (s *Store) Projects(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.View(ctx, func(tx *Tx) error {
		if err := tx.selectRows(&ids, projectsQuery); err != nil {
			return fmt.Errorf("read the projects of the state: %w", err)
		}
		return nil
	})
	return ids, err
}
