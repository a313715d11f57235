package checkpoint

import "fmt"

const circuitColumns = `agent, state, failures, generation, opened_at, open_until, trials, successes, updated_at, config_hash`

// The circuit queries, named so the store prepares them once.
const (
	// A breaker is its project's: every query names the store's.
	circuitQuery    = `SELECT ` + circuitColumns + ` FROM circuits WHERE project = ? AND agent = ?`
	circuitsQuery   = `SELECT ` + circuitColumns + ` FROM circuits WHERE project = ? ORDER BY agent`
	putCircuitQuery = `INSERT INTO circuits (project, ` + circuitColumns + `) VALUES (:project,
		:agent, :state, :failures, :generation, :opened_at, :open_until, :trials, :successes, :updated_at, :config_hash)
		ON CONFLICT (project, agent) DO UPDATE SET state = excluded.state, failures = excluded.failures,
		generation = excluded.generation, opened_at = excluded.opened_at,
		open_until = excluded.open_until, trials = excluded.trials,
		successes = excluded.successes, updated_at = excluded.updated_at,
		config_hash = excluded.config_hash`
)

// Circuit returns the persisted breaker of an agent, or ErrNotFound when the
// agent has never had one recorded (its breaker is closed).
func (t *Tx) Circuit(agent string) (*Circuit, error) {
	var row circuitRow
	if err := t.get(&row, "circuit of agent "+agent,
		circuitQuery, t.project, agent); err != nil {
		return nil, err
	}
	c := row.circuit()
	return &c, nil
}

// PutCircuit inserts or replaces the breaker of c.Agent. Callers write it in
// the same transaction as the attempt outcome that changed it (spec 6.4).
func (t *Tx) PutCircuit(c Circuit) error {
	what := "circuit of agent " + c.Agent
	if err := t.mustWrite("put " + what); err != nil {
		return err
	}
	row := circuitToRow(c)
	row.Project = t.project
	if _, err := t.namedExec(putCircuitQuery, row); err != nil {
		return fmt.Errorf("put %s: %w", what, err)
	}
	return nil
}

// Circuits returns every persisted breaker, by agent name.
func (t *Tx) Circuits() ([]Circuit, error) {
	var rows []circuitRow
	if err := t.selectRows(&rows, circuitsQuery, t.project); err != nil {
		return nil, fmt.Errorf("read circuits: %w", err)
	}
	out := make([]Circuit, len(rows))
	for i, r := range rows {
		out[i] = r.circuit()
	}
	return out, nil
}
