-- 0001_init: the first schema of state.db.
--
-- Timestamps are TEXT in RFC 3339 with nine fractional digits in UTC
-- ("2006-01-02T15:04:05.000000000Z"): fixed width, so they sort as text.
-- Tables are STRICT so a value of the wrong type is an error, not a surprise.

CREATE TABLE runs (
    id              TEXT NOT NULL PRIMARY KEY,
    status          TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'abandoned')),
    workflow_path   TEXT NOT NULL,
    workflow_sha256 TEXT NOT NULL,
    workflow_yaml   TEXT NOT NULL,
    budget_usd      REAL,
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    updated_at      TEXT NOT NULL
) STRICT;

CREATE INDEX runs_started ON runs (started_at, id);

-- "Latest unfinished run" is read on every resume.
CREATE INDEX runs_unfinished ON runs (started_at, id)
    WHERE status IN ('running', 'interrupted');

CREATE TABLE steps (
    run_id        TEXT    NOT NULL REFERENCES runs (id),
    step_id       TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    agent         TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'running', 'waiting', 'succeeded', 'failed')),
    max_attempts  INTEGER NOT NULL,
    next_retry_at TEXT,
    delay_ms      INTEGER,
    session_id    TEXT    NOT NULL DEFAULT '',
    fresh_session INTEGER NOT NULL DEFAULT 0,
    handoff_json  TEXT,
    help_rounds   INTEGER NOT NULL DEFAULT 0,
    advice        TEXT    NOT NULL DEFAULT '',
    cost_usd      REAL    NOT NULL DEFAULT 0,
    cost_known    INTEGER NOT NULL DEFAULT 0,
    turns         INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at    TEXT    NOT NULL,
    PRIMARY KEY (run_id, step_id)
) STRICT;

CREATE UNIQUE INDEX steps_order ON steps (run_id, idx);

-- n counts every attempt row of a step, help rounds included; the primary key
-- also serves "last attempt" and "count attempts" without a scan.
CREATE TABLE attempts (
    run_id         TEXT    NOT NULL,
    step_id        TEXT    NOT NULL,
    n              INTEGER NOT NULL CHECK (n >= 1),
    kind           TEXT    NOT NULL CHECK (kind IN ('initial', 'followup', 'fresh', 'help')),
    status         TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'adopted')),
    class          TEXT    NOT NULL DEFAULT '',
    error          TEXT    NOT NULL DEFAULT '',
    details_json   TEXT,
    prompt         TEXT    NOT NULL DEFAULT '',
    started_at     TEXT    NOT NULL,
    finished_at    TEXT,
    pid            INTEGER,
    exit_code      INTEGER,
    session_id     TEXT    NOT NULL DEFAULT '',
    circuit_gen    INTEGER NOT NULL DEFAULT 0,
    delay_ms       INTEGER,
    next_retry_at  TEXT,
    retry_after_ms INTEGER,
    repairs_json   TEXT,
    output_file    TEXT    NOT NULL DEFAULT '',
    failed_handoff TEXT    NOT NULL DEFAULT '',
    cost_usd       REAL,
    turns          INTEGER NOT NULL DEFAULT 0,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    help_context   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, step_id, n),
    FOREIGN KEY (run_id, step_id) REFERENCES steps (run_id, step_id)
) STRICT;

-- One breaker per agent name, shared by every run of the project.
CREATE TABLE circuits (
    agent      TEXT    NOT NULL PRIMARY KEY,
    state      TEXT    NOT NULL,
    failures   INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0,
    opened_at  TEXT,
    open_until TEXT,
    trials     INTEGER NOT NULL DEFAULT 0,
    successes  INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT    NOT NULL
) STRICT;

-- Audit log: circuit resets, abandoned runs, accepted workflow changes.
CREATE TABLE events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT REFERENCES runs (id),
    at     TEXT NOT NULL,
    kind   TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX events_run ON events (run_id, id);
