-- Workflows as graphs (SPEC §16): the values a run was given for its
-- inputs (a JSON object; '' for a run of a workflow without inputs), and
-- a step's decision, committed once: its `when` evaluated (the expression,
-- its value and the values it read), or why it was skipped.
ALTER TABLE runs ADD COLUMN inputs_json TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN decision_json TEXT NOT NULL DEFAULT '';

-- A step may be skipped (SPEC §16.4). SQLite cannot alter a CHECK
-- constraint; this one only grows, which every existing row satisfies,
-- so the table's definition is edited in place as SQLite documents for
-- loosening a constraint (the runner bumps schema_version with it, so
-- that every connection reads the new definition).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'status        TEXT    NOT NULL CHECK (status IN (''pending'', ''running'', ''waiting'', ''succeeded'', ''failed''))',
    'status        TEXT    NOT NULL CHECK (status IN (''pending'', ''running'', ''waiting'', ''succeeded'', ''failed'', ''skipped''))')
WHERE type = 'table' AND name = 'steps';
PRAGMA writable_schema = OFF;

-- Input tokens served from a cache, part of input_tokens (which counts
-- all input, cached included, for every agent alike).
ALTER TABLE attempts ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
