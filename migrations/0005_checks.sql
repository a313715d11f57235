-- The checks of SPEC section 11: commands run after an attempt's handoff
-- passed its schema. A row is committed before its process starts and
-- again with its result (G1). seq numbers the check runs of one attempt:
-- after a crash during a check, resume runs the attempt's checks again
-- on its stored handoff, and those runs are new rows. item_key is '' for a
-- step's own attempts.
CREATE TABLE checks (
    run_id      TEXT    NOT NULL,
    step_id     TEXT    NOT NULL,
    item_key    TEXT    NOT NULL DEFAULT '',
    n           INTEGER NOT NULL CHECK (n >= 1),
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    name        TEXT    NOT NULL,
    command     TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'interrupted')),
    exit_code   INTEGER,
    signal      TEXT    NOT NULL DEFAULT '',
    timed_out   INTEGER NOT NULL DEFAULT 0 CHECK (timed_out IN (0, 1)),
    pid         INTEGER,
    started_at  TEXT    NOT NULL,
    finished_at TEXT,
    output_file TEXT    NOT NULL DEFAULT '',
    tail        TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, step_id, item_key, n, seq),
    FOREIGN KEY (run_id) REFERENCES runs (id)
) STRICT;
