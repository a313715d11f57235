-- 0006_graph: the same columns as SQLite's 0012_graph.sql; see there.
ALTER TABLE runs ADD COLUMN inputs_json TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN decision_json TEXT NOT NULL DEFAULT '';
ALTER TABLE steps DROP CONSTRAINT steps_status_check;
ALTER TABLE steps ADD CONSTRAINT steps_status_check
    CHECK (status IN ('pending', 'running', 'waiting', 'succeeded', 'failed', 'skipped'));
ALTER TABLE attempts ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0;
