-- Fallback agents (SPEC §17): an attempt may run on a fallback entry of
-- the step's agent, in a fresh session; such an attempt has kind
-- 'fallback', and every attempt records the agent entry that ran it
-- ('' on a row written before: the step's own agent).
ALTER TABLE attempts ADD COLUMN agent TEXT NOT NULL DEFAULT '';

-- SQLite cannot alter a CHECK constraint; this one only grows, which
-- every existing row satisfies, so the table's definition is edited in
-- place as 0012_graph.sql did (the runner bumps schema_version with it).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'kind           TEXT    NOT NULL CHECK (kind IN (''initial'', ''followup'', ''fresh'', ''help''))',
    'kind           TEXT    NOT NULL CHECK (kind IN (''initial'', ''followup'', ''fresh'', ''help'', ''fallback''))')
WHERE type = 'table' AND name = 'attempts';
PRAGMA writable_schema = OFF;
