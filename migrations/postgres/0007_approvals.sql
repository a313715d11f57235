-- 0007_approvals: the same table as SQLite's 0013_approvals.sql; see there.
CREATE TABLE approvals (
    run_id       TEXT COLLATE "C" NOT NULL,
    step_id      TEXT COLLATE "C" NOT NULL,
    item_key     TEXT COLLATE "C" NOT NULL DEFAULT '',
    prompt       TEXT NOT NULL,
    requested_at TEXT COLLATE "C" NOT NULL,
    timeout_at   TEXT COLLATE "C",
    decision     TEXT CHECK (decision IN ('approved', 'rejected')),
    comment      TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TEXT COLLATE "C",
    PRIMARY KEY (run_id, step_id, item_key),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
);
