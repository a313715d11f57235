-- A run belongs to a project, and may be cancelled (issue 33).
--
-- Projects. Several projects may share one
-- state (a PostgreSQL database, or one SQLite file named by --state):
-- every command reads, answers, sends and changes only the rows of its
-- own project, named by the id in the project's .cadence/project file.
-- The rows a run owns (steps, attempts, approvals, deliveries, dead
-- letters, leases…) belong to the project of their run; the breakers,
-- shared by the runs of a project, carry the project themselves.
--
-- Rows written before projects existed have project '': the first
-- process of a project that opens the state for writing adopts them
-- (checkpoint.Store.SetProject), so that an upgraded state of one project
-- keeps working.
ALTER TABLE runs ADD COLUMN project TEXT NOT NULL DEFAULT '';

CREATE INDEX runs_project ON runs (project, started_at, id);
-- The project's unfinished runs, read on every resume and worker poll.
CREATE INDEX runs_project_unfinished ON runs (project, started_at, id)
    WHERE status IN ('running', 'interrupted');
-- Every query of runs that names no run names the project: the indexes
-- without it are no longer read.
DROP INDEX runs_started;
DROP INDEX runs_unfinished;

-- One breaker per agent name of each project. SQLite cannot change a
-- primary key, so the table is rebuilt (nothing references it), its
-- columns in PostgreSQL's order (there the column is added last).
CREATE TABLE circuits_new (
    agent       TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    failures    INTEGER NOT NULL DEFAULT 0,
    generation  INTEGER NOT NULL DEFAULT 0,
    opened_at   TEXT,
    open_until  TEXT,
    trials      INTEGER NOT NULL DEFAULT 0,
    successes   INTEGER NOT NULL DEFAULT 0,
    updated_at  TEXT    NOT NULL,
    config_hash TEXT    NOT NULL DEFAULT '',
    project     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (project, agent)
) STRICT;
INSERT INTO circuits_new (agent, state, failures, generation, opened_at, open_until, trials, successes,
    updated_at, config_hash, project)
SELECT agent, state, failures, generation, opened_at, open_until, trials, successes, updated_at, config_hash, ''
FROM circuits;
DROP TABLE circuits;
ALTER TABLE circuits_new RENAME TO circuits;

-- The audit log's project-wide entries (those of no run, such as a
-- breaker's reset) are their project's too.
ALTER TABLE events ADD COLUMN project TEXT NOT NULL DEFAULT '';

-- cadence cancel ends an unfinished run for good: status 'cancelled', a
-- finished status that no resume continues. The CHECK only grows, which
-- every row satisfies, so the definition is edited in place as
-- 0012_graph.sql does for steps (the runner bumps schema_version).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'status          TEXT NOT NULL CHECK (status IN (''running'', ''succeeded'', ''failed'', ''interrupted'', ''abandoned''))',
    'status          TEXT NOT NULL CHECK (status IN (''running'', ''succeeded'', ''failed'', ''interrupted'', ''abandoned'', ''cancelled''))')
WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = OFF;
