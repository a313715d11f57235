-- 0002_leases: the same tables as SQLite's 0008_leases.sql; see there.
CREATE TABLE leases (
    run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    step_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    item_key   TEXT COLLATE "C" NOT NULL DEFAULT '',
    owner      TEXT COLLATE "C" NOT NULL DEFAULT '',
    host       TEXT    NOT NULL DEFAULT '',
    pid        BIGINT  NOT NULL DEFAULT 0,
    epoch      BIGINT  NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    expires_at TEXT COLLATE "C",
    PRIMARY KEY (run_id, step_id, item_key)
);

CREATE INDEX items_open ON steps (run_id, step_id, item_idx)
    WHERE item_key <> '' AND status IN ('pending', 'running', 'waiting');

CREATE TABLE attempt_documents (
    run_id   TEXT COLLATE "C" NOT NULL,
    step_id  TEXT COLLATE "C" NOT NULL,
    item_key TEXT COLLATE "C" NOT NULL DEFAULT '',
    n        BIGINT  NOT NULL,
    kind     TEXT COLLATE "C" NOT NULL CHECK (kind IN ('candidate', 'failed_handoff')),
    body     TEXT    NOT NULL,
    PRIMARY KEY (run_id, step_id, item_key, n, kind),
    FOREIGN KEY (run_id, step_id, item_key, n) REFERENCES attempts (run_id, step_id, item_key, n)
);
