-- 0001_init: the schema of the state database on PostgreSQL, the same
-- tables as SQLite's after migrations 0001 to 0007: same columns, primary
-- keys, foreign keys, CHECK constraints and (partial) indexes.
--
-- Differences, and why:
-- - Timestamps stay TEXT in RFC 3339 with nine fractional digits in UTC
--   ("2006-01-02T15:04:05.000000000Z"), as on SQLite: fixed width, so they
--   sort as text, and both engines scan them the same way.
-- - Keys, names and timestamps are COLLATE "C": ORDER BY then compares
--   bytes, as SQLite does, whatever the database's default collation.
-- - SQLite's INTEGER is 64 bits: BIGINT. REAL: DOUBLE PRECISION.
-- - Flags SQLite keeps as INTEGER 0 or 1 are BOOLEAN here; queries compare
--   them with TRUE and FALSE, which SQLite reads as 1 and 0.
-- - events.id is an identity column instead of AUTOINCREMENT.
--
-- The schema_version table that records the applied migrations is created
-- by cadence itself, in the transaction of the first migration.

CREATE TABLE runs (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    status          TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'abandoned')),
    workflow_path   TEXT NOT NULL,
    workflow_sha256 TEXT NOT NULL,
    workflow_yaml   TEXT NOT NULL,
    budget_usd      DOUBLE PRECISION,
    started_at      TEXT COLLATE "C" NOT NULL,
    finished_at     TEXT COLLATE "C",
    updated_at      TEXT COLLATE "C" NOT NULL
);

CREATE INDEX runs_started ON runs (started_at, id);

-- "Latest unfinished run" is read on every resume.
CREATE INDEX runs_unfinished ON runs (started_at, id)
    WHERE status IN ('running', 'interrupted');

-- A step's state, or an item's of a map step (item_key not ''): see
-- SQLite's 0006_map_items.sql.
CREATE TABLE steps (
    run_id        TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    step_id       TEXT COLLATE "C" NOT NULL,
    item_key      TEXT COLLATE "C" NOT NULL DEFAULT '',
    idx           BIGINT  NOT NULL,
    item_idx      BIGINT  NOT NULL DEFAULT 0,
    item_json     TEXT,
    agent         TEXT COLLATE "C" NOT NULL,
    status        TEXT COLLATE "C" NOT NULL CHECK (status IN ('pending', 'running', 'waiting', 'succeeded', 'failed')),
    max_attempts  BIGINT  NOT NULL,
    next_retry_at TEXT COLLATE "C",
    delay_ms      BIGINT,
    session_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    fresh_session BOOLEAN NOT NULL DEFAULT FALSE,
    handoff_json  TEXT,
    help_rounds   BIGINT  NOT NULL DEFAULT 0,
    advice        TEXT    NOT NULL DEFAULT '',
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_known    BOOLEAN NOT NULL DEFAULT FALSE,
    turns         BIGINT  NOT NULL DEFAULT 0,
    input_tokens  BIGINT  NOT NULL DEFAULT 0,
    output_tokens BIGINT  NOT NULL DEFAULT 0,
    updated_at    TEXT COLLATE "C" NOT NULL,
    base_commit   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, step_id, item_key)
);

-- A run's steps in workflow order; a map step's items in their order.
CREATE UNIQUE INDEX steps_order ON steps (run_id, idx) WHERE item_key = '';
CREATE UNIQUE INDEX items_order ON steps (run_id, step_id, item_idx) WHERE item_key <> '';
-- Every unit of a run in order, each step followed by its items.
CREATE UNIQUE INDEX units_order ON steps (run_id, idx, item_idx);

-- n counts every attempt row of a unit, help rounds included.
CREATE TABLE attempts (
    run_id         TEXT COLLATE "C" NOT NULL,
    step_id        TEXT COLLATE "C" NOT NULL,
    item_key       TEXT COLLATE "C" NOT NULL DEFAULT '',
    n              BIGINT  NOT NULL CHECK (n >= 1),
    kind           TEXT COLLATE "C" NOT NULL CHECK (kind IN ('initial', 'followup', 'fresh', 'help')),
    status         TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'adopted')),
    class          TEXT    NOT NULL DEFAULT '',
    error          TEXT    NOT NULL DEFAULT '',
    details_json   TEXT,
    prompt         TEXT    NOT NULL DEFAULT '',
    started_at     TEXT COLLATE "C" NOT NULL,
    finished_at    TEXT COLLATE "C",
    pid            BIGINT,
    exit_code      BIGINT,
    session_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    circuit_gen    BIGINT  NOT NULL DEFAULT 0,
    delay_ms       BIGINT,
    next_retry_at  TEXT COLLATE "C",
    retry_after_ms BIGINT,
    repairs_json   TEXT,
    output_file    TEXT    NOT NULL DEFAULT '',
    failed_handoff TEXT    NOT NULL DEFAULT '',
    cost_usd       DOUBLE PRECISION,
    turns          BIGINT  NOT NULL DEFAULT 0,
    input_tokens   BIGINT  NOT NULL DEFAULT 0,
    output_tokens  BIGINT  NOT NULL DEFAULT 0,
    help_context   TEXT    NOT NULL DEFAULT '',
    uncounted      BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (run_id, step_id, item_key, n),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
);

-- The attempts resume settles first (G5): only running ones.
CREATE INDEX attempts_running ON attempts (run_id, step_id, item_key, n)
    WHERE status = 'running';

-- One breaker per agent name, shared by every run of the project.
CREATE TABLE circuits (
    agent      TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    state      TEXT COLLATE "C" NOT NULL,
    failures   BIGINT NOT NULL DEFAULT 0,
    generation BIGINT NOT NULL DEFAULT 0,
    opened_at  TEXT COLLATE "C",
    open_until TEXT COLLATE "C",
    trials     BIGINT NOT NULL DEFAULT 0,
    successes  BIGINT NOT NULL DEFAULT 0,
    updated_at TEXT COLLATE "C" NOT NULL
);

-- Audit log: circuit resets, abandoned runs, accepted workflow changes.
CREATE TABLE events (
    id     BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id TEXT COLLATE "C" REFERENCES runs (id),
    at     TEXT COLLATE "C" NOT NULL,
    kind   TEXT COLLATE "C" NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);

CREATE INDEX events_run ON events (run_id, id);

-- The message history of sessions cadence keeps itself (the openai preset).
CREATE TABLE session_messages (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    run_id     TEXT COLLATE "C" NOT NULL,
    step_id    TEXT COLLATE "C" NOT NULL,
    item_key   TEXT COLLATE "C" NOT NULL DEFAULT '',
    attempt    BIGINT NOT NULL,
    role       TEXT COLLATE "C" NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content    TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
);

-- The checks of SPEC section 11, one row per run of a check command.
CREATE TABLE checks (
    run_id      TEXT COLLATE "C" NOT NULL,
    step_id     TEXT COLLATE "C" NOT NULL,
    item_key    TEXT COLLATE "C" NOT NULL DEFAULT '',
    n           BIGINT  NOT NULL CHECK (n >= 1),
    seq         BIGINT  NOT NULL CHECK (seq >= 1),
    name        TEXT COLLATE "C" NOT NULL,
    command     TEXT    NOT NULL,
    status      TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'interrupted')),
    exit_code   BIGINT,
    signal      TEXT    NOT NULL DEFAULT '',
    timed_out   BOOLEAN NOT NULL DEFAULT FALSE,
    pid         BIGINT,
    started_at  TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    output_file TEXT    NOT NULL DEFAULT '',
    tail        TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, step_id, item_key, n, seq),
    FOREIGN KEY (run_id) REFERENCES runs (id)
);

-- The dead-letter queue of map steps (SPEC section 12).
CREATE TABLE dead_letters (
    run_id     TEXT COLLATE "C" NOT NULL,
    step_id    TEXT COLLATE "C" NOT NULL,
    item_key   TEXT COLLATE "C" NOT NULL,
    class      TEXT COLLATE "C" NOT NULL,
    error      TEXT    NOT NULL DEFAULT '',
    signature  TEXT COLLATE "C" NOT NULL,
    attempts   BIGINT  NOT NULL,
    first_at   TEXT COLLATE "C" NOT NULL,
    last_at    TEXT COLLATE "C" NOT NULL,
    dead_at    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, step_id, item_key),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
);
