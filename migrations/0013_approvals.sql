-- Approval gates (SPEC §16.6): one row per gate reached, keyed by the
-- gate's unit (its id, or LOOP/ITERATION/GATE inside a loop). The row is
-- written, with the gate's rendered prompt, in the transaction that
-- commits the gate waiting; `cadence approve` and `cadence reject` fill in
-- the decision once (an UPDATE of a row whose decision is still NULL), so
-- that a second decision is refused and the first stands. The run's
-- process reads the decision and commits the gate's output.
CREATE TABLE approvals (
    run_id       TEXT NOT NULL,
    step_id      TEXT NOT NULL,
    item_key     TEXT NOT NULL DEFAULT '',
    prompt       TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    timeout_at   TEXT,
    decision     TEXT CHECK (decision IN ('approved', 'rejected')),
    comment      TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TEXT,
    PRIMARY KEY (run_id, step_id, item_key),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
) STRICT;
