-- 0012_attempt_snapshot: the same columns as SQLite's
-- 0018_attempt_snapshot.sql; see there.
ALTER TABLE attempts ADD COLUMN snapshot TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN snapshot_after TEXT NOT NULL DEFAULT '';
