package checkpoint

import (
	"database/sql"
	"fmt"
	"time"
)

// Check statuses. A running check that a crash interrupted becomes
// interrupted when its attempt is settled; the others are final.
const (
	CheckRunning     = "running"
	CheckPassed      = "passed"
	CheckFailed      = "failed"
	CheckInterrupted = "interrupted"
)

var checkTransitions = map[string][]string{
	CheckRunning:     {CheckRunning, CheckPassed, CheckFailed, CheckInterrupted},
	CheckPassed:      nil,
	CheckFailed:      nil,
	CheckInterrupted: nil,
}

// CheckTransition reports whether a check may move from one status to
// another; same-status moves of a running check record its pid.
func CheckTransition(from, to string) error {
	return checkTransition(checkTransitions, from, to)
}

const checkColumns = `run_id, step_id, item_key, n, seq, name, command, status, exit_code, signal,
	timed_out, pid, started_at, finished_at, output_file, tail`

// The check queries, named so the store prepares them once.
const (
	lastCheckSeqQuery = `SELECT COALESCE(MAX(seq), 0) FROM checks
		WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ?`
	checkStatusQuery = `SELECT status FROM checks
		WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ? AND seq = ?`
	attemptChecksQuery = `SELECT ` + checkColumns + ` FROM checks
		WHERE run_id = ? AND step_id = ? AND item_key = ? AND n = ? ORDER BY seq`
	runChecksQuery = `SELECT ` + checkColumns + ` FROM checks
		WHERE run_id = ? ORDER BY step_id, item_key, n, seq`
	checksTableQuery = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'checks'`
	insertCheckQuery = `INSERT INTO checks (` + checkColumns + `) VALUES (
		:run_id, :step_id, :item_key, :n, :seq, :name, :command, :status, :exit_code, :signal,
		:timed_out, :pid, :started_at, :finished_at, :output_file, :tail)`
	updateCheckQuery = `UPDATE checks SET status = :status, exit_code = :exit_code, signal = :signal,
		timed_out = :timed_out, pid = :pid, finished_at = :finished_at, output_file = :output_file,
		tail = :tail
		WHERE run_id = :run_id AND step_id = :step_id AND item_key = :item_key AND n = :n AND seq = :seq`
)

type checkRow struct {
	RunID      string          `db:"run_id"`
	StepID     string          `db:"step_id"`
	ItemKey    string          `db:"item_key"`
	N          int64           `db:"n"`
	Seq        int64           `db:"seq"`
	Name       string          `db:"name"`
	Command    string          `db:"command"`
	Status     string          `db:"status"`
	ExitCode   sql.Null[int64] `db:"exit_code"`
	Signal     string          `db:"signal"`
	TimedOut   bool            `db:"timed_out"`
	PID        sql.Null[int64] `db:"pid"`
	StartedAt  dbTime          `db:"started_at"`
	FinishedAt nullTime        `db:"finished_at"`
	OutputFile string          `db:"output_file"`
	Tail       string          `db:"tail"`
}

func checkToRow(c Check) checkRow {
	return checkRow{
		RunID: c.RunID, StepID: c.StepID, ItemKey: c.ItemKey, N: int64(c.N), Seq: int64(c.Seq),
		Name: c.Name, Command: c.Command, Status: c.Status, ExitCode: nullInt(c.ExitCode),
		Signal: c.Signal, TimedOut: c.TimedOut, PID: nullInt(c.PID),
		StartedAt: dbTime(c.StartedAt), FinishedAt: nullTime{c.FinishedAt},
		OutputFile: c.OutputFile, Tail: cleanText(c.Tail),
	}
}

func (r checkRow) check() Check {
	return Check{
		RunID: r.RunID, StepID: r.StepID, ItemKey: r.ItemKey, N: int(r.N), Seq: int(r.Seq),
		Name: r.Name, Command: r.Command, Status: r.Status, ExitCode: intPtr(r.ExitCode),
		Signal: r.Signal, TimedOut: r.TimedOut, PID: intPtr(r.PID),
		StartedAt: time.Time(r.StartedAt), FinishedAt: r.FinishedAt.t,
		OutputFile: r.OutputFile, Tail: r.Tail,
	}
}

func (c Check) what() string {
	return fmt.Sprintf("check %s/%s/%s/%d/%d", c.RunID, c.StepID, c.ItemKey, c.N, c.Seq)
}

// InsertCheck records a check about to run. c.Seq must be one more than the
// attempt's last check run (1 for the first), and c.Status running.
func (t *Tx) InsertCheck(c Check) error {
	what := c.what()
	if err := t.mustWrite("insert " + what); err != nil {
		return err
	}
	if c.Status != CheckRunning {
		return fmt.Errorf("insert %s: %w: a check starts running, not %q", what, ErrInvalidTransition, c.Status)
	}
	var last int
	if err := t.getRow(&last, lastCheckSeqQuery, c.RunID, c.StepID, c.ItemKey, c.N); err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	if c.Seq != last+1 {
		return fmt.Errorf("insert %s: %w: the attempt's last check run is %d", what, ErrAttemptNumber, last)
	}
	if _, err := t.namedExec(insertCheckQuery, checkToRow(c)); err != nil {
		return fmt.Errorf("insert %s: %w", what, err)
	}
	return nil
}

// UpdateCheck records a check's pid or result, after checking the status
// change with CheckTransition.
func (t *Tx) UpdateCheck(c Check) error {
	what := c.what()
	if err := t.mustWrite("update " + what); err != nil {
		return err
	}
	var from string
	if err := t.get(&from, what, checkStatusQuery, c.RunID, c.StepID, c.ItemKey, c.N, c.Seq); err != nil {
		return err
	}
	if err := CheckTransition(from, c.Status); err != nil {
		return fmt.Errorf("update %s: %w", what, err)
	}
	return t.execOne(what, updateCheckQuery, checkToRow(c))
}

// Checks returns the check runs of one attempt, in order.
func (t *Tx) Checks(runID, stepID, itemKey string, n int) ([]Check, error) {
	return t.checks(fmt.Sprintf("checks of attempt %s/%s/%s/%d", runID, stepID, itemKey, n),
		attemptChecksQuery, runID, stepID, itemKey, n)
}

// RunChecks returns every check run of a run, by step, item, attempt and
// order, for inspect. A database that an older cadence wrote and that
// could not be brought up to date (inspect reads a read-only one as it is)
// has no checks table, and no checks.
func (t *Tx) RunChecks(runID string) ([]Check, error) {
	var tables int
	if err := t.getRow(&tables, checksTableQuery); err != nil {
		return nil, fmt.Errorf("read checks of run %s: %w", runID, err)
	}
	if tables == 0 {
		return nil, nil
	}
	return t.checks("checks of run "+runID, runChecksQuery, runID)
}

func (t *Tx) checks(what, query string, args ...any) ([]Check, error) {
	var rows []checkRow
	if err := t.selectRows(&rows, query, args...); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	out := make([]Check, len(rows))
	for i, r := range rows {
		out[i] = r.check()
	}
	return out, nil
}
