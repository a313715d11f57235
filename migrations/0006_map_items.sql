-- Map steps (SPEC section 12): a map step runs once per work item, and each
-- item has the whole state of a step of its own (attempts, session,
-- backoff, help rounds, usage). An item's state is a row of steps with a
-- non-empty item_key beside the map step's own row (item_key ''), so every
-- rule that guards a step's state guards an item's, and an item's attempts
-- are rows of attempts with its key. item_idx keeps the order of the items
-- as they were frozen when the step started, from 1 (a step's own row has
-- 0); item_json is the item itself.
--
-- SQLite cannot change a primary key in place: the three tables that hold
-- the step key are rebuilt. The children are dropped before their parent so
-- no foreign key is ever violated, and renaming a table rewrites the
-- references to it.

CREATE TABLE steps_new (
    run_id        TEXT    NOT NULL REFERENCES runs (id),
    step_id       TEXT    NOT NULL,
    item_key      TEXT    NOT NULL DEFAULT '',
    idx           INTEGER NOT NULL,
    item_idx      INTEGER NOT NULL DEFAULT 0,
    item_json     TEXT,
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
    PRIMARY KEY (run_id, step_id, item_key)
) STRICT;

INSERT INTO steps_new (run_id, step_id, item_key, idx, item_idx, item_json, agent, status, max_attempts,
    next_retry_at, delay_ms, session_id, fresh_session, handoff_json, help_rounds, advice, cost_usd,
    cost_known, turns, input_tokens, output_tokens, updated_at)
SELECT run_id, step_id, '', idx, 0, NULL, agent, status, max_attempts,
    next_retry_at, delay_ms, session_id, fresh_session, handoff_json, help_rounds, advice, cost_usd,
    cost_known, turns, input_tokens, output_tokens, updated_at
FROM steps;

CREATE TABLE attempts_new (
    run_id         TEXT    NOT NULL,
    step_id        TEXT    NOT NULL,
    item_key       TEXT    NOT NULL DEFAULT '',
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
    uncounted      INTEGER NOT NULL DEFAULT 0 CHECK (uncounted IN (0, 1)),
    PRIMARY KEY (run_id, step_id, item_key, n),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps_new (run_id, step_id, item_key)
) STRICT;

INSERT INTO attempts_new (run_id, step_id, item_key, n, kind, status, class, error, details_json, prompt,
    started_at, finished_at, pid, exit_code, session_id, circuit_gen, delay_ms, next_retry_at,
    retry_after_ms, repairs_json, output_file, failed_handoff, cost_usd, turns, input_tokens,
    output_tokens, help_context, uncounted)
SELECT run_id, step_id, '', n, kind, status, class, error, details_json, prompt,
    started_at, finished_at, pid, exit_code, session_id, circuit_gen, delay_ms, next_retry_at,
    retry_after_ms, repairs_json, output_file, failed_handoff, cost_usd, turns, input_tokens,
    output_tokens, help_context, uncounted
FROM attempts;

CREATE TABLE session_messages_new (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT    NOT NULL,
    step_id    TEXT    NOT NULL,
    item_key   TEXT    NOT NULL DEFAULT '',
    attempt    INTEGER NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content    TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps_new (run_id, step_id, item_key)
) STRICT;

INSERT INTO session_messages_new (session_id, seq, run_id, step_id, item_key, attempt, role, content, created_at)
SELECT session_id, seq, run_id, step_id, '', attempt, role, content, created_at FROM session_messages;

DROP TABLE session_messages;
DROP TABLE attempts;
DROP TABLE steps;
ALTER TABLE steps_new RENAME TO steps;
ALTER TABLE attempts_new RENAME TO attempts;
ALTER TABLE session_messages_new RENAME TO session_messages;

-- A run's steps in workflow order; a map step's items in their order.
CREATE UNIQUE INDEX steps_order ON steps (run_id, idx) WHERE item_key = '';
CREATE UNIQUE INDEX items_order ON steps (run_id, step_id, item_idx) WHERE item_key <> '';
-- Every unit of a run in order, each step followed by its items: the walk
-- of a run's whole history (inspect) follows it without sorting.
CREATE UNIQUE INDEX units_order ON steps (run_id, idx, item_idx);

-- As in 0004, with the item key: the attempts resume settles first.
CREATE INDEX attempts_running ON attempts (run_id, step_id, item_key, n)
    WHERE status = 'running';

-- The dead-letter queue: the items of a map step that exhausted their
-- attempts or failed with a class that is not retried. A row is removed
-- when `cadence dlq retry` reopens the item; its attempts stay.
CREATE TABLE dead_letters (
    run_id     TEXT    NOT NULL,
    step_id    TEXT    NOT NULL,
    item_key   TEXT    NOT NULL,
    class      TEXT    NOT NULL,
    error      TEXT    NOT NULL DEFAULT '',
    signature  TEXT    NOT NULL,
    attempts   INTEGER NOT NULL,
    first_at   TEXT    NOT NULL,
    last_at    TEXT    NOT NULL,
    dead_at    TEXT    NOT NULL,
    PRIMARY KEY (run_id, step_id, item_key),
    FOREIGN KEY (run_id, step_id, item_key) REFERENCES steps (run_id, step_id, item_key)
) STRICT;
