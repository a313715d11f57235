-- 0011_attempt_provenance: the same column as SQLite's
-- 0017_attempt_provenance.sql; see there.
ALTER TABLE attempts ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
