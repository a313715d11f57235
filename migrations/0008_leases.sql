-- 0008_leases: what several cadence processes sharing one database need
-- (SPEC section 13); a single process on SQLite writes these tables only
-- for documents.
--
-- A lease is a time-limited hold on a run (step_id and item_key '') or on
-- one map item. owner names the holding process; epoch grows by one at
-- every new holder, and every commit of an item's attempt checks it
-- (fencing). A released lease keeps its row with owner ''.
CREATE TABLE leases (
    run_id     TEXT    NOT NULL REFERENCES runs (id),
    step_id    TEXT    NOT NULL DEFAULT '',
    item_key   TEXT    NOT NULL DEFAULT '',
    owner      TEXT    NOT NULL DEFAULT '',
    host       TEXT    NOT NULL DEFAULT '',
    pid        INTEGER NOT NULL DEFAULT 0,
    epoch      INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    expires_at TEXT,
    PRIMARY KEY (run_id, step_id, item_key)
);

-- The items a claim may take, in their order: finished items drop out of
-- the index, so a claim does not read past them.
CREATE INDEX items_open ON steps (run_id, step_id, item_idx)
    WHERE item_key <> '' AND status IN ('pending', 'running', 'waiting');

-- Documents of an attempt that another machine may need to continue the
-- run: the handoff that passed its schema before its checks ran
-- ('candidate'), and the failed-handoff record ('failed_handoff'). The
-- files under .cadence/ are local copies.
CREATE TABLE attempt_documents (
    run_id   TEXT    NOT NULL,
    step_id  TEXT    NOT NULL,
    item_key TEXT    NOT NULL DEFAULT '',
    n        INTEGER NOT NULL,
    kind     TEXT    NOT NULL CHECK (kind IN ('candidate', 'failed_handoff')),
    body     TEXT    NOT NULL,
    PRIMARY KEY (run_id, step_id, item_key, n, kind),
    FOREIGN KEY (run_id, step_id, item_key, n) REFERENCES attempts (run_id, step_id, item_key, n)
);
