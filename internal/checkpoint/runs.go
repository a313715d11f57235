package checkpoint

import (
	"fmt"
	"path/filepath"
)

const runColumns = `id, status, workflow_path, workflow_sha256, workflow_yaml, workflow_files, budget_usd,
	started_at, finished_at, updated_at, inputs_json`

// Queries on the resume path, named so a test can check their plans.
const (
	// Every query of runs that names no run id reads the store's project
	// only (SetProject): its first parameter.
	latestRunQuery = `SELECT ` + runColumns + ` FROM runs WHERE project = ? ORDER BY started_at DESC, id DESC LIMIT 1`
	// The WHERE clause repeats the partial index runs_project_unfinished
	// verbatim so SQLite uses it.
	latestUnfinishedRunQuery = `SELECT ` + runColumns + ` FROM runs
		WHERE project = ? AND status IN ('running', 'interrupted')
		ORDER BY started_at DESC, id DESC LIMIT 1`
	// unfinishedRunsQuery is what a worker reads at every poll: it
	// repeats runs_project_unfinished too, so the finished history is
	// not read.
	unfinishedRunsQuery = `SELECT ` + runColumns + ` FROM runs
		WHERE project = ? AND status IN ('running', 'interrupted')
		ORDER BY started_at, id`
)

// The other run queries, named so the store prepares them once.
const (
	// A run of another project is not found, even by its id.
	runQuery       = `SELECT ` + runColumns + ` FROM runs WHERE id = ? AND project = ?`
	runStatusQuery = `SELECT status FROM runs WHERE id = ? AND project = ?`
	runsQuery      = `SELECT ` + runColumns + ` FROM runs WHERE project = ? ORDER BY started_at, id`
	insertRunQuery = `INSERT INTO runs (project, ` + runColumns + `) VALUES (:project,
		:id, :status, :workflow_path, :workflow_sha256, :workflow_yaml, :workflow_files, :budget_usd,
		:started_at, :finished_at, :updated_at, :inputs_json)`
	updateRunQuery = `UPDATE runs SET status = :status, workflow_path = :workflow_path,
		workflow_sha256 = :workflow_sha256, workflow_yaml = :workflow_yaml, workflow_files = :workflow_files,
		budget_usd = :budget_usd,
		started_at = :started_at, finished_at = :finished_at, updated_at = :updated_at
		WHERE id = :id AND project = :project`
	runCostQuery = `SELECT
		COALESCE(SUM(cost_usd), 0) AS cost,
		COALESCE(SUM(CASE WHEN cost_usd IS NULL AND finished_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS unknown
		FROM attempts WHERE run_id = ?`
	// runUsageQuery adds the token counts to runCostQuery's, for the
	// listing of runs.
	runUsageQuery = `SELECT
		COALESCE(SUM(cost_usd), 0) AS cost,
		COALESCE(SUM(CASE WHEN cost_usd IS NULL AND finished_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS unknown,
		COALESCE(SUM(input_tokens), 0) AS input_tokens,
		COALESCE(SUM(cached_tokens), 0) AS cached_tokens,
		COALESCE(SUM(output_tokens), 0) AS output_tokens
		FROM attempts WHERE run_id = ?`
)

// CreateRun inserts a new run and its steps.
func (t *Tx) CreateRun(r Run, steps []Step) error {
	what := fmt.Sprintf("run %s", r.ID)
	if err := t.mustWrite("create " + what); err != nil {
		return err
	}
	if !knownStatus(runTransitions, r.status) {
		return fmt.Errorf("create %s: %w: unknown status %q", what, ErrInvalidTransition, r.status)
	}
	if _, err := t.namedExec(insertRunQuery, t.runRow(r)); err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	for _, s := range steps {
		if s.RunID != r.ID {
			return fmt.Errorf("create %s: step %s belongs to run %q", what, s.ID, s.RunID)
		}
		if err := t.insertStep(s); err != nil {
			return err
		}
	}
	return nil
}

// UpdateRun replaces every field of the run with r.ID, after checking the
// status change with RunTransition.
func (t *Tx) UpdateRun(r Run) error {
	what := fmt.Sprintf("run %s", r.ID)
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	var from string
	if err := t.get(&from, what, runStatusQuery, r.ID, t.project); err != nil {
		return err
	}
	if err := RunTransition(RunStatus(from), r.status); err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	return t.execOne(what, updateRunQuery, t.runRow(r))
}

// runRow is r as a row of the store's project.
func (t *Tx) runRow(r Run) runRow {
	row := runToRow(r)
	row.Project = t.project
	return row
}

// Run returns the run with the given id, or ErrNotFound.
func (t *Tx) Run(id string) (*Run, error) {
	return t.oneRun("run "+id, runQuery, id, t.project)
}

// LatestRun returns the most recently started run (ties broken by id), or
// ErrNotFound when the project has none.
func (t *Tx) LatestRun() (*Run, error) {
	return t.oneRun("latest run", latestRunQuery, t.project)
}

// LatestUnfinishedRun returns the most recently started run that is running
// or interrupted — the one `cadence resume` continues — or ErrNotFound.
func (t *Tx) LatestUnfinishedRun() (*Run, error) {
	return t.oneRun("latest unfinished run", latestUnfinishedRunQuery, t.project)
}

// LatestUnfinishedRunOf returns the most recently started unfinished run
// of the workflow file workflowPath (as the run records it, relative to
// the project), or ErrNotFound. Each workflow has at most one.
func (t *Tx) LatestUnfinishedRunOf(workflowPath string) (*Run, error) {
	runs, err := t.UnfinishedRuns()
	if err != nil {
		return nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if filepath.Clean(runs[i].WorkflowPath) == filepath.Clean(workflowPath) {
			return &runs[i], nil
		}
	}
	return nil, fmt.Errorf("latest unfinished run of %s: %w", workflowPath, ErrNotFound)
}

// LatestRunOf returns the most recently started run of the workflow file
// workflowPath, or ErrNotFound.
func (t *Tx) LatestRunOf(workflowPath string) (*Run, error) {
	runs, err := t.Runs()
	if err != nil {
		return nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if filepath.Clean(runs[i].WorkflowPath) == filepath.Clean(workflowPath) {
			return &runs[i], nil
		}
	}
	return nil, fmt.Errorf("latest run of %s: %w", workflowPath, ErrNotFound)
}

// Runs returns every run, oldest first.
func (t *Tx) Runs() ([]Run, error) {
	return t.runs("runs", runsQuery)
}

// UnfinishedRuns returns the runs that are running or interrupted, oldest
// first, without reading the finished ones.
func (t *Tx) UnfinishedRuns() ([]Run, error) {
	return t.runs("unfinished runs", unfinishedRunsQuery)
}

func (t *Tx) runs(what, query string) ([]Run, error) {
	var rows []runRow
	if err := t.selectRows(&rows, query, t.project); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	runs := make([]Run, len(rows))
	for i, r := range rows {
		runs[i] = r.run()
	}
	return runs, nil
}

func (t *Tx) oneRun(what, query string, args ...any) (*Run, error) {
	var row runRow
	if err := t.get(&row, what, query, args...); err != nil {
		return nil, err
	}
	r := row.run()
	return &r, nil
}

// RunUsage is what a run's attempts spent, summed over all of them.
type RunUsage struct {
	CostUSD float64 `db:"cost"`
	// CostUnknown counts the finished attempts whose agent reported no
	// cost: CostUSD is then a lower bound.
	CostUnknown  int   `db:"unknown"`
	InputTokens  int64 `db:"input_tokens"`
	CachedTokens int64 `db:"cached_tokens"` // the part of InputTokens served from a cache
	OutputTokens int64 `db:"output_tokens"`
}

// RunUsage returns what the attempts of run runID spent.
func (t *Tx) RunUsage(runID string) (RunUsage, error) {
	var u RunUsage
	if err := t.getRow(&u, runUsageQuery, runID); err != nil {
		return RunUsage{}, fmt.Errorf("read the usage of run %s: %w", runID, err)
	}
	return u, nil
}

// RunCost returns the sum of the run's attempt costs and the number of
// finished attempts whose cost is unknown (the agent reported none), so a
// caller can show the sum as a lower bound.
func (t *Tx) RunCost(runID string) (cost float64, unknown int, err error) {
	var row struct {
		Cost    float64 `db:"cost"`
		Unknown int     `db:"unknown"`
	}
	if err := t.getRow(&row, runCostQuery, runID); err != nil {
		return 0, 0, fmt.Errorf("read cost of run %s: %w", runID, err)
	}
	return row.Cost, row.Unknown, nil
}
